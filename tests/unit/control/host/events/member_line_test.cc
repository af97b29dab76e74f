#include "control/host/events/member_line.h"

#include <gtest/gtest.h>

#include "tests/unit/control/host/events/test_util.h"

namespace gw::cp::events {
namespace {

TEST(MemberLine, NamesOfEventsAndStates) {
  EXPECT_STREQ(event_name(engine::EventKind::kJoin), "member-join");
  EXPECT_STREQ(event_name(engine::EventKind::kLeave), "member-leave");
  EXPECT_STREQ(event_name(engine::EventKind::kFailed), "member-failed");
  EXPECT_STREQ(event_name(engine::EventKind::kUpdate), "member-update");
  EXPECT_STREQ(engine::status_name(engine::MemberStatus::kSuspect), "suspect");
  EXPECT_EQ(implied_state(engine::EventKind::kLeave), engine::MemberStatus::kLeft);
  EXPECT_EQ(implied_state(engine::EventKind::kFailed), engine::MemberStatus::kDead);
  EXPECT_EQ(implied_state(engine::EventKind::kUpdate), engine::MemberStatus::kAlive);
}

TEST(MemberLine, AddressText) {
  EXPECT_EQ(address_text(test::v4(192, 168, 1, 20, 1)), "192.168.1.20");
  engine::Address v6;
  v6.ip = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  EXPECT_EQ(address_text(v6), "2001:db8::1");
  EXPECT_EQ(address_text(engine::Address{}), "");
  engine::Address odd;
  odd.ip = {1, 2, 3};
  EXPECT_EQ(address_text(odd), "");
}

TEST(MemberLine, EscapesEverySeparator) {
  std::string out;
  append_escaped(out, "a\tb\nc d%e,f=g\\h\x7f\xff\x01z");
  EXPECT_EQ(out, "a%09b%0Ac%20d%25e%2Cf%3Dg%5Ch%7F%FF%01z");
}

TEST(MemberLine, MemberLineFields) {
  engine::Member m = test::member("gw-2", test::v4(10, 0, 0, 2, 7946), engine::MemberStatus::kSuspect,
                                  {{"role", "control-plane"}, {"note", "a,b"}}, 42);
  EXPECT_EQ(member_line(m), "gw-2\t10.0.0.2\t7946\tsuspect\t42\trole=control-plane,note=a%2Cb\n");
  m.set_profile(engine::Address{}, {}, 0);
  EXPECT_EQ(member_line(m), "gw-2\t-\t0\tsuspect\t42\t\n");
}

}  // namespace
}  // namespace gw::cp::events
