// Transmit: the control lcore queues sealed datagrams (DatagramSink); worker 0
// drains the ring, adds Ethernet/IP/UDP headers and sends them in bursts.
#pragma once

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <array>
#include <cstdint>

#include "dataplane/api/handoff.h"
#include "dataplane/ladder.h"
#include "dataplane/neighbors.h"

namespace gw::dp {

// Control-lcore side counters.
struct TxQueueCounters {
  std::uint64_t queued = 0;
  std::uint64_t drop_no_buffer = 0;
  std::uint64_t drop_ring_full = 0;
  std::uint64_t drop_too_large = 0;
  std::uint64_t drop_bad_endpoint = 0;
};

// Worker side counters.
struct TxCounters {
  std::uint64_t tx_packets = 0;
  std::uint64_t tx_bytes = 0;
  std::uint64_t tx_drop_nic = 0;           // the NIC queue refused them
  std::uint64_t tx_broadcast_unknown = 0;  // no learned MAC: sent to ff:ff:ff:ff:ff:ff
};

// Headers added in front of every datagram: Ethernet + IPv6 + UDP at most.
inline constexpr std::uint16_t kTxHeadroom = 14 + 40 + 8;

class TxQueue final : public DatagramSink {
 public:
  TxQueue(rte_mempool* pool, rte_ring* ring, bool ipv6) : pool_(pool), ring_(ring), ipv6_(ipv6) {}

  bool send(const Endpoint& to, crypto::PriorityClass cls, const std::uint8_t* datagram,
            std::size_t len) noexcept override;

  const TxQueueCounters& counters() const noexcept { return counters_; }

 private:
  rte_mempool* pool_;
  rte_ring* ring_;
  bool ipv6_;
  TxQueueCounters counters_;
};

// Worker side: what a worker needs to put headers on and transmit.
struct TxContext {
  rte_ring* ring = nullptr;  // null on workers that do not transmit
  std::array<std::uint8_t, 6> src_mac{};
  LocalEndpoint local;
  Neighbors neighbors;
  TxCounters counters;
};

// Worker lcore only. Drains up to `burst` queued datagrams and transmits them
// on (port, queue). Returns how many were taken off the ring.
unsigned drain_tx(TxContext& tx, std::uint16_t port, std::uint16_t queue, std::uint16_t burst) noexcept;

}  // namespace gw::dp
