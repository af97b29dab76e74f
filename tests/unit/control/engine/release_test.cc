// What members run (issue 52 item 10): the protocol version and build each
// member announces in its Alive reach every member, also those that learn it
// from a sync (a join answer, a periodic window) and never hear its Alive; a
// sync lists each release once; what a member cannot use (an over-long build,
// an entry naming no release) is counted and the member kept.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "control/codec.h"
#include "control/engine/engine.h"
#include "control/engine/wire_size.h"
#include "tests/unit/control/engine/engine_driver.h"

namespace gw::cp::engine {
namespace {

const std::string kBuildA = "0.1.0+aaaaaaaaaaaa";
const std::string kBuildB = "0.2.0+bbbbbbbbbbbb-dirty";

EngineConfig config_with(std::size_t self, std::uint32_t protocol, const std::string& build) {
  EngineConfig c = config(self);
  c.protocol_version = protocol;
  c.build = build;
  return c;
}

// Through the codec, as between two gateways: what is not on the wire is lost.
Compound over_the_wire(const Compound& msgs) {
  const DecodeResult r = decode(encode(msgs));
  EXPECT_TRUE(r.ok());
  return r.messages;
}

// Delivers every datagram `from` sent since sent[first] to `to` (over the
// wire), addressed to `to_addr`; returns how many.
std::size_t deliver(Driver& from, std::size_t first, std::size_t from_index, Driver& to, const Address& to_addr) {
  std::size_t n = 0;
  for (std::size_t i = first; i < from.sent.size(); ++i) {
    if (from.sent[i].to != to_addr) continue;
    to.e.handle(addr(from_index), over_the_wire(from.sent[i].messages), to.now);
    ++n;
  }
  to.collect();
  return n;
}

TEST(Release, AMemberLearnedOnlyThroughAJoinSyncHasItsAnnouncedProtocolAndBuild) {
  // The seed n1 (protocol 3, build A) knows n2 (protocol 2, build B) from
  // n2's own Alive. The joiner n0 learns both from the seed's join answer
  // alone: it never hears an Alive of either.
  Driver seed(config_with(1, 3, kBuildA));
  seed.handle(2, {Alive{1, name(2), addr(2), {}, 2, kBuildB}});
  ASSERT_NE(seed.e.member(name(2)), nullptr);
  ASSERT_EQ(seed.e.member(name(2))->build(), kBuildB);

  Driver joiner(config_with(0, 3, kBuildA));
  const std::vector<Address> seeds = {addr(1)};
  joiner.e.join(seeds, joiner.now);
  joiner.collect();
  ASSERT_EQ(deliver(joiner, 0, 0, seed, addr(1)), 1u);
  ASSERT_GE(deliver(seed, 0, 1, joiner, addr(0)), 1u);

  const Member* n1 = joiner.e.member(name(1));
  const Member* n2 = joiner.e.member(name(2));
  ASSERT_NE(n1, nullptr);
  ASSERT_NE(n2, nullptr);
  EXPECT_EQ(n1->protocol_version(), 3u);
  EXPECT_EQ(n1->build(), kBuildA);
  EXPECT_EQ(n2->protocol_version(), 2u);
  EXPECT_EQ(n2->build(), kBuildB);
  // And the seed learned the joiner from its join request the same way.
  const Member* n0 = seed.e.member(name(0));
  ASSERT_NE(n0, nullptr);
  EXPECT_EQ(n0->protocol_version(), 3u);
  EXPECT_EQ(n0->build(), kBuildA);
}

TEST(Release, ASyncListsEachReleaseOnceAndItsEntriesReferToThem) {
  EngineConfig c = config_with(0, 1, kBuildA);
  c.sync_answer_burst = 100;
  Driver d(c);
  // 60 members on two builds, 10 that said nothing (a peer before builds).
  Compound msgs;
  for (std::size_t i = 1; i <= 70; ++i)
    msgs.push_back(Alive{1, name(i), addr(i), {}, i <= 60 ? 1u : 0u, i > 60 ? "" : (i % 2 == 0 ? kBuildA : kBuildB)});
  d.handle(1, msgs);
  ASSERT_EQ(d.e.num_live(), 71u);

  const std::size_t before = d.sent.size();
  d.handle(1, {SyncRequest{7, name(1), false, 0, 1, {MemberState{name(1), addr(1), 1, MemberStatus::kAlive, {}}}}});
  std::map<std::string, std::pair<std::uint32_t, std::string>> seen;  // member -> (protocol, build)
  std::size_t parts = 0;
  for (std::size_t i = before; i < d.sent.size(); ++i) {
    const Compound wire = over_the_wire(d.sent[i].messages);
    ASSERT_EQ(encode(d.sent[i].messages).size() <= c.max_packet_bytes, true);
    const SyncResponse* r = std::get_if<SyncResponse>(&wire.at(0));
    ASSERT_NE(r, nullptr);
    ++parts;
    // Each release at most once in a part, and only those its entries use.
    std::set<std::pair<std::uint32_t, std::string>> distinct;
    for (const Release& rel : r->releases) EXPECT_TRUE(distinct.insert({rel.protocol_version, rel.build}).second);
    std::vector<bool> used(r->releases.size(), false);
    for (const MemberState& s : r->members) {
      ASSERT_LE(s.release, r->releases.size()) << s.node;
      if (s.release == 0) {
        seen[s.node] = {0, ""};
        continue;
      }
      used[s.release - 1] = true;
      seen[s.node] = {r->releases[s.release - 1].protocol_version, r->releases[s.release - 1].build};
    }
    for (bool u : used) EXPECT_TRUE(u);
    EXPECT_LE(r->releases.size(), 2u);
  }
  ASSERT_GE(parts, 2u);  // the listing starts over in every part
  ASSERT_EQ(seen.size(), 71u);
  EXPECT_EQ(seen[name(0)], std::make_pair(1u, kBuildA));
  EXPECT_EQ(seen[name(2)], std::make_pair(1u, kBuildA));
  EXPECT_EQ(seen[name(3)], std::make_pair(1u, kBuildB));
  EXPECT_EQ(seen[name(65)], std::make_pair(0u, std::string()));
}

TEST(Release, ARecordGrowsByTwoBytesAndAPartByItsListing) {
  // The size model the windows are packed by: an entry's reference is one
  // varint (two bytes at positions below 128), a release's listing is its
  // bytes once per part.
  MemberState s{name(5), addr(5), 9, MemberStatus::kAlive, {}};
  const std::size_t bound = estimated_size(s);
  const SyncResponse before{1, name(0), 0, 1, {s}};
  s.release = 1;
  EXPECT_EQ(estimated_size(s), bound);  // the bound counts the field even at 0
  SyncResponse after{1, name(0), 0, 1, {s}};
  after.releases.push_back(Release{1, kBuildA});
  EXPECT_EQ(exact_size(Message{after}) - exact_size(Message{before}), 2u + estimated_size(Release{1, kBuildA}));
  EXPECT_EQ(encode({after}).size(), exact_size(Message{after}));
  // A second entry on the same release costs its reference only.
  after.members.push_back(MemberState{name(6), addr(6), 9, MemberStatus::kAlive, {}, 1});
  const SyncResponse plain_two{1, name(0), 0, 1, {before.members[0], MemberState{name(6), addr(6), 9, MemberStatus::kAlive, {}}}};
  EXPECT_EQ(exact_size(Message{after}) - exact_size(Message{plain_two}), 4u + estimated_size(Release{1, kBuildA}));
}

TEST(Release, AnOverLongBuildIsDroppedCountedAndTheMemberKept) {
  Driver d(config_with(0, 1, kBuildA));
  const std::string too_long(kMaxBuildBytes + 1, 'x');
  d.handle(2, {Alive{1, name(2), addr(2), {}, 4, too_long}});
  const Member* m = d.e.member(name(2));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->protocol_version(), 4u);
  EXPECT_EQ(m->build(), "");
  EXPECT_EQ(d.e.counters().build_drop_too_long, 1u);
  // What we relay about it carries no over-long build either.
  d.run_until(d.now + 5 * kSecond);
  bool relayed = false;
  for (const Outgoing& o : d.sent)
    for (const Message& msg : o.messages)
      if (const Alive* a = std::get_if<Alive>(&msg); a != nullptr && a->node == name(2)) {
        relayed = true;
        EXPECT_EQ(a->build, "");
        EXPECT_EQ(a->protocol_version, 4u);
      }
  EXPECT_TRUE(relayed);
  // The longest allowed is kept.
  const std::string longest(kMaxBuildBytes, 'y');
  d.handle(3, {Alive{1, name(3), addr(3), {}, 1, longest}});
  ASSERT_NE(d.e.member(name(3)), nullptr);
  EXPECT_EQ(d.e.member(name(3))->build(), longest);
  EXPECT_EQ(d.e.counters().build_drop_too_long, 1u);
}

TEST(Release, ASyncsOverLongBuildOrUnlistedEntryIsCountedAndTheMemberKept) {
  Driver d(config_with(0, 1, kBuildA));
  const std::vector<Address> seeds = {addr(1)};
  d.e.join(seeds, d.now);
  d.collect();
  const SyncRequest* req = find_msg<SyncRequest>(d.sent.at(0));
  ASSERT_NE(req, nullptr);
  SyncResponse resp{req->seq_no, name(1), 0, 1, {}};
  resp.releases = {Release{5, std::string(kMaxBuildBytes + 10, 'z')}, Release{1, kBuildB}};
  resp.members = {MemberState{name(1), addr(1), 1, MemberStatus::kAlive, {}, 2},
                  MemberState{name(2), addr(2), 1, MemberStatus::kAlive, {}, 1},
                  MemberState{name(3), addr(3), 1, MemberStatus::kAlive, {}, 1},
                  MemberState{name(4), addr(4), 1, MemberStatus::kAlive, {}, 3},   // no third release
                  MemberState{name(5), addr(5), 1, MemberStatus::kAlive, {}, 0}};  // not said
  d.handle(1, {resp});
  ASSERT_EQ(d.e.num_live(), 6u);
  EXPECT_EQ(d.e.member(name(1))->build(), kBuildB);
  // The over-long build: dropped once for the part, its protocol kept.
  EXPECT_EQ(d.e.member(name(2))->protocol_version(), 5u);
  EXPECT_EQ(d.e.member(name(2))->build(), "");
  EXPECT_EQ(d.e.member(name(3))->build(), "");
  EXPECT_EQ(d.e.counters().build_drop_too_long, 1u);
  // The unlisted entry and the unsaid one: known, release unknown.
  EXPECT_EQ(d.e.member(name(4))->protocol_version(), 0u);
  EXPECT_EQ(d.e.counters().release_drop_unlisted, 1u);
  EXPECT_EQ(d.e.member(name(5))->protocol_version(), 0u);
  EXPECT_EQ(d.e.member(name(5))->build(), "");
}

TEST(Release, ARestartWithAnotherBuildIsSeenByItsNewIncarnation) {
  Driver d(config_with(0, 1, kBuildA));
  d.handle(2, {Alive{1, name(2), addr(2), {}, 1, kBuildA}});
  ASSERT_EQ(d.e.member(name(2))->build(), kBuildA);
  // The same incarnation with another build is stale news: ignored.
  d.handle(2, {Alive{1, name(2), addr(2), {}, 1, kBuildB}});
  EXPECT_EQ(d.e.member(name(2))->build(), kBuildA);
  // Upgraded and restarted: a newer incarnation carries the new build.
  d.handle(2, {Alive{2, name(2), addr(2), {}, 2, kBuildB}});
  EXPECT_EQ(d.e.member(name(2))->build(), kBuildB);
  EXPECT_EQ(d.e.member(name(2))->protocol_version(), 2u);
  // Our own Alive says ours.
  EXPECT_EQ(d.e.member(name(0))->build(), kBuildA);
}

TEST(Release, AnOverLongOwnBuildIsRefusedByValidate) {
  EngineConfig c = config_with(0, 1, std::string(kMaxBuildBytes + 1, 'b'));
  EXPECT_NE(c.validate().find("build"), std::string::npos);
  c.build = std::string(kMaxBuildBytes, 'b');
  EXPECT_EQ(c.validate(), "");
}

}  // namespace
}  // namespace gw::cp::engine
