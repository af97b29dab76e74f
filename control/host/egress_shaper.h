// The egress shaper: every datagram the control plane sends passes a token
// bucket of bytes per second, so gossip never takes more of the network than
// its budget, whatever the protocol wants. When the budget is short the
// lowest classes wait first: queues are served urgent, probe, gossip, bulk in
// strict order, and when the queue bound is reached the lowest class queued
// is dropped first. Pure (no DPDK): the clock is passed in.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "config/config.h"
#include "crypto/wire_header.h"
#include "dataplane/api/handoff.h"

namespace gw::cp {

// Defaults: the config's (membership.egress_*), written once there.
struct ShaperConfig {
  // Sustained budget in bytes per second of sealed datagrams (headers of
  // Ethernet/IP/UDP not included). 0: unlimited.
  std::uint64_t bytes_per_sec = config::MembershipConfig{}.egress_bytes_per_sec;
  // Bytes that may go out at once after an idle period.
  std::uint64_t burst_bytes = config::MembershipConfig{}.egress_burst_bytes;
  // Bytes that may wait; beyond it the lowest class queued is dropped.
  std::uint64_t queue_bytes = config::MembershipConfig{}.egress_queue_bytes;
};

struct ShaperClassCounters {
  std::uint64_t sent = 0;  // datagrams handed to the transmit path
  std::uint64_t sent_bytes = 0;
  std::uint64_t deferred = 0;   // datagrams that had to wait (for budget or for higher classes)
  std::uint64_t dropped = 0;    // evicted or refused for want of queue space
  std::uint64_t refused = 0;    // the transmit path refused them (see tx_queue)
  std::uint64_t depth = 0;      // datagrams waiting now
  std::uint64_t depth_max = 0;  // most ever waiting
};

class EgressShaper {
 public:
  EgressShaper(ShaperConfig config, dp::DatagramSink& sink, std::uint64_t now_ns);

  // Control lcore only. Queues a datagram and sends what the budget allows.
  // False if it was dropped for want of queue space.
  bool submit(const dp::Endpoint& to, crypto::PriorityClass cls, const std::uint8_t* data, std::size_t len,
              std::uint64_t now_ns);
  // Control lcore only. Sends queued datagrams as the budget refills.
  void release(std::uint64_t now_ns);

  std::size_t queued(crypto::PriorityClass cls) const { return queues_[static_cast<std::size_t>(cls)].size(); }
  std::uint64_t queued_bytes() const noexcept { return queued_bytes_; }
  const std::array<ShaperClassCounters, crypto::kClassCount>& counters() const noexcept { return counters_; }

 private:
  struct Pending {
    dp::Endpoint to;
    std::vector<std::uint8_t> bytes;
  };

  void refill(std::uint64_t now_ns);
  bool make_room(std::size_t cls, std::size_t len);

  ShaperConfig config_;
  dp::DatagramSink& sink_;
  // Not dataplane/api/token_bucket.h: bytes as a double; a datagram over the burst goes once the bucket is full.
  double tokens_;
  std::uint64_t last_ns_;
  std::uint64_t queued_bytes_ = 0;
  std::array<std::deque<Pending>, crypto::kClassCount> queues_;
  std::array<ShaperClassCounters, crypto::kClassCount> counters_{};
};

}  // namespace gw::cp
