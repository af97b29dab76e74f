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
// teaches is for an endpoint we never send to, and (keyed by IP and port) it
// no longer even evicts the member's binding: our answers keep going to the
// member's MAC. (Before, the copy took the member's slot: broadcast.)
TEST(Neighbors, AFrameFromAnotherPortCannotRedirectTheMembersAnswers) {
  Neighbors n;
  const Endpoint member = ep(2, 7946);
  n.learn(member, kMember.data());
  Neighbors::Mac got{};
  ASSERT_TRUE(n.lookup(member, &got));
  EXPECT_EQ(got, kMember);
  n.learn(ep(2, 40000), kAttacker.data());  // the copy from another source port
  ASSERT_TRUE(n.lookup(member, &got));
  EXPECT_EQ(got, kMember);
  ASSERT_TRUE(n.lookup(ep(2, 40000), &got));  // what the copy taught is only for its own endpoint
  EXPECT_EQ(got, kAttacker);
}

// ARP is unauthenticated: by default (dataplane.arp_hints: false) a request
// or a gratuitous reply from an outsider claiming a member's address teaches
// nothing, so our first datagrams to an address never heard from go to
// broadcast, not to the outsider. (Before, the hint was always taken.)
TEST(Neighbors, ArpHintsAreOffByDefault) {
  Neighbors n;
  EXPECT_FALSE(n.hint(ep(3, 0), kAttacker.data()));
  Neighbors::Mac got{};
  EXPECT_FALSE(n.lookup(ep(3, 7946), &got));
}

TEST(Neighbors, ArpHintsWhenAllowedFillOnlyEmptySlotsForAnyPort) {
  Neighbors n;
  n.allow_hints(true);
  EXPECT_TRUE(n.hint(ep(3, 0), kMember.data()));
  Neighbors::Mac got{};
  EXPECT_TRUE(n.lookup(ep(3, 7946), &got));
  EXPECT_EQ(got, kMember);
  EXPECT_FALSE(n.hint(ep(3, 0), kAttacker.data()));  // never overwrites
  n.learn(ep(3, 7946), kMember.data());
  EXPECT_FALSE(n.hint(ep(3, 0), kAttacker.data()));
  EXPECT_FALSE(n.lookup(ep(3, 7000), &got));  // learned for one port only now; the hint is gone
  // Learned first, hint later: the hint is refused for every port of it.
  n.learn(ep(4, 7946), kMember.data());
  EXPECT_FALSE(n.hint(ep(4, 0), kAttacker.data()));
  EXPECT_FALSE(n.lookup(ep(4, 7000), &got));
}

// dataplane.neighbors: the operator's MAC for an address stands against any
// frame, authenticated or not, and any ARP.
TEST(Neighbors, PinnedNeighboursAreNeverReplaced) {
  Neighbors n;
  n.allow_hints(true);
  ASSERT_TRUE(n.pin(ep(5, 0), kMember.data()));
  EXPECT_EQ(n.pinned(), 1u);
  n.learn(ep(5, 7946), kAttacker.data());
  EXPECT_FALSE(n.hint(ep(5, 0), kAttacker.data()));
  Neighbors::Mac got{};
  ASSERT_TRUE(n.lookup(ep(5, 7946), &got));
  EXPECT_EQ(got, kMember);
  ASSERT_TRUE(n.lookup(ep(5, 1), &got));  // any port
  EXPECT_EQ(got, kMember);
  // Re-pinning replaces (config order), and the table is bounded.
  ASSERT_TRUE(n.pin(ep(5, 0), kAttacker.data()));
  EXPECT_EQ(n.pinned(), 1u);
  Neighbors full;
  for (std::size_t i = 0; i < Neighbors::kMaxPinned; ++i) {
    Endpoint e = ep(static_cast<std::uint8_t>(i), 0);
    e.ip[2] = static_cast<std::uint8_t>(i >> 8);
    ASSERT_TRUE(full.pin(e, kMember.data())) << i;
  }
  Endpoint extra = ep(9, 0);
  extra.ip[1] = 9;
  EXPECT_FALSE(full.pin(extra, kMember.data()));
}

// A broadcast, multicast or zero source MAC is never a destination we learn.
TEST(Neighbors, OnlyUnicastMacsAreTaken) {
  Neighbors n;
  n.allow_hints(true);
  const Neighbors::Mac bcast = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  const Neighbors::Mac mcast = {0x01, 0x00, 0x5E, 0, 0, 1};
  const Neighbors::Mac zero = {};
  Neighbors::Mac got{};
  for (const auto& m : {bcast, mcast, zero}) {
    n.learn(ep(6, 7946), m.data());
    EXPECT_FALSE(n.lookup(ep(6, 7946), &got));
    EXPECT_FALSE(n.hint(ep(7, 0), m.data()));
    EXPECT_FALSE(n.pin(ep(8, 0), m.data()));
  }
}

}  // namespace
}  // namespace gw::dp
