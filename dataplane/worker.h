// One dataplane worker: an rx queue, its ladder snapshot, its rings to the
// control lcore, its counters. Everything the loop touches is in this struct.
#pragma once

#include <rte_mbuf.h>

#include <array>
#include <atomic>
#include <cstdint>

#include "crypto/wire_header.h"
#include "dataplane/api/counters.h"
#include "dataplane/api/snapshot.h"
#include "dataplane/api/unknown_keys.h"
#include "dataplane/guard.h"
#include "dataplane/ladder.h"
#include "dataplane/payload_ring.h"
#include "dataplane/tx_path.h"

namespace gw::dp {

inline constexpr std::uint16_t kMaxBurst = 512;

// What a burst keeps between the passes of process_burst, kept per lcore so
// no burst constructs it.
struct BurstScratch {
  std::array<LadderFront, kMaxBurst> keyed;  // packets waiting for their header MAC
};

struct alignas(64) WorkerContext {
  unsigned lcore = 0;
  std::uint16_t port = 0;
  std::uint16_t queue = 0;
  std::uint16_t burst = 32;
  std::uint32_t idle_backoff_us = 0;
  // Report `idle` after this many TSC cycles without a packet (0: never), so
  // the control lcore can end a run whose input ends, such as a pcap file.
  std::uint64_t idle_exit_tsc = 0;
  LadderConfig ladder;  // ladder.keys points at `keys`, this lcore's copy of the adopted snapshot's
  // Where the control plane publishes keys and known members; adopted between
  // bursts. Null in tests that set ladder.keys themselves.
  SnapshotExchange* snapshots = nullptr;
  std::size_t worker_index = 0;  // this worker's reader slot in `snapshots`
  const DataplaneSnapshot* snapshot = nullptr;
  // This lcore's own copy of the snapshot's keyring (issue 19): the expanded
  // AES-256-GCM keys are read from worker-local memory, copied once per new
  // snapshot (between bursts), and a removed key's material is overwritten
  // here by the next copy (the snapshot's own copy is wiped when retired).
  crypto::Keyring keys;
  std::array<PayloadRing*, crypto::kClassCount> rings{};  // to the control lcore, per class
  const std::atomic<bool>* stop = nullptr;                // set by the control lcore
  // Set by the control lcore while the port's link is down (a memif peer
  // that went away): the worker leaves the driver's queues alone until then.
  const std::atomic<bool>* link_down = nullptr;
  std::atomic<bool> idle{false};
  std::atomic<bool> done{false};
  WorkerCounters counters;
  // Who sends under key ids we lack: a few distinct (key id, source) for
  // the control lcore to name (dataplane/api/unknown_keys.h).
  UnknownKeySample unknown_keys;
  // Replay windows, token buckets, classifier scratch and the clock they
  // read (setup_guard() at start; without it those steps are skipped).
  LcoreGuard guard;
  TxContext tx;  // tx.ring is null on workers that do not transmit
  BurstScratch scratch;
};

// Runs on the worker's lcore until *stop, then sends what is still queued for
// transmit and sets `done` last. Signature fits rte_eal_remote_launch.
int run_worker(void* context);

// Between bursts: takes the newest keys and known members from `snapshots`.
void adopt_snapshot(WorkerContext& w) noexcept;

// Applies the ladder to one burst and hands accepted payloads to the rings.
// Exposed for tests; run_worker calls it.
void process_burst(WorkerContext& w, rte_mbuf** pkts, std::uint16_t n) noexcept;

}  // namespace gw::dp
