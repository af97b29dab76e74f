// Per-source token buckets, step 7 of the ladder, in a bounded per-lcore
// table keyed by source IP address.
//
// Checked (read-only) for packets that passed the header MAC and the replay
// pre-check, and charged only for packets whose AEAD then opened, so only
// key holders can spend a bucket: a sniffed header on a tampered payload,
// sent from a member's address, costs the member nothing. Members the control plane knows get their own, larger budget;
// the budget is chosen at every charge, so a source that becomes known is
// upgraded on its next packet. A full set evicts its least recently used
// bucket (counted); an evicted source starts again with a full bucket, so
// the table bounds memory, not fairness, and should be sized above the
// number of members one lcore hears from.
//
// Time is injected (`now_ns`, any monotonic nanosecond clock): the worker
// reads its TSC once per burst, tests pass a fake. Pure: no DPDK, no
// allocation after construction, no locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "dataplane/api/snapshot.h"
#include "dataplane/api/token_bucket.h"
#include "dataplane/hash.h"
#include "dataplane/huge_area.h"

namespace gw::dp {

struct RateBudget {
  std::uint64_t rate_pps = 1;  // sustained packets per second, >= 1
  std::uint64_t burst = 1;     // bucket depth in packets, >= 1
};

class RateLimiter {
 public:
  static constexpr std::size_t kWays = 4;
  // Tokens are kept in nanopackets so refill is exact integer arithmetic
  // (dataplane/api/token_bucket.h, on each entry's state).
  static constexpr std::uint64_t kScale = token_bucket::kScale;

  // At least `capacity` buckets (rounded up to a power of two, minimum
  // kWays). `seed` keys the set hash (random per lcore in the gateway).
  RateLimiter(std::size_t capacity, RateBudget known, RateBudget unknown, std::uint64_t seed = 0);

  // Takes one packet from `src`'s bucket at time `now_ns`; false (and
  // nothing taken) if the bucket is empty.
  bool charge(const SourceAddress& src, bool known, std::uint64_t now_ns) noexcept;
  // Whether charge() would succeed now, changing nothing: the ladder asks
  // before the AEAD and charges only after it succeeded, so a packet that
  // fails the AEAD spends no token of the source it claims (issue 17).
  bool would_allow(const SourceAddress& src, bool known, std::uint64_t now_ns) const noexcept;

  std::size_t capacity() const noexcept { return sets_ * kWays; }
  std::size_t size() const noexcept { return size_; }
  std::uint64_t evictions() const noexcept { return evictions_; }

 private:
  struct Entry {
    SourceAddress src;
    TokenBucketState bucket;      // nanopackets and last refill
    std::uint64_t last_used = 0;  // 0: empty slot
  };
  std::size_t set_of(const SourceAddress& a) const noexcept;

  RateBudget known_;
  RateBudget unknown_;
  std::size_t sets_ = 0;
  crypto::SipKey key_;  // keys the set hash (hash.h)
  std::uint64_t tick_ = 0;
  std::size_t size_ = 0;
  std::uint64_t evictions_ = 0;
  HugeArray<Entry> entries_;  // huge pages: one random set per packet
};

}  // namespace gw::dp
