#include "dataplane/rate_limit.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "dataplane/hash.h"

namespace gw::dp {
namespace {

RateBudget sane(RateBudget b) noexcept {
  // Bounds keep burst * kScale and the refill product within 64 bits.
  b.rate_pps = std::clamp<std::uint64_t>(b.rate_pps, 1, 1'000'000'000ULL);
  b.burst = std::clamp<std::uint64_t>(b.burst, 1, 1'000'000'000ULL);
  return b;
}

}  // namespace

RateLimiter::RateLimiter(std::size_t capacity, RateBudget known, RateBudget unknown, std::uint64_t seed)
    : known_(sane(known)), unknown_(sane(unknown)), key_(table_key(seed)) {
  const std::size_t want = capacity < kWays ? kWays : capacity;
  sets_ = std::bit_ceil(want) / kWays;
  entries_ = HugeArray<Entry>(sets_ * kWays);
}

std::size_t RateLimiter::set_of(const SourceAddress& a) const noexcept {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::memcpy(&lo, a.ip.data(), 8);
  std::memcpy(&hi, a.ip.data() + 8, 8);
  // Keyed (hash.h): the source address is whatever a sender puts there.
  return static_cast<std::size_t>(keyed_hash(key_, lo, hi ^ a.ip_len)) & (sets_ - 1);
}

bool RateLimiter::charge(const SourceAddress& src, bool known, std::uint64_t now_ns) noexcept {
  const RateBudget& b = known ? known_ : unknown_;
  const std::uint64_t cap = b.burst * kScale;
  Entry* set = &entries_[set_of(src) * kWays];
  Entry* e = nullptr;
  Entry* victim = &set[0];
  for (std::size_t i = 0; i < kWays; ++i) {
    Entry& s = set[i];
    if (s.last_used != 0 && s.src == src) {
      e = &s;
      break;
    }
    if (victim->last_used != 0 && (s.last_used == 0 || s.last_used < victim->last_used)) victim = &s;
  }
  if (e == nullptr) {
    // A new source starts with a full bucket.
    if (victim->last_used != 0) {
      ++evictions_;
    } else {
      ++size_;
    }
    e = victim;
    e->src = src;
    e->bucket = {cap, now_ns};
  } else {
    token_bucket::refill(e->bucket, now_ns, b.rate_pps, cap);
  }
  // A source that lost its known status keeps no more than the smaller burst.
  e->bucket.scaled = std::min(e->bucket.scaled, cap);
  e->last_used = ++tick_;
  return token_bucket::take_one(e->bucket);
}

bool RateLimiter::would_allow(const SourceAddress& src, bool known, std::uint64_t now_ns) const noexcept {
  const RateBudget& b = known ? known_ : unknown_;
  const std::uint64_t cap = b.burst * kScale;
  const Entry* set = &entries_[set_of(src) * kWays];
  for (std::size_t i = 0; i < kWays; ++i) {
    const Entry& s = set[i];
    if (s.last_used == 0 || !(s.src == src)) continue;
    TokenBucketState t = s.bucket;  // a copy: asking changes nothing
    token_bucket::refill(t, now_ns, b.rate_pps, cap);
    return std::min(t.scaled, cap) >= kScale;
  }
  return true;  // a new source starts with a full bucket
}

}  // namespace gw::dp
