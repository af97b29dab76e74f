#include "base/token_bucket.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace gw::base {
namespace {

constexpr std::uint64_t kMs = 1'000'000;

TEST(TokenBucket, StartsFullAndRefillsAtTheRate) {
  TokenBucket b(10, 5, 0);  // one token per 100 ms
  EXPECT_EQ(b.tokens(0), 5u);
  EXPECT_EQ(b.take_up_to(5, 0), 5u);
  EXPECT_FALSE(b.take(0));
  EXPECT_EQ(b.tokens(100 * kMs - 1), 0u);
  EXPECT_EQ(b.next_token_ns(), 100 * kMs);
  EXPECT_EQ(b.tokens(100 * kMs), 1u);
  EXPECT_EQ(b.tokens(350 * kMs), 3u);
  EXPECT_TRUE(b.take(350 * kMs));
  EXPECT_EQ(b.tokens(350 * kMs), 2u);
}

TEST(TokenBucket, CapsAtDepth) {
  TokenBucket b(1000, 4, 0);
  EXPECT_EQ(b.take_up_to(2, 0), 2u);
  EXPECT_EQ(b.tokens(60'000 * kMs), 4u);  // a minute at 1000/s: still 4 deep
  EXPECT_EQ(b.take_up_to(100, 60'000 * kMs), 4u);
}

TEST(TokenBucket, TakesUpToNAndKeepsTheFraction) {
  TokenBucket b(10, 5, 0);
  EXPECT_EQ(b.take_up_to(3, 0), 3u);
  EXPECT_EQ(b.take_up_to(7, 0), 2u);  // partial: only 2 left
  EXPECT_EQ(b.take_up_to(7, 0), 0u);
  EXPECT_EQ(b.take_up_to(1, 50 * kMs), 0u);  // half a token earned, kept
  EXPECT_EQ(b.take_up_to(2, 100 * kMs), 1u);
}

TEST(TokenBucket, ClockThatStandsStillOrGoesBackAddsNothing) {
  TokenBucket b(10, 2, 500 * kMs);
  EXPECT_EQ(b.take_up_to(2, 500 * kMs), 2u);
  EXPECT_EQ(b.tokens(100 * kMs), 0u);
  EXPECT_EQ(b.tokens(500 * kMs), 0u);
  EXPECT_EQ(b.tokens(600 * kMs), 1u);
}

TEST(TokenBucket, RateZeroNeverRefills) {
  TokenBucket b(0, 2, 0);
  EXPECT_EQ(b.take_up_to(3, 0), 2u);
  EXPECT_EQ(b.tokens(std::numeric_limits<std::uint64_t>::max()), 0u);
  EXPECT_EQ(b.next_token_ns(), std::numeric_limits<std::uint64_t>::max());
}

TEST(TokenBucket, NoOverflowAtLargeElapsedTimes) {
  constexpr std::uint32_t kMax = std::numeric_limits<std::uint32_t>::max();
  constexpr std::uint64_t kEnd = std::numeric_limits<std::uint64_t>::max();
  TokenBucket b(kMax, kMax, 0);
  EXPECT_EQ(b.take_up_to(kEnd, 0), kMax);
  EXPECT_EQ(b.tokens(kEnd), kMax);  // unclamped, elapsed * rate would wrap
  // 2^30 per second for 2^34 ns: the product is exactly 2^64, 0 if it wrapped.
  TokenBucket wraps(1u << 30, 4, 0);
  EXPECT_EQ(wraps.take_up_to(4, 0), 4u);
  EXPECT_EQ(wraps.tokens(std::uint64_t{1} << 34), 4u);
  TokenBucket slow(1, 1, 0);
  EXPECT_TRUE(slow.take(0));
  EXPECT_EQ(slow.tokens(kEnd), 1u);

  // The per-entry functions, at the rate limiter's bounds (1e9 per second, 1e9 deep).
  constexpr std::uint64_t kCap = 1'000'000'000ULL * token_bucket::kScale;
  TokenBucketState s{0, 1};
  token_bucket::refill(s, kEnd, 1'000'000'000ULL, kCap);
  EXPECT_EQ(s.scaled, kCap);
  EXPECT_EQ(s.last_ns, kEnd);
}

TEST(TokenBucket, PerEntryFunctionsTakeOneOrN) {
  TokenBucketState s{token_bucket::kScale * 3 / 2, 0};  // 1.5 tokens
  EXPECT_TRUE(token_bucket::take_one(s));
  EXPECT_FALSE(token_bucket::take_one(s));
  EXPECT_EQ(s.scaled, token_bucket::kScale / 2);
  token_bucket::refill(s, 250 * kMs, 2, 3 * token_bucket::kScale);  // + half a token
  EXPECT_EQ(token_bucket::take(s, 5), 1u);
  EXPECT_EQ(s.scaled, 0u);
}

}  // namespace
}  // namespace gw::base
