// control/engine/suspicion.h: Lifeguard's shrinking suspicion timeout.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

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

TEST(Suspicion, AHoldMovesTheDeadlineLaterOnly) {
  Suspicion s("accuser", 0, 4 * kSecond, 24 * kSecond, 100);
  EXPECT_EQ(s.deadline(), 100 + 4 * kSecond);
  s.hold_until(10 * kSecond);
  EXPECT_EQ(s.deadline(), 10 * kSecond);
  s.hold_until(kSecond);  // earlier than the hold already there: no change
  EXPECT_EQ(s.deadline(), 10 * kSecond);
}

// The engine asks SuspicionSet for its earliest deadline on every pass: it
// must be the minimum over all suspicions after every kind of change, and
// due() must name exactly those that ran out, in name order (the order the
// engine buries them in, which its output depends on).
TEST(SuspicionSet, EarliestAndDueFollowEveryChange) {
  SuspicionSet set;
  EXPECT_EQ(set.earliest(), UINT64_MAX);
  EXPECT_TRUE(set.due(UINT64_MAX).empty());
  // Three suspicions started at 0, 1 and 2 s, each waiting for 2 confirmations.
  set.start("c", Suspicion("x", 2, 4 * kSecond, 24 * kSecond, 0));
  set.start("a", Suspicion("x", 2, 4 * kSecond, 24 * kSecond, kSecond));
  set.start("b", Suspicion("x", 2, 4 * kSecond, 24 * kSecond, 2 * kSecond));
  EXPECT_EQ(set.size(), 3u);
  EXPECT_EQ(set.earliest(), 24 * kSecond);
  // A second start for a suspected member changes nothing.
  set.start("c", Suspicion("y", 2, 4 * kSecond, 24 * kSecond, 50 * kSecond));
  EXPECT_EQ(set.find("c")->deadline(), 24 * kSecond);
  // Two confirmations bring b down to its minimum, 2 + 4 s: now the earliest.
  EXPECT_TRUE(set.confirm("b", "p"));
  EXPECT_TRUE(set.confirm("b", "q"));
  EXPECT_FALSE(set.confirm("b", "q"));
  EXPECT_FALSE(set.confirm("nobody", "q"));
  EXPECT_EQ(set.earliest(), 6 * kSecond);
  EXPECT_EQ(set.due(6 * kSecond), std::vector<std::string>{"b"});
  // Ended: the earliest is c's again.
  set.erase("b");
  set.erase("b");
  EXPECT_EQ(set.find("b"), nullptr);
  EXPECT_EQ(set.earliest(), 24 * kSecond);
  // Due at the same time are named in name order, whatever the deadlines.
  EXPECT_EQ(set.due(25 * kSecond), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(set.due(24 * kSecond), std::vector<std::string>{"c"});
  // A hold past every deadline moves all of them.
  set.hold_all(30 * kSecond);
  EXPECT_EQ(set.earliest(), 30 * kSecond);
  EXPECT_TRUE(set.due(29 * kSecond).empty());
  EXPECT_EQ(set.due(30 * kSecond), (std::vector<std::string>{"a", "c"}));
}

}  // namespace
}  // namespace gw::cp::engine
