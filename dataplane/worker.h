// One dataplane worker: an rx queue, its ladder snapshot, its rings to the
// control lcore, its counters. Everything the loop touches is in this struct.
#pragma once

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <array>
#include <atomic>
#include <cstdint>

#include "crypto/wire_header.h"
#include "dataplane/api/counters.h"
#include "dataplane/ladder.h"

namespace gw::dp {

inline constexpr std::uint16_t kMaxBurst = 512;
// Packets ahead of the one being checked whose first cache line (Ethernet,
// IP, UDP and the start of the gossipgw header) is prefetched.
inline constexpr std::uint16_t kPrefetchAhead = 4;

struct alignas(64) WorkerContext {
  unsigned lcore = 0;
  std::uint16_t port = 0;
  std::uint16_t queue = 0;
  std::uint16_t burst = 32;
  std::uint32_t idle_backoff_us = 0;
  // Stop after this many TSC cycles without a packet (0: never). For inputs
  // that end, such as a pcap file.
  std::uint64_t idle_exit_tsc = 0;
  LadderConfig ladder;
  std::array<rte_ring*, crypto::kClassCount> rings{};
  const std::atomic<bool>* stop = nullptr;
  std::atomic<bool> done{false};
  WorkerCounters counters;
};

// Runs on the worker's lcore until *stop or the idle-exit time passes; sets
// `done` last. Signature fits rte_eal_remote_launch.
int run_worker(void* context);

// Applies the ladder to one burst and hands accepted payloads to the rings.
// Exposed for tests; run_worker calls it.
void process_burst(WorkerContext& w, rte_mbuf** pkts, std::uint16_t n) noexcept;

}  // namespace gw::dp
