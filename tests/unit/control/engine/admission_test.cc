// control/engine/admission.h: token bucket and name/tag policy.
#include <gtest/gtest.h>

#include "control/engine/admission.h"
#include "control/engine/config.h"

namespace gw::cp::engine {
namespace {

TEST(Admission, TokenBucketLimitsNewMembersPerSecond) {
  Admission a(10, 5, {}, {}, 0);
  int admitted = 0;
  for (int i = 0; i < 20; ++i)
    if (a.admit("n" + std::to_string(i), {}, 0) == AdmitVerdict::kAdmit) ++admitted;
  EXPECT_EQ(admitted, 5);  // the burst
  EXPECT_EQ(a.admit("x", {}, 0), AdmitVerdict::kRateLimited);
  // 100 ms at 10/s: one more token.
  EXPECT_EQ(a.admit("x", {}, 100 * kMillisecond), AdmitVerdict::kAdmit);
  EXPECT_EQ(a.admit("y", {}, 100 * kMillisecond), AdmitVerdict::kRateLimited);
  // A long pause refills only up to the burst.
  EXPECT_EQ(a.tokens(1000 * kSecond), 5u);
}

TEST(Admission, PolicyPrefixesAndRequiredTags) {
  Admission a(1000, 1000, {"web-", "db-"}, {{"cluster", "prod"}}, 0);
  EXPECT_EQ(a.admit("web-1", {{"cluster", "prod"}}, 0), AdmitVerdict::kAdmit);
  EXPECT_EQ(a.admit("db-1", {{"zone", "a"}, {"cluster", "prod"}}, 0), AdmitVerdict::kAdmit);
  EXPECT_EQ(a.admit("cache-1", {{"cluster", "prod"}}, 0), AdmitVerdict::kPolicy);
  EXPECT_EQ(a.admit("web-2", {{"cluster", "dev"}}, 0), AdmitVerdict::kPolicy);
  EXPECT_EQ(a.admit("web-3", {}, 0), AdmitVerdict::kPolicy);
  // Policy rejects cost no token.
  EXPECT_EQ(a.tokens(0), 998u);
}

TEST(Admission, EmptyPolicyAllowsAll) {
  Admission a(1, 1, {}, {}, 0);
  EXPECT_TRUE(a.policy_allows("anything", {}));
}

}  // namespace
}  // namespace gw::cp::engine
