// Integer token buckets: one arithmetic for every limiter that counts whole
// tokens at a rate per second up to a depth (the per-source rate limiter, the
// classifier's scan budget, the engine's admission and sync-answer limits).
// Shared vocabulary (base/): the dataplane and the engine use it under their
// own names (dp::TokenBucket, engine::TokenBucket).
//
// Tokens are kept in nano-tokens (kScale per token) so refill is exact
// integer arithmetic. Time is injected (`now_ns`, any monotonic nanosecond
// clock); a clock that stands still or goes back adds nothing. Pure: no DPDK,
// no allocation, no locks.
//
// Bounds: rate and depth up to 2^32 - 1 keep depth * kScale + rate, and so
// every product below, within 64 bits, however long the bucket was idle.
#pragma once

#include <cstdint>

namespace gw::base {

// A bucket's changing part: what per-entry tables store (the limit is theirs).
struct TokenBucketState {
  std::uint64_t scaled = 0;   // nano-tokens
  std::uint64_t last_ns = 0;  // time of the last refill
};

namespace token_bucket {

inline constexpr std::uint64_t kScale = 1'000'000'000ULL;

// Any thread (pure). Adds what `rate` tokens per second (>= 1: no branch
// for 0 here; callers that allow 0 decide before) earned since s.last_ns,
// capped at `cap` nano-tokens (depth * kScale). Elapsed time is clamped to
// the time to fill before multiplying, so the product cannot overflow.
constexpr void refill(TokenBucketState& s, std::uint64_t now_ns, std::uint64_t rate, std::uint64_t cap) noexcept {
  if (now_ns <= s.last_ns) return;
  const std::uint64_t full_after = cap / rate + 1;
  const std::uint64_t elapsed = now_ns - s.last_ns < full_after ? now_ns - s.last_ns : full_after;
  const std::uint64_t filled = s.scaled + elapsed * rate;
  s.scaled = filled < cap ? filled : cap;
  s.last_ns = now_ns;
}

// Any thread (pure). Takes up to `want` whole tokens; returns how many.
constexpr std::uint64_t take(TokenBucketState& s, std::uint64_t want) noexcept {
  const std::uint64_t avail = s.scaled / kScale;
  const std::uint64_t n = want < avail ? want : avail;
  s.scaled -= n * kScale;
  return n;
}

// Any thread (pure). Takes one whole token if there is one: a compare and a
// subtraction, for per-packet callers.
constexpr bool take_one(TokenBucketState& s) noexcept {
  if (s.scaled < kScale) return false;
  s.scaled -= kScale;
  return true;
}

}  // namespace token_bucket

// A bucket with its limit: `rate` whole tokens per second, `depth` deep,
// starting full. Rate 0 never refills (only the initial depth is spent).
class TokenBucket {
 public:
  static constexpr std::uint64_t kScale = token_bucket::kScale;

  // Any thread; the bucket is not shared (one owner calls everything below).
  constexpr TokenBucket(std::uint32_t rate_per_s, std::uint32_t depth, std::uint64_t now_ns) noexcept
      : rate_(rate_per_s), cap_(std::uint64_t{depth} * kScale), s_{cap_, now_ns} {}

  // Any thread (owner). Takes one token if there is one.
  constexpr bool take(std::uint64_t now_ns) noexcept {
    refill(now_ns);
    return token_bucket::take_one(s_);
  }
  // Any thread (owner). Takes up to `want` tokens; returns how many.
  constexpr std::uint64_t take_up_to(std::uint64_t want, std::uint64_t now_ns) noexcept {
    refill(now_ns);
    return token_bucket::take(s_, want);
  }
  // Any thread (owner). Whole tokens available now.
  constexpr std::uint64_t tokens(std::uint64_t now_ns) noexcept {
    refill(now_ns);
    return s_.scaled / kScale;
  }
  // Any thread (owner). When the next whole token is there, as of the last
  // refill; UINT64_MAX at rate 0.
  constexpr std::uint64_t next_token_ns() const noexcept {
    if (s_.scaled >= kScale) return s_.last_ns;
    if (rate_ == 0) return UINT64_MAX;
    // Nano-tokens grow by `rate_` per ns.
    return s_.last_ns + (kScale - s_.scaled + rate_ - 1) / rate_;
  }

 private:
  constexpr void refill(std::uint64_t now_ns) noexcept {
    if (rate_ == 0) {
      if (now_ns > s_.last_ns) s_.last_ns = now_ns;
      return;
    }
    token_bucket::refill(s_, now_ns, rate_, cap_);
  }

  std::uint64_t rate_;  // tokens per second
  std::uint64_t cap_;   // depth * kScale
  TokenBucketState s_;
};

}  // namespace gw::base
