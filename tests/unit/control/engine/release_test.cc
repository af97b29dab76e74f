// What members run (issue 52 item 10): the protocol version and build each
// member announces reach every member, also those that learn it from a sync
// (a join answer, a periodic window) and never hear its Alive; a sync part
// lists each release once and its entries refer to them; a refutation does
// not repeat the build; what a member cannot use (an over-long build, an
// entry naming no release) is counted and the member kept.
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
  // The seed has not seen the joiner's address receive its datagrams: a
  // cookie first (no reflection), the join once more with it, the answer.
  std::size_t seed_sent = 0;
  std::size_t joiner_sent = joiner.sent.size();
  ASSERT_EQ(deliver(seed, seed_sent, 1, joiner, addr(0)), 1u);
  seed_sent = seed.sent.size();
  ASSERT_EQ(deliver(joiner, joiner_sent, 0, seed, addr(1)), 1u);
  ASSERT_GE(deliver(seed, seed_sent, 1, joiner, addr(0)), 1u);

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
  // 60 members on two builds, 10 whose release we do not know (heard of from
  // a peer before builds).
  Compound msgs;
  for (std::size_t i = 1; i <= 70; ++i)
    msgs.push_back(Alive{1, name(i), addr(i), {}, i <= 60 ? 1u : 0u, i > 60 ? "" : (i % 2 == 0 ? kBuildA : kBuildB)});
  d.handle(1, msgs);
  ASSERT_EQ(d.e.num_live(), 71u);

  const std::size_t before = d.sent.size();
  d.handle(1, {SyncRequest{7, name(1), false, 0, 1, {MemberState{name(1), addr(1), 1, MemberStatus::kAlive, {}}}}});
  std::map<std::string, Release> seen;
  std::size_t parts = 0;
  for (std::size_t i = before; i < d.sent.size(); ++i) {
    EXPECT_LE(encode(d.sent[i].messages).size(), c.max_packet_bytes);
    const Compound wire = over_the_wire(d.sent[i].messages);
    const SyncResponse* r = std::get_if<SyncResponse>(&wire.at(0));
    ASSERT_NE(r, nullptr);
    ++parts;
    // Each release at most once in a part, and only those its entries use.
    std::set<std::pair<std::uint32_t, std::string>> distinct;
    for (const Release& rel : r->releases) EXPECT_TRUE(distinct.insert({rel.protocol_version, rel.build}).second);
    EXPECT_LE(r->releases.size(), 3u);
    std::vector<bool> used(r->releases.size(), false);
    for (const MemberState& s : r->members) {
      ASSERT_LT(s.release, r->releases.size()) << s.node;
      used[s.release] = true;
      seen[s.node] = r->releases[s.release];
    }
    for (bool u : used) EXPECT_TRUE(u);
  }
  ASSERT_GE(parts, 2u);  // the listing starts over in every part
  ASSERT_EQ(seen.size(), 71u);
  EXPECT_EQ(seen[name(0)], (Release{1, kBuildA}));
  EXPECT_EQ(seen[name(2)], (Release{1, kBuildA}));
  EXPECT_EQ(seen[name(3)], (Release{1, kBuildB}));
  EXPECT_EQ(seen[name(65)], (Release{0, ""}));
}

TEST(Release, AnEntryOnItsPartsFirstReleaseCostsNothingAnotherTwoBytes) {
  // The size model the windows are packed by (the bound): the reference is
  // an optional field, counted as written; a release's listing is its bytes
  // once per part.
  const MemberState plain{name(5), addr(5), 9, MemberStatus::kAlive, {}};
  MemberState second = plain;
  second.release = 1;
  EXPECT_EQ(estimated_size(second), estimated_size(plain) + 2);
  const SyncResponse none{1, name(0), 0, 1, {plain, plain}};
  SyncResponse listed = none;
  listed.releases.push_back(Release{1, kBuildA});
  EXPECT_EQ(exact_size(Message{listed}) - exact_size(Message{none}), estimated_size(Release{1, kBuildA}));
  EXPECT_EQ(estimated_size(Message{listed}) - estimated_size(Message{none}), estimated_size(Release{1, kBuildA}));
  listed.releases.push_back(Release{1, kBuildB});
  listed.members[1].release = 1;
  EXPECT_EQ(exact_size(Message{listed}) - exact_size(Message{none}),
            estimated_size(Release{1, kBuildA}) + estimated_size(Release{1, kBuildB}) + 2);
  EXPECT_EQ(encode({listed}).size(), exact_size(Message{listed}));
  // About 24 bytes a release for a build of a gateway's length.
  EXPECT_EQ(estimated_size(Release{1, kBuildA}), 24u);
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
  resp.releases = {Release{5, std::string(kMaxBuildBytes + 10, 'z')}, Release{1, kBuildB}, Release{0, ""}};
  resp.members = {MemberState{name(1), addr(1), 1, MemberStatus::kAlive, {}, 1},
                  MemberState{name(2), addr(2), 1, MemberStatus::kAlive, {}, 0},
                  MemberState{name(3), addr(3), 1, MemberStatus::kAlive, {}, 0},
                  MemberState{name(4), addr(4), 1, MemberStatus::kAlive, {}, 7},   // no such release
                  MemberState{name(5), addr(5), 1, MemberStatus::kAlive, {}, 2}};  // not known to the seed
  d.handle(1, {resp});
  ASSERT_EQ(d.e.num_live(), 6u);
  EXPECT_EQ(d.e.member(name(1))->build(), kBuildB);
  // The over-long build: dropped once for the part, its protocol kept.
  EXPECT_EQ(d.e.member(name(2))->protocol_version(), 5u);
  EXPECT_EQ(d.e.member(name(2))->build(), "");
  EXPECT_EQ(d.e.member(name(3))->build(), "");
  EXPECT_EQ(d.e.counters().build_drop_too_long, 1u);
  // The unlisted entry and the unknown one: members, release unknown.
  EXPECT_EQ(d.e.member(name(4))->protocol_version(), 0u);
  EXPECT_EQ(d.e.counters().release_drop_unlisted, 1u);
  EXPECT_EQ(d.e.member(name(5))->protocol_version(), 0u);
  EXPECT_EQ(d.e.member(name(5))->build(), "");
}

TEST(Release, ASyncFromAPeerBeforeReleasesIsMergedAsBefore) {
  // No releases listed: its entries (release 0, as any older sender's
  // decode) say nothing of what members run, and are no unlisted entries.
  Driver d(config_with(0, 1, kBuildA));
  d.handle(1, {Alive{1, name(1), addr(1), {}, 1, kBuildB}});
  d.handle(1, {SyncRequest{3, name(1), false, 0, 1,
                           {MemberState{name(1), addr(1), 2, MemberStatus::kAlive, {}},
                            MemberState{name(2), addr(2), 1, MemberStatus::kAlive, {}}}}});
  ASSERT_NE(d.e.member(name(2)), nullptr);
  EXPECT_EQ(d.e.member(name(2))->protocol_version(), 0u);
  EXPECT_EQ(d.e.member(name(2))->build(), "");
  // A newer incarnation that says no build: the build of the life before is
  // not shown for this one (unknown until said first-hand); the protocol
  // version, not said either, stays as held.
  EXPECT_EQ(d.e.member(name(1))->incarnation, 2u);
  EXPECT_EQ(d.e.member(name(1))->build(), "");
  EXPECT_EQ(d.e.member(name(1))->protocol_version(), 1u);
  EXPECT_EQ(d.e.counters().release_drop_unlisted, 0u);
}

TEST(Release, ARestartSaysItsNewBuildANewerIncarnationWithoutOneMakesItUnknown) {
  Driver d(config_with(0, 1, kBuildA));
  d.handle(2, {Alive{1, name(2), addr(2), {}, 1, kBuildA}});
  ASSERT_EQ(d.e.member(name(2))->build(), kBuildA);
  // A newer incarnation without a build (a refutation, or a restart's Alive
  // relayed: from afar they look the same): unknown until said first-hand.
  d.handle(2, {Alive{2, name(2), addr(2), {}, 1}});
  EXPECT_EQ(d.e.member(name(2))->incarnation, 2u);
  EXPECT_EQ(d.e.member(name(2))->build(), "");
  // The same life told again with its build (its sync entry) fills it in.
  d.handle(2, {Alive{2, name(2), addr(2), {}, 1, kBuildA}});
  EXPECT_EQ(d.e.member(name(2))->build(), kBuildA);
  // Upgraded and restarted: the newer incarnation says the new build.
  d.handle(2, {Alive{1765000000, name(2), addr(2), {}, 2, kBuildB}});
  EXPECT_EQ(d.e.member(name(2))->build(), kBuildB);
  EXPECT_EQ(d.e.member(name(2))->protocol_version(), 2u);
  EXPECT_EQ(count_events(d.events, EventKind::kUpdate, name(2)), 0u);
}

TEST(Release, AMemberFirstHeardFromARefutationGetsItsBuildFromTheNextSyncEntry) {
  Driver d(config_with(0, 1, kBuildA));
  d.handle(2, {Alive{5, name(2), addr(2), {}, 1}});
  ASSERT_NE(d.e.member(name(2)), nullptr);
  EXPECT_EQ(d.e.member(name(2))->build(), "");
  const std::size_t stale = d.e.counters().update_drop_stale;
  // A window with its entry at the same incarnation: what it runs is taken,
  // nothing else (stale news: not gossiped; what goes out about n2 is the
  // first Alive's relay, still without a build).
  SyncRequest r{9, name(3), false, 0, 1, {MemberState{name(2), addr(2), 5, MemberStatus::kAlive, {}, 0}}};
  r.releases = {Release{1, kBuildB}};
  const std::size_t sent = d.sent.size();
  d.handle(3, {r});
  EXPECT_EQ(d.e.member(name(2))->build(), kBuildB);
  EXPECT_EQ(d.e.member(name(2))->incarnation, 5u);
  EXPECT_EQ(d.e.counters().update_drop_stale, stale + 1);
  d.run_until(d.now + 3 * kSecond);
  for (std::size_t i = sent; i < d.sent.size(); ++i)
    for (const Message& msg : d.sent[i].messages)
      if (const Alive* a = std::get_if<Alive>(&msg); a != nullptr && a->node == name(2)) {
        EXPECT_EQ(a->build, "");
      }
}

TEST(Release, ABuildIsNotRelayed) {
  // Said first-hand (a hello, a sync entry), taken, and not gossiped on: a
  // build in every relay of every join's Alive cost a cluster under an
  // egress budget twice the time to form.
  Driver d(config_with(0, 1, kBuildA));
  d.handle(2, {Alive{1, name(2), addr(2), {}, 1, kBuildB}});
  ASSERT_EQ(d.e.member(name(2))->build(), kBuildB);
  d.run_until(d.now + 5 * kSecond);
  bool relayed = false;
  for (const Outgoing& o : d.sent)
    for (const Message& msg : o.messages)
      if (const Alive* a = std::get_if<Alive>(&msg); a != nullptr && a->node == name(2)) {
        relayed = true;
        EXPECT_EQ(a->build, "");
        EXPECT_EQ(a->protocol_version, 1u);
      }
  EXPECT_TRUE(relayed);
}

TEST(Release, OurHelloSaysOurBuildOurRefutationsDoNot) {
  Driver d(config_with(0, 1, kBuildA));
  d.handle(1, {Alive{1, name(1), addr(1), {}, 1, kBuildA}});
  // Our first datagrams carry our Alive with our build.
  d.run_until(d.now + 2 * kSecond);
  bool hello = false;
  for (const Outgoing& o : d.sent)
    for (const Message& msg : o.messages)
      if (const Alive* a = std::get_if<Alive>(&msg); a != nullptr && a->node == name(0)) {
        hello = true;
        EXPECT_EQ(a->build, kBuildA);
      }
  EXPECT_TRUE(hello);
  // Suspected: the refutation repeats our life's news without the build.
  const std::size_t before = d.sent.size();
  d.handle(1, {Suspect{d.e.member(name(0))->incarnation, name(0), name(1)}});
  d.run_until(d.now + 2 * kSecond);
  bool refuted = false;
  for (std::size_t i = before; i < d.sent.size(); ++i)
    for (const Message& msg : d.sent[i].messages)
      if (const Alive* a = std::get_if<Alive>(&msg); a != nullptr && a->node == name(0)) {
        refuted = true;
        EXPECT_EQ(a->build, "");
        EXPECT_EQ(a->protocol_version, 1u);
      }
  EXPECT_TRUE(refuted);
  EXPECT_GE(d.e.counters().refutations, 1u);
}

// ---- the probe path: a ping that asks, an ack that says ----

// Runs `d` (n0) until `until`: every Ping it sends to a member of `peers`
// goes over the wire to that member's engine, and what it sends back to n0
// comes back over the wire (its acks); a Ping to anyone else is acked without a build
// (a peer before builds). Every Ping d sends is kept in `pings`.
void run_with_peers(Driver& d, std::map<std::size_t, Driver*> peers, std::uint64_t until,
                    std::vector<std::pair<std::size_t, Ping>>* pings = nullptr) {
  d.run_until(until, [&](const Outgoing& o) {
    const std::size_t to = o.to.ip[3] + 256u * o.to.ip[2];
    for (const Message& msg : over_the_wire(o.messages)) {
      const Ping* p = std::get_if<Ping>(&msg);
      if (p == nullptr) continue;
      if (pings != nullptr) pings->emplace_back(to, *p);
      const auto it = peers.find(to);
      if (it == peers.end()) {
        d.e.handle(o.to, {Ack{p->seq_no, name(to)}}, d.now);
        continue;
      }
      Driver& peer = *it->second;
      peer.now = d.now;
      const std::size_t first = peer.sent.size();
      peer.e.handle(addr(0), {*p}, peer.now);
      peer.collect();
      // Its acks only: what it piggybacks (its hello, with its build) would
      // tell n0 the build another way.
      for (std::size_t i = first; i < peer.sent.size(); ++i) {
        if (peer.sent[i].to != addr(0)) continue;
        Compound acks;
        for (const Message& m : over_the_wire(peer.sent[i].messages))
          if (std::holds_alternative<Ack>(m)) acks.push_back(m);
        d.e.handle(o.to, acks, d.now);
      }
    }
  });
}

TEST(Release, AMemberLearnedOnlyByGossipGetsItsBuildFromItsAckToOurProbe) {
  // n0 knows n1 first-hand, and n2 only from n1's relay of n2's Alive (no
  // build: relays carry none) and will never merge a sync entry of it.
  Driver d(config_with(0, 1, kBuildA));
  Driver n2(config_with(2, 1, kBuildB));
  // n2 has probed n0 (members probe each other each ring round): n0's
  // address receives its datagrams, and its ack may be larger than our ping.
  n2.e.prove_address(addr(0), n2.now);
  d.handle(1, {Alive{1, name(1), addr(1), {}, 1, kBuildA}, Alive{1, name(2), addr(2), {}, 1}});
  ASSERT_NE(d.e.member(name(2)), nullptr);
  ASSERT_EQ(d.e.member(name(2))->build(), "");
  // One ring round: a view of 3, each probed once in 2 probe intervals (3
  // for the random phase of the first).
  std::vector<std::pair<std::size_t, Ping>> pings;
  run_with_peers(d, {{2, &n2}}, d.now + 3 * d.e.config().probe_interval_ns, &pings);
  EXPECT_EQ(d.e.member(name(2))->build(), kBuildB);
  EXPECT_EQ(d.e.member(name(2))->protocol_version(), 1u);
  // The ping to n2 asked, the ones to n1 (whose build we know) did not.
  std::size_t asked = 0;
  for (const auto& [to, p] : pings) {
    if (to == 1) {
      EXPECT_FALSE(p.want_build);
    }
    if (to == 2 && p.want_build) ++asked;
  }
  EXPECT_EQ(asked, 1u);
  // Known: the next pings to n2 ask no more (steady state: nothing added).
  pings.clear();
  run_with_peers(d, {{2, &n2}}, d.now + 6 * d.e.config().probe_interval_ns, &pings);
  std::size_t to_n2 = 0;
  for (const auto& [to, p] : pings)
    if (to == 2) {
      ++to_n2;
      EXPECT_FALSE(p.want_build);
    }
  EXPECT_GE(to_n2, 2u);
  EXPECT_EQ(d.e.member(name(2))->build(), kBuildB);
}

TEST(Release, ARestartHeardByGossipShowsNoBuildUntilItsAckSaysTheNewOne) {
  Driver d(config_with(0, 1, kBuildA));
  d.handle(2, {Alive{1, name(2), addr(2), {}, 1, kBuildA}});
  ASSERT_EQ(d.e.member(name(2))->build(), kBuildA);
  // n2 restarted with build B; n0 hears of its new life from n1's relay.
  Driver n2(config_with(2, 1, kBuildB));
  d.handle(1, {Alive{1765000000, name(2), addr(2), {}, 1}});
  ASSERT_EQ(d.e.member(name(2))->incarnation, 1765000000u);
  EXPECT_EQ(d.e.member(name(2))->build(), "");  // not the old life's A
  // Its ack to our next probe says B.
  run_with_peers(d, {{2, &n2}}, d.now + 2 * d.e.config().probe_interval_ns);
  EXPECT_EQ(d.e.member(name(2))->build(), kBuildB);
  EXPECT_EQ(count_events(d.events, EventKind::kUpdate, name(2)), 0u);
}

TEST(Release, APingWithoutTheFlagGetsAnAckWithoutTheBuild) {
  // Two identical engines (same seed), pinged alike but for the flag.
  Driver plain(config_with(0, 1, kBuildA), 7);
  Driver asked(config_with(0, 1, kBuildA), 7);
  plain.handle(1, {Ping{5, name(0), name(1), addr(1), 0, false}});
  asked.handle(1, {Ping{5, name(0), name(1), addr(1), 0, true}});
  ASSERT_EQ(plain.sent.size(), 1u);
  ASSERT_EQ(asked.sent.size(), 1u);
  const Ack* a = find_msg<Ack>(plain.sent[0]);
  const Ack* b = find_msg<Ack>(asked.sent[0]);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  // Without the flag: the ack as before builds (seq and name, nothing else).
  EXPECT_EQ(*a, (Ack{5, name(0)}));
  EXPECT_EQ(exact_size(Message{*a}), exact_size(Message{Ack{5, name(0)}}));
  // With it: our build, and the datagram longer by that field alone.
  EXPECT_EQ(*b, (Ack{5, name(0), kBuildA}));
  EXPECT_EQ(encode(asked.sent[0].messages).size() - encode(plain.sent[0].messages).size(), 2 + kBuildA.size());
  // A ping without the flag is the bytes of one before the field.
  EXPECT_EQ(encode({Ping{5, name(0), name(1), addr(1), 9, false}}).size(),
            encode({Ping{5, name(0), name(1), addr(1), 9}}).size());
  EXPECT_EQ(encode({Ping{5, name(0), name(1), addr(1), 9, true}}).size(),
            encode({Ping{5, name(0), name(1), addr(1), 9}}).size() + 2);
}

TEST(Release, AnAcksOverLongBuildIsDroppedCountedAndTheMemberKept) {
  Driver d(config_with(0, 1, kBuildA));
  d.handle(1, {Alive{1, name(2), addr(2), {}, 1}});
  ASSERT_EQ(d.e.member(name(2))->build(), "");
  const std::string too_long(kMaxBuildBytes + 1, 'x');
  d.run_until(d.now + 3 * d.e.config().probe_interval_ns, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o); p != nullptr && p->want_build)
      d.e.handle(o.to, {Ack{p->seq_no, p->target, too_long}}, d.now);
  });
  ASSERT_NE(d.e.member(name(2)), nullptr);
  EXPECT_EQ(d.e.member(name(2))->status, MemberStatus::kAlive);
  EXPECT_EQ(d.e.member(name(2))->build(), "");
  EXPECT_GE(d.e.counters().build_drop_too_long, 1u);
  EXPECT_GE(d.e.counters().probe_ack_direct, 1u);
}

TEST(Release, AnOverLongOwnBuildIsRefusedByValidate) {
  EngineConfig c = config_with(0, 1, std::string(kMaxBuildBytes + 1, 'b'));
  EXPECT_NE(c.validate().find("build"), std::string::npos);
  c.build = std::string(kMaxBuildBytes, 'b');
  EXPECT_EQ(c.validate(), "");
}

}  // namespace
}  // namespace gw::cp::engine
