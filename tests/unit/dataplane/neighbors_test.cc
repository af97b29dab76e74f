// The transmit MAC table: what may teach it and what it answers.
#include "dataplane/neighbors.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace gw::dp {
namespace {

Endpoint ep(std::uint8_t last, std::uint16_t port) {
  Endpoint e;
  e.ip = {10, 0, 0, last};
  e.ip_len = 4;
  e.port = port;
  return e;
}

constexpr Neighbors::Mac kMember = {0x02, 0, 0, 0, 0, 0x02};
constexpr Neighbors::Mac kAttacker = {0x02, 0xBA, 0xD0, 0, 0, 0x66};

// Issue 17, item 6: an outsider re-sends a member's real datagram from its
// own MAC and from another source port, so RSS takes the copy to another
// worker whose windows never saw it, and that worker accepts it. The MAC it
// teaches is for an endpoint we never send to: our answers to the member's
// advertised address and port never go to the attacker's MAC (at worst to
// broadcast until the member's next frame).
TEST(Neighbors, AFrameFromAnotherPortCannotRedirectTheMembersAnswers) {
  Neighbors n;
  const Endpoint member = ep(2, 7946);
  n.learn(member, kMember.data());
  Neighbors::Mac got{};
  ASSERT_TRUE(n.lookup(member, &got));
  EXPECT_EQ(got, kMember);
  n.learn(ep(2, 40000), kAttacker.data());  // the copy from another source port
  const bool known = n.lookup(member, &got);
  EXPECT_FALSE(known && got == kAttacker);
  EXPECT_FALSE(known);  // slot taken by the copy: broadcast, not redirected
  // The member's next frame puts it back.
  n.learn(member, kMember.data());
  ASSERT_TRUE(n.lookup(member, &got));
  EXPECT_EQ(got, kMember);
}

TEST(Neighbors, ArpHintsFillOnlyEmptySlotsForAnyPort) {
  Neighbors n;
  EXPECT_TRUE(n.hint(ep(3, 0), kMember.data()));
  Neighbors::Mac got{};
  EXPECT_TRUE(n.lookup(ep(3, 7946), &got));
  EXPECT_EQ(got, kMember);
  EXPECT_FALSE(n.hint(ep(3, 0), kAttacker.data()));  // never overwrites
  n.learn(ep(3, 7946), kMember.data());
  EXPECT_FALSE(n.hint(ep(3, 0), kAttacker.data()));
  EXPECT_FALSE(n.lookup(ep(3, 7000), &got));  // learned for one port only now
}

}  // namespace
}  // namespace gw::dp
