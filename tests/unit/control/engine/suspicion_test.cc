// control/engine/suspicion.h: Lifeguard's shrinking suspicion timeout.
#include <gtest/gtest.h>

#include <cmath>

#include "control/engine/config.h"
#include "control/engine/suspicion.h"

namespace gw::cp::engine {
namespace {

TEST(Suspicion, MinTimeoutScalesWithLogN) {
  EXPECT_EQ(suspicion_min_timeout(4, 1, kSecond), 4 * kSecond);
  EXPECT_EQ(suspicion_min_timeout(4, 10, kSecond), 4 * kSecond);
  EXPECT_EQ(suspicion_min_timeout(4, 100, kSecond), 8 * kSecond);
  EXPECT_EQ(suspicion_min_timeout(4, 1000, kSecond), 12 * kSecond);
}

TEST(Suspicion, TimeoutShrinksWithConfirmations) {
  const std::uint64_t min = 4 * kSecond;
  const std::uint64_t max = 24 * kSecond;
  EXPECT_EQ(suspicion_timeout(min, max, 0, 2), max);
  const std::uint64_t one = suspicion_timeout(min, max, 1, 2);
  EXPECT_LT(one, max);
  EXPECT_GT(one, min);
  // memberlist's formula: max - (max-min) * log(2)/log(3).
  EXPECT_NEAR(static_cast<double>(one), 24e9 - 20e9 * std::log(2.0) / std::log(3.0), 1e6);
  EXPECT_EQ(suspicion_timeout(min, max, 2, 2), min);
  EXPECT_EQ(suspicion_timeout(min, max, 5, 2), min);
  // No confirmations expected: the minimum.
  EXPECT_EQ(suspicion_timeout(min, max, 0, 0), min);
}

TEST(Suspicion, OnlyDistinctIndependentConfirmationsCount) {
  Suspicion s("accuser", 3, 4 * kSecond, 24 * kSecond, 100);
  const std::uint64_t d0 = s.deadline();
  EXPECT_EQ(d0, 100 + 24 * kSecond);
  EXPECT_FALSE(s.confirm("accuser"));  // the original accuser is not independent
  EXPECT_EQ(s.deadline(), d0);
  EXPECT_TRUE(s.confirm("b"));
  const std::uint64_t d1 = s.deadline();
  EXPECT_LT(d1, d0);
  EXPECT_FALSE(s.confirm("b"));  // repeated
  EXPECT_EQ(s.deadline(), d1);
  EXPECT_TRUE(s.confirm("c"));
  EXPECT_LT(s.deadline(), d1);
  EXPECT_TRUE(s.confirm("d"));
  EXPECT_EQ(s.deadline(), 100 + 4 * kSecond);
  EXPECT_FALSE(s.confirm("e"));  // bounded: no more state once at the minimum
  EXPECT_EQ(s.confirmations(), 3u);
}

}  // namespace
}  // namespace gw::cp::engine
