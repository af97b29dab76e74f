// Per-worker dataplane counters. Each worker owns one, written only by that
// worker's lcore; others read it only after the worker has stopped (or, for
// live export, tolerate a torn view of a single counter).
#pragma once

#include <array>
#include <cstdint>

#include "dataplane/api/verdict.h"

namespace gw::dp {

struct alignas(64) WorkerCounters {
  std::uint64_t rx_total = 0;
  std::array<std::uint64_t, kVerdictCount> verdicts{};
  // Accepted packets by header priority class (urgent, probe, gossip, bulk).
  std::array<std::uint64_t, 4> accepted_by_class{};
  std::uint64_t rx_bursts = 0;
  std::uint64_t idle_polls = 0;

  void count(Verdict v) noexcept { ++verdicts[static_cast<std::size_t>(v)]; }
  std::uint64_t get(Verdict v) const noexcept { return verdicts[static_cast<std::size_t>(v)]; }
};

}  // namespace gw::dp
