// The engine's egress budget: the same bytes per second the host's shaper
// enforces (EngineConfig::egress_bytes_per_sec), planned here across the
// engine's classes, so that what the engine sends fits the budget and the
// shaper is a backstop. Without the plan the engine sent what the protocol
// wanted (gossip rounds and acks filled to a whole datagram, whole views to
// every joiner) and the shaper queued it: at 3 kB/s and 2,000 members the
// queue filled with urgent datagrams, probe acks waited behind them past
// their timeout, and each missed ack made more deaths to gossip.
//
// The plan, in order:
//   1. probes and urgent news (pings, acks, indirect probes, nacks; deaths,
//      leaves, refutations, corrections) always go, and are charged;
//   2. gossip (rounds and the news piggybacked on probes) spends what the
//      interactive share holds above a reserve: what probes and urgent news
//      took in the last second, so that they find room in the next one;
//   3. syncs (bulk) have a share of their own, and one starts only when that
//      share is not in debt; its size is capped at what the share sends in a
//      sync timeout, so that every part arrives before the peer gives up.
// A tight budget therefore slows gossip and syncs (fewer, smaller datagrams;
// news waits in the broadcast queue, in its order), never probes or urgent
// news, and the shaper's queue stays short. docs/membership.md, "The budget
// law", derives the join and detection bounds from it.
#pragma once

#include <algorithm>
#include <cstdint>

namespace gw::cp::engine {

class EgressBudget {
 public:
  // What a sealed datagram adds to the codec bytes the engine estimates: the
  // gateway header and the AEAD tag (crypto/wire_header.h), as the shaper
  // charges them.
  static constexpr std::uint64_t kDatagramOverheadBytes = 48 + 16;
  // Of the budget, the share that syncs (bulk) have for their own (1/kBulkShare).
  static constexpr std::uint64_t kBulkShare = 4;
  // A gossip datagram smaller than this is not worth its header.
  static constexpr std::uint64_t kMinGossipBytes = 256;

  // `bytes_per_sec` 0: unlimited (every question says yes).
  EgressBudget(std::uint64_t bytes_per_sec, std::uint64_t sync_timeout_ns, std::uint64_t now_ns)
      : rate_(bytes_per_sec),
        sync_timeout_ns_(sync_timeout_ns),
        tokens_(static_cast<std::int64_t>(interactive_rate())),
        bulk_tokens_(static_cast<std::int64_t>(bulk_rate())),
        last_ns_(now_ns),
        window_start_ns_(now_ns) {}

  bool unlimited() const noexcept { return rate_ == 0; }
  std::uint64_t bytes_per_sec() const noexcept { return rate_; }

  // Adds what the shares earned since the last refill (each at most one
  // second's worth deep: an idle member does not save up for a burst).
  void refill(std::uint64_t now_ns) noexcept {
    if (unlimited() || now_ns <= last_ns_) return;
    const std::uint64_t dt = now_ns - last_ns_;
    tokens_ = std::min(tokens_ + earned(interactive_rate(), dt, carry_), static_cast<std::int64_t>(interactive_rate()));
    bulk_tokens_ = std::min(bulk_tokens_ + earned(bulk_rate(), dt, bulk_carry_), static_cast<std::int64_t>(bulk_rate()));
    last_ns_ = now_ns;
    // The reserve: what probes and urgent news took over the last second.
    if (now_ns - window_start_ns_ >= kSecond) {
      reserve_ = (reserve_ + window_essential_) / 2;
      window_essential_ = 0;
      window_start_ns_ = now_ns;
    }
  }

  // ---- charges: every datagram the engine sends, by what it is ----
  // Probes and urgent news: always sent.
  void charge_essential(std::uint64_t bytes) noexcept {
    if (unlimited()) return;
    tokens_ -= static_cast<std::int64_t>(bytes);
    window_essential_ += bytes;
  }
  void charge_gossip(std::uint64_t bytes) noexcept {
    if (!unlimited()) tokens_ -= static_cast<std::int64_t>(bytes);
  }
  void charge_bulk(std::uint64_t bytes) noexcept {
    if (!unlimited()) bulk_tokens_ -= static_cast<std::int64_t>(bytes);
  }

  // ---- questions ----
  // Bytes of gossip (a round's datagram, news piggybacked on a probe) that
  // may go now; UINT64_MAX when unlimited.
  std::uint64_t gossip_room() const noexcept {
    if (unlimited()) return UINT64_MAX;
    const std::int64_t room = tokens_ - static_cast<std::int64_t>(std::min<std::uint64_t>(reserve_, interactive_rate() / 2));
    return room > 0 ? static_cast<std::uint64_t>(room) : 0;
  }
  // Whether a sync (ours, or an answer to a peer's) may start now.
  bool bulk_ready() const noexcept { return unlimited() || bulk_tokens_ >= 0; }
  // The most bytes one sync may send: what the bulk share sends in a sync
  // timeout (the peer drops parts that come later); UINT64_MAX when unlimited.
  std::uint64_t sync_cap() const noexcept {
    if (unlimited()) return UINT64_MAX;
    return bulk_rate() * (sync_timeout_ns_ / kMillisecond) / 1000;
  }
  // The reserve for probes and urgent news, in bytes (for tests and counters).
  std::uint64_t reserve() const noexcept { return reserve_; }

 private:
  static constexpr std::uint64_t kMillisecond = 1'000'000ULL;
  static constexpr std::uint64_t kSecond = 1'000 * kMillisecond;

  std::uint64_t bulk_rate() const noexcept { return rate_ / kBulkShare; }
  std::uint64_t interactive_rate() const noexcept { return rate_ - bulk_rate(); }
  // Whole bytes earned over dt at `rate`, the fraction carried to the next
  // refill: whole seconds and the rest apart, so that rate * dt stays within
  // 64 bits for any rate the config allows (up to 10^10 B/s). An hour earns
  // no more than an hour's debt could need.
  static std::int64_t earned(std::uint64_t rate, std::uint64_t dt, std::uint64_t& carry) noexcept {
    const std::uint64_t seconds = std::min<std::uint64_t>(dt / kSecond, 3600);
    const std::uint64_t rest = rate * (dt % kSecond) + carry;
    carry = rest % kSecond;
    return static_cast<std::int64_t>(rate * seconds + rest / kSecond);
  }

  std::uint64_t rate_;
  std::uint64_t sync_timeout_ns_;
  std::int64_t tokens_;       // the interactive share: probes, urgent news, gossip (may be in debt)
  std::int64_t bulk_tokens_;  // the bulk share: syncs (may be in debt)
  std::uint64_t carry_ = 0;
  std::uint64_t bulk_carry_ = 0;
  std::uint64_t last_ns_;
  std::uint64_t reserve_ = 0;
  std::uint64_t window_essential_ = 0;
  std::uint64_t window_start_ns_;
};

}  // namespace gw::cp::engine
