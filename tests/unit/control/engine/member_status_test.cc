#include "control/engine/member_status.h"

#include <gtest/gtest.h>

#include <string_view>

namespace gw::cp::engine {
namespace {

TEST(MemberStatus, NamesByValue) {
  EXPECT_STREQ(status_name(MemberStatus::kAlive), "alive");
  EXPECT_STREQ(status_name(MemberStatus::kSuspect), "suspect");
  EXPECT_STREQ(status_name(MemberStatus::kDead), "dead");
  EXPECT_STREQ(status_name(MemberStatus::kLeft), "left");
  EXPECT_STREQ(status_name(static_cast<MemberStatus>(4)), "unknown");
}

TEST(MemberStatus, ParsesEveryNameAndNothingElse) {
  for (std::size_t i = 0; i < kMemberStatusCount; ++i) {
    const auto s = static_cast<MemberStatus>(i);
    EXPECT_EQ(parse_member_status(status_name(s)), s);
  }
  EXPECT_FALSE(parse_member_status(""));
  EXPECT_FALSE(parse_member_status("Alive"));
  EXPECT_FALSE(parse_member_status("unknown"));
  EXPECT_FALSE(parse_member_status(std::string_view("alive\0", 6)));
}

}  // namespace
}  // namespace gw::cp::engine
