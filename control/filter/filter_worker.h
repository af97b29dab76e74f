// One filter-mode worker (`mode: memberlist`, issue 54): queue q of the NIC
// and queue q of the agent's port (net_tap or virtio_user), one
// ml::FilterLcore, its counters. The loop:
//
//   adopt the newest keyring (between bursts, wait-free)
//   rx NIC burst   -> FilterLcore::inbound per frame  -> kToAgent/kPassIn to the agent's tx queue, the rest freed
//   rx agent burst -> FilterLcore::outbound per frame -> kToNetwork to the NIC's tx queue, the rest freed
//   nothing received on either: idle back-off, idle-exit accounting
//
// Frames are forwarded unchanged (the same mbuf). What a tx queue does not
// take is freed and counted (tx_full per direction). A multi-segment frame
// is dropped and counted in either direction: the filter reads a frame as
// one contiguous buffer, and neither port is set up to scatter (a frame
// larger than one 2 KiB mbuf never arrives at MTU 1500).
// Nothing on the loop allocates, locks, throws or logs.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include <rte_mbuf.h>

#include "dataplane/memberlist/filter.h"
#include "dataplane/memberlist/keyring.h"

namespace gw::cp::filter {

namespace ml = dp::ml;

inline constexpr std::uint16_t kMaxFilterBurst = 512;

// Direction of a frame through the gateway.
enum class Direction : std::uint8_t { kIn, kOut };  // NIC -> agent, agent -> NIC

// The loop's own counters (the verdicts are FilterLcore's). Written only by
// the worker; the control lcore reads them live (aligned 64-bit words).
struct FilterIoCounters {
  std::uint64_t rx_from_network = 0;    // frames received on the NIC
  std::uint64_t rx_from_agent = 0;      // frames received from the agent's port
  std::uint64_t tx_to_agent = 0;        // frames the agent port's tx queue took
  std::uint64_t tx_to_network = 0;      // frames the NIC's tx queue took
  std::uint64_t tx_full_to_agent = 0;   // forwarded but not taken by the agent port's tx queue: freed
  std::uint64_t tx_full_to_network = 0; // forwarded but not taken by the NIC's tx queue: freed
  std::uint64_t multi_segment_in = 0;   // dropped: a chained frame from the NIC
  std::uint64_t multi_segment_out = 0;  // dropped: a chained frame from the agent
  std::uint64_t rx_bursts = 0;          // loop turns that received something
  std::uint64_t idle_polls = 0;         // loop turns that received nothing
};

struct alignas(64) FilterWorker {
  unsigned lcore = 0;
  std::uint16_t nic_port = 0;
  std::uint16_t agent_port = 0;
  std::uint16_t queue = 0;  // the same queue index on both ports
  std::uint16_t burst = 32;
  std::uint32_t idle_backoff_us = 0;
  // Report `idle` after this many TSC cycles without a frame on either port
  // (0: never), for --idle-exit-ms.
  std::uint64_t idle_exit_tsc = 0;
  ml::KeyringExchange* keys = nullptr;
  std::size_t reader = 0;  // this worker's slot in `keys`
  const std::atomic<bool>* stop = nullptr;
  std::atomic<bool> idle{false};
  std::atomic<bool> done{false};
  std::unique_ptr<ml::FilterLcore> filter;  // built on the control lcore before launch
  FilterIoCounters io;
};

// Runs on the worker's lcore until *stop; sets `done` last. Fits rte_eal_remote_launch.
int run_filter_worker(void* worker);

// One inbound burst from the NIC: filtered, forwarded, freed. Exposed for
// tests; run_filter_worker calls it.
void filter_inbound_burst(FilterWorker& w, rte_mbuf** pkts, std::uint16_t n, const ml::Keyring* keys,
                          std::uint64_t now_ns) noexcept;
// One outbound burst from the agent.
void filter_outbound_burst(FilterWorker& w, rte_mbuf** pkts, std::uint16_t n, std::uint64_t now_ns) noexcept;

}  // namespace gw::cp::filter
