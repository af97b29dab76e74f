// The process's own resources, as Prometheus client libraries export them
// (process_cpu_seconds_total, process_resident_memory_bytes, ...): read from
// /proc/self on the control lcore's housekeeping pass, never by a worker.
#pragma once

#include <cstdint>
#include <string>

namespace gw::cp {

struct ProcessGauges {
  std::uint64_t start_time_unix = 0;        // Unix seconds
  std::uint64_t cpu_us = 0;                 // user + system CPU time, microseconds
  std::uint64_t resident_memory_bytes = 0;  // RSS
  std::uint64_t virtual_memory_bytes = 0;
  std::uint64_t open_fds = 0;
  std::uint64_t max_fds = 0;  // RLIMIT_NOFILE's soft limit
};

// Reads /proc/self/stat, /proc/self/fd and RLIMIT_NOFILE into `g` (its
// start time is left as it is). `proc_self` is a test aid: another
// /proc/<pid>. Fields it cannot read stay 0; returns false if /proc/self/stat
// could not be read at all.
bool read_process_gauges(ProcessGauges& g, const std::string& proc_self = "/proc/self");

}  // namespace gw::cp
