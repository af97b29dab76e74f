// Filter mode's composition root (`mode: memberlist`, issue 54): the gateway
// stands between the NIC and an unchanged memberlist agent (Serf, Consul,
// Nomad) on the same host, reached through a kernel exception port (net_tap
// or virtio_user) the operator names in the EAL arguments. main.cc calls:
//
//   load_filter_startup()  before EAL: the config's memberlist section turned
//                          into the filter's config, the keyring file loaded
//                          and checked (a bad file never starts EAL);
//   run_filter()           after EAL: both ports, one FilterWorker per
//                          lcores.workers entry, and the control loop (keyring
//                          file watch and SIGHUP, counters, metrics) until a
//                          stop; then --stats-json.
//
// docs/filter-mode.md, "Running it", says how to run it and lists the counters.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "control/filter/keyring_watch.h"
#include "control/gateway/metric_family.h"
#include "dataplane/memberlist/filter.h"
#include "dataplane/memberlist/keyring.h"

namespace gw::cp::filter {

// What was read and checked before EAL started. Held by pointer: `filter`
// refers into `cfg` (the label), so neither may move.
struct FilterStartup {
  config::Config cfg;
  std::string config_path;
  std::uint32_t started_unix_s = 0;
  std::unique_ptr<dp::ml::FilterConfig> filter;
  std::unique_ptr<dp::ml::Keyring> keyring;  // the first one; empty: a plaintext cluster
  FileStamp keyring_stamp;                   // of the file it was read from
};

// The config's `mode:` is memberlist.
bool filter_mode(const config::Config& cfg);

// Throws std::exception with a one-line message (exit status 2).
std::unique_ptr<FilterStartup> load_filter_startup(config::Config cfg, const std::string& config_path);

// A memberlist keyring file as a Keyring; nullptr and `error` if it cannot be
// read. Any thread but a worker's (it allocates).
std::unique_ptr<dp::ml::Keyring> load_keyring_file(const std::string& path, std::string* error);

// The command line's options after "--" that filter mode takes.
struct FilterRunOptions {
  std::string stats_json;          // written on the way out (empty: not)
  std::uint32_t idle_exit_ms = 0;  // stop once both ports were idle this long (0: never)
};

struct FilterServices {
  std::atomic<bool>* stop_requested = nullptr;    // SIGINT, SIGTERM
  std::atomic<bool>* reload_requested = nullptr;  // SIGHUP: read the keyring file now
  // Publishes the counters to the exporters (Prometheus, DPDK telemetry);
  // empty: neither is configured.
  std::function<void(std::vector<MetricFamily>, std::uint64_t unix_ms)> publish;
};

// Runs until a stop and returns the exit status (0, or 1 when --stats-json
// cannot be written); throws dp::SetupError (exit status 2) for what makes
// starting impossible (an lcore not enabled, a missing port, a port that
// cannot take the queues); whatever was set up by then is released.
int run_filter(FilterStartup& s, const FilterRunOptions& o, const FilterServices& svc);

}  // namespace gw::cp::filter
