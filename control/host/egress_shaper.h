// The egress shaper: every datagram the control plane sends passes a token
// bucket of bytes per second, so gossip never takes more of the network than
// its budget, whatever the protocol wants. When the budget is short the
// lowest classes wait first: queues are served urgent, probe, gossip, bulk in
// strict order, and when the queue bound is reached the lowest class queued
// is dropped first. A datagram also waits at most max_age_ns: older ones are
// dropped (counted as expired), so the queue is bounded in time as well as in
// bytes (at a tight budget a 4 MiB queue is a delay line of many minutes, and
// what comes out of it is stale: acks long after their probe, news long
// superseded). The engine sizes what it sends to the same budget
// (EngineConfig::egress_bytes_per_sec), so the shaper is a backstop. Pure (no
// DPDK): the clock is passed in.
//
// The shaper owns its queue, and what a datagram is stays the caller's: it
// queues an opaque, movable payload with the datagram's size in bytes (the
// gateway's sealed buffer, the simulator's messages) and hands the payload
// back through the caller's sink when the budget lets the datagram out. It
// also says when that will next be (next_release_ns), so a host that sleeps
// knows when to call release() again.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>

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
  // How long a datagram may wait; an older one is dropped (expired). 0: no limit.
  std::uint64_t max_age_ns = std::uint64_t{config::MembershipConfig{}.egress_max_age_ms} * 1'000'000ULL;
};

struct ShaperClassCounters {
  std::uint64_t sent = 0;  // datagrams handed to the transmit path
  std::uint64_t sent_bytes = 0;
  std::uint64_t deferred = 0;   // datagrams that had to wait (for budget or for higher classes)
  std::uint64_t dropped = 0;    // evicted or refused for want of queue space
  std::uint64_t expired = 0;    // waited longer than max_age_ns: dropped
  std::uint64_t refused = 0;    // the transmit path refused them (see tx_queue)
  std::uint64_t depth = 0;      // datagrams waiting now
  std::uint64_t depth_max = 0;  // most ever waiting
};

// The shaper's byte budget: a token bucket of bytes as a double (not
// base/token_bucket.h, which counts whole tokens), so that a datagram larger
// than the burst goes once the bucket is full, and leaves a debt.
class ShaperBudget {
 public:
  ShaperBudget(const ShaperConfig& config, std::uint64_t now_ns);

  bool unlimited() const noexcept { return bytes_per_sec_ == 0; }
  // Adds what the rate earned since the last refill, up to the burst.
  void refill(std::uint64_t now_ns) noexcept;
  // Whether a datagram of `bytes` may go, as of the last refill.
  bool affords(std::size_t bytes) const noexcept;
  void spend(std::size_t bytes) noexcept;
  // The first time at or after `now_ns` at which a datagram of `bytes` is
  // affordable (now_ns if it already is). Changes nothing.
  std::uint64_t affordable_at(std::size_t bytes, std::uint64_t now_ns) const noexcept;

 private:
  double need(std::size_t bytes) const noexcept;

  std::uint64_t bytes_per_sec_;
  double burst_;
  double tokens_;
  std::uint64_t last_ns_;
};

// Where the shaper lets datagrams out, and gives evicted ones back: the
// caller's, who knows what a payload is.
template <typename Payload>
class ShaperSink {
 public:
  virtual ~ShaperSink() = default;
  // Control lcore only. A datagram the budget lets out now, of `bytes`; the
  // payload is the sink's to move from. False if the transmit path refused it
  // (counted as refused).
  virtual bool send(const dp::Endpoint& to, crypto::PriorityClass cls, Payload& payload,
                    std::size_t bytes) noexcept = 0;
  // Control lcore only. A queued datagram evicted for want of queue space
  // (counted as dropped) or for its age (counted as expired): its payload
  // back, e.g. to reuse its buffer.
  virtual void evicted(crypto::PriorityClass cls, Payload& payload) noexcept {
    (void)cls;
    (void)payload;
  }
};

template <typename Payload>
class EgressShaper {
 public:
  static constexpr std::uint64_t kNever = UINT64_MAX;

  // `sink` must outlive the shaper.
  EgressShaper(ShaperConfig config, ShaperSink<Payload>& sink, std::uint64_t now_ns)
      : config_(config), sink_(sink), budget_(config, now_ns) {}

  // Control lcore only. Queues a datagram of `bytes` and sends what the
  // budget allows. False if it was dropped for want of queue space: then
  // `payload` was not taken (it is still the caller's).
  bool submit(const dp::Endpoint& to, crypto::PriorityClass cls, Payload&& payload, std::size_t bytes,
              std::uint64_t now_ns);
  // Control lcore only. Drops what waited longer than max_age_ns, then sends
  // queued datagrams as the budget refills.
  void release(std::uint64_t now_ns);
  // Control lcore only. When release() will next let a datagram out: the
  // first time the head datagram (the oldest of the highest class waiting)
  // is affordable, at least one ns past it so that rounding in the refill
  // cannot leave it short; `now_ns` if it already is; kNever when nothing
  // waits. Changes nothing.
  std::uint64_t next_release_ns(std::uint64_t now_ns) const noexcept;

  std::size_t queued(crypto::PriorityClass cls) const { return queues_[static_cast<std::size_t>(cls)].size(); }
  std::uint64_t queued_bytes() const noexcept { return queued_bytes_; }
  const std::array<ShaperClassCounters, crypto::kClassCount>& counters() const noexcept { return counters_; }

 private:
  struct Pending {
    dp::Endpoint to;
    std::size_t bytes = 0;
    std::uint64_t queued_ns = 0;
    Payload payload;
  };

  bool make_room(std::size_t cls, std::size_t bytes);
  // Drops every datagram that has waited longer than max_age_ns (each class
  // is in arrival order: its oldest are at the front).
  void expire(std::uint64_t now_ns);

  ShaperConfig config_;
  ShaperSink<Payload>& sink_;
  ShaperBudget budget_;
  std::uint64_t queued_bytes_ = 0;
  std::array<std::deque<Pending>, crypto::kClassCount> queues_;
  std::array<ShaperClassCounters, crypto::kClassCount> counters_{};
};

// Evicts the newest datagrams of classes below `cls`, lowest class first,
// until `bytes` more fit. False if they cannot be made to fit.
template <typename Payload>
bool EgressShaper<Payload>::make_room(std::size_t cls, std::size_t bytes) {
  for (std::size_t victim = crypto::kClassCount; victim-- > cls + 1;) {
    auto& q = queues_[victim];
    while (!q.empty() && queued_bytes_ + bytes > config_.queue_bytes) {
      Pending p = std::move(q.back());
      q.pop_back();
      queued_bytes_ -= p.bytes;
      ++counters_[victim].dropped;
      --counters_[victim].depth;
      sink_.evicted(static_cast<crypto::PriorityClass>(victim), p.payload);
    }
  }
  return queued_bytes_ + bytes <= config_.queue_bytes;
}

template <typename Payload>
bool EgressShaper<Payload>::submit(const dp::Endpoint& to, crypto::PriorityClass cls, Payload&& payload,
                                   std::size_t bytes, std::uint64_t now_ns) {
  const auto c = static_cast<std::size_t>(cls);
  expire(now_ns);
  if (queued_bytes_ + bytes > config_.queue_bytes && !make_room(c, bytes)) {
    ++counters_[c].dropped;  // nothing lower to give way: the newcomer waits no more
    return false;
  }
  budget_.refill(now_ns);
  // It goes at once only if nothing of its class or above is waiting and the
  // budget covers it; otherwise it is deferred (counted once, here).
  bool ahead = false;
  for (std::size_t h = 0; h <= c; ++h) ahead = ahead || !queues_[h].empty();
  if (ahead || !budget_.affords(bytes)) ++counters_[c].deferred;
  queues_[c].push_back(Pending{to, bytes, now_ns, std::move(payload)});
  queued_bytes_ += bytes;
  auto& k = counters_[c];
  k.depth_max = std::max(k.depth_max, ++k.depth);
  release(now_ns);
  return true;
}

template <typename Payload>
void EgressShaper<Payload>::expire(std::uint64_t now_ns) {
  if (config_.max_age_ns == 0 || queued_bytes_ == 0) return;
  for (std::size_t c = 0; c < crypto::kClassCount; ++c) {
    auto& q = queues_[c];
    while (!q.empty() && now_ns - std::min(now_ns, q.front().queued_ns) > config_.max_age_ns) {
      Pending p = std::move(q.front());
      q.pop_front();
      queued_bytes_ -= p.bytes;
      ++counters_[c].expired;
      --counters_[c].depth;
      sink_.evicted(static_cast<crypto::PriorityClass>(c), p.payload);
    }
  }
}

template <typename Payload>
void EgressShaper<Payload>::release(std::uint64_t now_ns) {
  expire(now_ns);
  budget_.refill(now_ns);
  for (std::size_t c = 0; c < crypto::kClassCount; ++c) {
    auto& q = queues_[c];
    auto& k = counters_[c];
    while (!q.empty()) {
      // Out of budget: this class and every lower one wait. A datagram larger
      // than the burst goes once the bucket is full, and leaves a debt.
      if (!budget_.affords(q.front().bytes)) return;
      Pending p = std::move(q.front());
      q.pop_front();
      budget_.spend(p.bytes);
      queued_bytes_ -= p.bytes;
      --k.depth;
      if (sink_.send(p.to, static_cast<crypto::PriorityClass>(c), p.payload, p.bytes)) {
        ++k.sent;
        k.sent_bytes += p.bytes;
      } else {
        ++k.refused;
      }
    }
  }
}

template <typename Payload>
std::uint64_t EgressShaper<Payload>::next_release_ns(std::uint64_t now_ns) const noexcept {
  for (const auto& q : queues_) {
    if (!q.empty()) return budget_.affordable_at(q.front().bytes, now_ns);
  }
  return kNever;
}

}  // namespace gw::cp
