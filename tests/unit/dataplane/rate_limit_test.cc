#include "dataplane/rate_limit.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace gw::dp {
namespace {

constexpr std::uint64_t kSecond = 1'000'000'000ULL;

SourceAddress v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  SourceAddress s;
  s.ip[0] = a;
  s.ip[1] = b;
  s.ip[2] = c;
  s.ip[3] = d;
  s.ip_len = 4;
  return s;
}

int drain(RateLimiter& rl, const SourceAddress& s, bool known, std::uint64_t now, int max = 1'000'000) {
  int n = 0;
  while (n < max && rl.charge(s, known, now)) ++n;
  return n;
}

TEST(RateLimiter, NewSourceGetsAFullBurstThenNothingWithoutTime) {
  RateLimiter rl(64, {1000, 50}, {10, 5});
  const auto a = v4(10, 0, 0, 2);
  EXPECT_EQ(drain(rl, a, false, 0), 5);
  EXPECT_FALSE(rl.charge(a, false, 0));
  EXPECT_EQ(rl.size(), 1u);
}

TEST(RateLimiter, RefillsAtTheRateWithAnInjectedClock) {
  RateLimiter rl(64, {1000, 50}, {10, 5});
  const auto a = v4(10, 0, 0, 2);
  std::uint64_t now = 7 * kSecond;
  EXPECT_EQ(drain(rl, a, false, now), 5);
  // 10/s: one token per 100 ms; 99 ms is not enough.
  now += 99'000'000;
  EXPECT_FALSE(rl.charge(a, false, now));
  now += 1'000'000;
  EXPECT_TRUE(rl.charge(a, false, now));
  EXPECT_FALSE(rl.charge(a, false, now));
  // Half a second: five more.
  now += kSecond / 2;
  EXPECT_EQ(drain(rl, a, false, now), 5);
  // A long silence refills to the burst, never past it.
  now += 3600 * kSecond;
  EXPECT_EQ(drain(rl, a, false, now), 5);
}

TEST(RateLimiter, FractionalRefillAccumulatesAcrossCharges) {
  RateLimiter rl(64, {1000, 50}, {3, 5});
  const auto a = v4(10, 0, 0, 2);
  EXPECT_EQ(drain(rl, a, false, 0), 5);
  // 3/s: a token every 333.33 ms. Polling every 100 ms (each charge attempt
  // refills what time gave) yields one at 400 ms, not before.
  int got = 0;
  for (std::uint64_t t = 100'000'000; t <= 1'000'000'000; t += 100'000'000) got += rl.charge(a, false, t) ? 1 : 0;
  EXPECT_EQ(got, 3);  // at 400, 700 and 1000 ms
}

TEST(RateLimiter, KnownMembersGetTheLargerBudget) {
  RateLimiter rl(64, {1000, 50}, {10, 5});
  const auto member = v4(10, 0, 0, 3);
  const auto stranger = v4(10, 0, 0, 4);
  EXPECT_EQ(drain(rl, member, true, 0), 50);
  EXPECT_EQ(drain(rl, stranger, false, 0), 5);
  // One second later: the member refilled 1000/s (capped at 50), the stranger 10.
  EXPECT_EQ(drain(rl, member, true, kSecond), 50);
  EXPECT_EQ(drain(rl, stranger, false, kSecond), 5);
  EXPECT_EQ(drain(rl, stranger, false, kSecond + kSecond / 10), 1);
}

TEST(RateLimiter, ASourceThatLosesMembershipKeepsOnlyTheSmallerBurst) {
  RateLimiter rl(64, {1000, 50}, {10, 5});
  const auto a = v4(10, 0, 0, 5);
  EXPECT_TRUE(rl.charge(a, true, 0));  // 49 left under the known budget
  EXPECT_EQ(drain(rl, a, false, 0), 5);
}

TEST(RateLimiter, SourcesAreIndependentAndIpv6Works) {
  RateLimiter rl(64, {1000, 50}, {10, 2});
  SourceAddress six;
  six.ip[0] = 0xfd;
  six.ip[15] = 2;
  six.ip_len = 16;
  SourceAddress four = v4(0xfd, 0, 0, 0);  // same leading bytes, other family
  EXPECT_EQ(drain(rl, six, false, 0), 2);
  EXPECT_EQ(drain(rl, four, false, 0), 2);
  EXPECT_EQ(drain(rl, v4(10, 0, 0, 9), false, 0), 2);
}

TEST(RateLimiter, TableIsBoundedEvictionsAreCountedAndAnEvictedSourceStartsFull) {
  RateLimiter rl(64, {1000, 50}, {10, 3}, 1234);
  EXPECT_EQ(rl.capacity(), 64u);
  const auto first = v4(192, 168, 0, 1);
  EXPECT_EQ(drain(rl, first, false, 0), 3);
  for (int i = 0; i < 5000; ++i) {
    rl.charge(
        v4(10, static_cast<std::uint8_t>(i >> 16), static_cast<std::uint8_t>(i >> 8), static_cast<std::uint8_t>(i)),
        false, 0);
  }
  EXPECT_EQ(rl.size(), 64u);
  EXPECT_EQ(rl.evictions(), 5001u - 64u);
  // `first` was evicted long ago: it comes back with a full bucket.
  EXPECT_EQ(drain(rl, first, false, 0), 3);
}

TEST(RateLimiter, HugeRatesAndLongGapsDoNotOverflow) {
  RateLimiter rl(64, {10'000'000, 10'000'000}, {10'000'000, 10'000'000});
  const auto a = v4(10, 0, 0, 2);
  EXPECT_TRUE(rl.charge(a, false, 0));
  EXPECT_TRUE(rl.charge(a, false, UINT64_MAX / 2));
  EXPECT_TRUE(rl.charge(a, false, UINT64_MAX));
  // Time going backwards (a clock reset) refills nothing and breaks nothing.
  EXPECT_TRUE(rl.charge(a, false, 5));
}

}  // namespace
}  // namespace gw::dp
