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
#include "dataplane/tx_path.h"

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
  // Report `idle` after this many TSC cycles without a packet (0: never), so
  // the control lcore can end a run whose input ends, such as a pcap file.
  std::uint64_t idle_exit_tsc = 0;
  LadderConfig ladder;
  std::array<rte_ring*, crypto::kClassCount> rings{};
  const std::atomic<bool>* stop = nullptr;  // set by the control lcore
  std::atomic<bool> idle{false};
  std::atomic<bool> done{false};
  WorkerCounters counters;
  TxContext tx;  // tx.ring is null on workers that do not transmit
};

// Runs on the worker's lcore until *stop, then sends what is still queued for
// transmit and sets `done` last. Signature fits rte_eal_remote_launch.
int run_worker(void* context);

// Applies the ladder to one burst and hands accepted payloads to the rings.
// Exposed for tests; run_worker calls it.
void process_burst(WorkerContext& w, rte_mbuf** pkts, std::uint16_t n) noexcept;

}  // namespace gw::dp
