// Dissemination, driven by hand (engine_driver.h): the broadcast queue's use,
// piggybacking, retransmit limits, eager gossip of deaths, and gossip to the
// recently dead.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "control/codec.h"
#include "control/engine/engine.h"
#include "tests/unit/control/engine/engine_driver.h"

namespace gw::cp::engine {
namespace {

// ---------------------------------------------------------------- retransmit limits and piggybacking

TEST(Engine, BroadcastIsRetransmittedRetransmitLimitTimes) {
  Driver d(config());
  d.add_members(1, 9);  // N = 9 live: limit = 4 * ceil(log10(10)) = 4
  d.run_until(kStart + 30 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  });
  EXPECT_EQ(d.e.retransmit_limit(), 4u);
  ASSERT_TRUE(d.e.set_tags({{"role", "control-plane"}}, d.now));
  const std::uint64_t inc = d.e.incarnation();
  int carried = 0;
  d.run_until(d.now + 30 * kSecond, [&](const Outgoing& o) {
    for (const Message& m : o.messages)
      if (const Alive* a = std::get_if<Alive>(&m); a && a->node == name(0) && a->incarnation == inc) {
        ++carried;
        EXPECT_EQ(a->tags, (std::vector<Tag>{{"role", "control-plane"}}));
      }
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  });
  EXPECT_EQ(carried, 4);
}

TEST(Engine, WithoutTheRingASuspicionGoesOutItsOwnFewTimesAndTheDeathTheWholeLimit) {
  EngineConfig c = config();
  c.probe_ring = false;  // nobody knows who probes the suspect next: gossiped
  Driver d(c);
  d.add_members(1, 99);  // N = 99 live: limit 4 * ceil(log10(100)) = 8, a suspicion's 2 * 2
  ASSERT_EQ(d.e.retransmit_limit(), 8u);
  ASSERT_EQ(d.e.suspicion_retransmit_limit(), 4u);
  const auto answer = [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  };
  // Past young_member_ns: nobody is a newcomer any more.
  d.run_until(kStart + 90 * kSecond, answer);
  // Carried to anyone but the suspect (each ping to it carries the suspicion:
  // the buddy rule, apart from the broadcasts).
  const auto carried = [&](auto kind, std::size_t who) {
    int n = 0;
    d.run_until(d.now + 5 * kSecond, [&](const Outgoing& o) {
      for (const Message& m : o.messages)
        if (const auto* x = std::get_if<decltype(kind)>(&m); x && x->node == name(who) && o.to != addr(who)) ++n;
      answer(o);
    });
    return n;
  };
  d.handle(2, {Suspect{1, name(5), name(2)}});
  ASSERT_EQ(d.e.member(name(5))->status, MemberStatus::kSuspect);
  EXPECT_EQ(carried(Suspect{}, 5), 4);
  d.handle(3, {Dead{1, name(5), name(3)}});
  ASSERT_EQ(d.e.member(name(5))->status, MemberStatus::kDead);
  EXPECT_EQ(carried(Dead{}, 5), 8);
  // A newcomer's suspicion is how every member sees a storm coming: it goes
  // out the whole limit.
  d.add_members(200, 201);
  d.handle(2, {Suspect{1, name(200), name(2)}});
  ASSERT_EQ(d.e.member(name(200))->status, MemberStatus::kSuspect);
  EXPECT_EQ(carried(Suspect{}, 200), 8);
}

TEST(Engine, GossipGoesToGossipNodesPeersPerInterval) {
  Driver d(config());
  d.add_members(1, 20);
  // Collect the first gossip round after joining: the Alives of the new members.
  std::set<Address> gossip_peers;
  std::uint64_t first_round = 0;
  d.run_until(kStart + kSecond, [&](const Outgoing& o) {
    if (o.priority == PriorityClass::kGossip && find_msg<Ping>(o) == nullptr && find_msg<Ack>(o) == nullptr) {
      if (first_round == 0) first_round = d.now;
      if (d.now == first_round) gossip_peers.insert(o.to);
    }
  });
  EXPECT_EQ(gossip_peers.size(), 3u);
}

TEST(Engine, GossipReachesSuspectsButIndirectProbesUseOnlyAliveHelpers) {
  Driver d(config());
  d.add_members(1, 4);
  d.handle(9, {Suspect{1, name(1), name(9)}, Suspect{1, name(2), name(9)}, Suspect{1, name(3), name(9)}});
  // Every peer is suspected: gossip still goes out (to them).
  std::set<Address> gossiped;
  d.run_until(kStart + 500 * kMillisecond, [&](const Outgoing& o) {
    if (find_msg<Ping>(o) == nullptr && find_msg<IndirectPing>(o) == nullptr) gossiped.insert(o.to);
  });
  EXPECT_EQ(gossiped.size(), 3u);
  // ...but no suspect is asked to probe for us.
  int indirect = 0;
  d.run_until(kStart + 3 * kSecond, [&](const Outgoing& o) {
    if (find_msg<IndirectPing>(o) != nullptr) ++indirect;
  });
  EXPECT_EQ(indirect, 0);
}

TEST(Engine, PiggybackedDatagramsFitMaxPacketBytes) {
  EngineConfig c = config();
  c.max_packet_bytes = 600;
  Driver d(c);
  std::vector<Tag> tags = {{"role", std::string(100, 'x')}};
  Compound msgs;
  for (std::size_t i = 1; i < 200; ++i) msgs.push_back(alive(i, 1, tags));
  d.handle(1, msgs);
  d.handle(2, {Ping{1, name(0), name(2), addr(2)}});
  const Outgoing& ack = d.sent.back();
  EXPECT_GT(ack.messages.size(), 2u);
  EXPECT_LE(encode(ack.messages).size(), 600u);
  d.run_until(kStart + 5 * kSecond);
  for (const Outgoing& o : d.sent) EXPECT_LE(encode(o.messages).size(), 600u);
}

TEST(Engine, BroadcastQueueGrowsWithTheTableAndUrgentNewsLeads) {
  EngineConfig c = config();
  c.max_broadcasts = 16;
  c.admit_rate = 100000;
  c.admit_burst = 100000;
  Driver d(c);
  Compound msgs;
  for (std::size_t i = 1; i < 200; ++i) msgs.push_back(alive(i));
  // A join of 199 members into a configured bound of 16: one entry per member
  // always fits, so no news is dropped (the 2,048-member join of the issue
  // lost millions of Alive messages to a fixed bound).
  d.handle(1, msgs);
  EXPECT_EQ(d.e.broadcasts().size(), 200u);  // theirs and our own Alive
  EXPECT_GE(d.e.broadcasts().capacity(), d.e.table().size());
  for (std::uint64_t drops : d.e.counters().broadcast_drop) EXPECT_EQ(drops, 0u);
  d.handle(2, {Dead{1, name(5), name(2)}, Leave{1, name(6)}});
  // The next datagram leads with them.
  d.handle(3, {Ping{1, name(0), name(3), addr(3)}});
  const Outgoing& o = d.sent.back();
  EXPECT_EQ(o.priority, PriorityClass::kUrgent);
  ASSERT_GE(o.messages.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<Leave>(o.messages[1]) || std::holds_alternative<Dead>(o.messages[1]));
  EXPECT_TRUE(std::holds_alternative<Leave>(o.messages[2]) || std::holds_alternative<Dead>(o.messages[2]));
}

TEST(Engine, ADeathNamesItsDeclarerOnlyWhenItIsOurs) {
  Driver d(config());
  d.add_members(1, 11);
  // Heard: relayed without the declarer's name.
  d.handle(2, {Dead{1, name(1), name(2)}});
  // Ours: a suspicion that runs out here.
  d.handle(3, {Suspect{1, name(4), name(3)}});
  d.run_until(*d.e.suspicion_deadline(name(4)));
  ASSERT_EQ(d.e.member(name(4))->status, MemberStatus::kDead);
  // Every copy we sent of either death, gossip and piggyback alike.
  std::map<std::string, std::set<std::string>> declarer;
  for (const Outgoing& o : d.sent)
    for (const Message& m : o.messages)
      if (const Dead* x = std::get_if<Dead>(&m)) declarer[x->node].insert(x->from);
  EXPECT_EQ(declarer, (std::map<std::string, std::set<std::string>>{{name(1), {""}}, {name(4), {name(0)}}}));
}

// ---------------------------------------------------------------- eager gossip

TEST(Engine, DeathOfAnEstablishedMemberGoesOutAtOnceInThreeQuickRounds) {
  EngineConfig c = config();
  Driver d(c);
  d.add_members(1, 20);
  run_with_established(d, 20, kStart + 300 * kSecond);
  const std::uint64_t gap = c.gossip_interval_ns / 10;
  // Gossip rounds only (pings and acks carry broadcasts too).
  auto rounds_with = [&](const std::string& node, std::uint64_t from, std::uint64_t until) {
    std::set<std::uint64_t> at;
    for (std::size_t i = 0; i < d.sent.size(); ++i) {
      if (d.sent_at[i] < from || d.sent_at[i] > until) continue;
      if (find_msg<Ping>(d.sent[i]) != nullptr || find_msg<Ack>(d.sent[i]) != nullptr) continue;
      for (const Message& m : d.sent[i].messages)
        if (const Dead* x = std::get_if<Dead>(&m); x && x->node == node) at.insert(d.sent_at[i]);
    }
    return at;
  };
  // Heard of n5's death (an established member): passed on within a tenth of
  // the gossip interval, and twice more a tenth apart.
  const std::uint64_t t0 = d.now;
  d.handle(1, {Dead{1, name(5), name(1)}});
  run_with_established(d, 20, t0 + 3 * gap + 1);
  const std::set<std::uint64_t> eager = rounds_with(name(5), t0, t0 + 3 * gap);
  ASSERT_EQ(eager.size(), 3u);
  EXPECT_LE(*eager.begin(), t0 + gap);
  EXPECT_EQ(d.e.counters().gossip_eager, 1u);
  // Another death within the interval (a mass crash) brings no second series:
  // it goes with the next regular round, an interval after the series' last.
  d.handle(1, {Dead{1, name(6), name(1)}});
  run_with_established(d, 20, *eager.rbegin() + c.gossip_interval_ns + 1);
  const std::set<std::uint64_t> regular = rounds_with(name(6), t0, d.now);
  ASSERT_FALSE(regular.empty());
  EXPECT_EQ(*regular.begin(), *eager.rbegin() + c.gossip_interval_ns);
  EXPECT_EQ(d.e.counters().gossip_eager, 1u);
  // An interval after the first series, the next death starts one again.
  d.handle(1, {Dead{1, name(7), name(1)}});
  EXPECT_EQ(d.e.counters().gossip_eager, 2u);
  // A newcomer's death (in a storm there are thousands) waits for its round.
  run_with_established(d, 20, d.now + 2 * c.gossip_interval_ns);
  d.add_members(50, 51);
  d.handle(1, {Dead{1, name(50), name(1)}});
  EXPECT_EQ(d.e.counters().gossip_eager, 2u);
  // Our own leave goes out at once too.
  const std::uint64_t t1 = d.now;
  d.e.leave(d.now);
  d.collect();
  d.run_until(t1 + gap + 1);
  bool left = false;
  for (std::size_t i = 0; i < d.sent.size(); ++i)
    for (const Message& m : d.sent[i].messages)
      if (const Leave* x = std::get_if<Leave>(&m); x && x->node == name(0) && d.sent_at[i] <= t1 + gap) left = true;
  EXPECT_TRUE(left);
}

// ---------------------------------------------------------------- gossip to the dead

// A gossip datagram: broadcasts only (no probe, ack or sync).
bool is_gossip(const Outgoing& o) {
  for (const Message& m : o.messages)
    if (std::holds_alternative<Ping>(m) || std::holds_alternative<Ack>(m) || std::holds_alternative<IndirectPing>(m) ||
        std::holds_alternative<Nack>(m) || std::holds_alternative<SyncRequest>(m) ||
        std::holds_alternative<SyncResponse>(m))
      return false;
  return true;
}

// As run_answering, one gossip interval at a time with fresh user data queued
// before each: a gossip round with nothing to carry sends nothing, and these
// tests count where the rounds go.
template <typename Fn>
void gossip_answering(Driver& d, std::uint64_t until, const std::set<std::size_t>& silent, Fn&& on_packet) {
  const std::uint64_t step = d.e.config().gossip_interval_ns;
  for (std::uint64_t k = 0; d.now < until; ++k) {
    d.e.send_user_data("news " + std::to_string(k), d.now);
    run_answering(d, std::min(until, d.now + step), silent, on_packet);
  }
}

TEST(Engine, NoGossipToNewcomersThatDiedInAStorm) {
  EngineConfig c = storm_config();
  Driver d(c);
  // Ten newcomers die: from the fifth on (n104), in a storm. Then an
  // established member.
  start_storm(d);
  ASSERT_TRUE(d.e.in_storm(d.now));
  d.handle(1, {Dead{1, name(8), name(1)}});
  std::set<std::size_t> silent = {8};
  for (std::size_t i = 100; i < 110; ++i) silent.insert(i);
  std::map<std::size_t, std::size_t> gossip_to;
  gossip_answering(d, d.now + 25 * kSecond, silent, [&](const Outgoing& o) {
    if (is_gossip(o)) ++gossip_to[index_of(o.to)];
  });
  ASSERT_TRUE(d.e.in_storm(d.now));
  EXPECT_GT(gossip_to[8], 0u);  // the established dead hear of it, and may refute
  for (std::size_t i = 104; i < 110; ++i) EXPECT_EQ(gossip_to[i], 0u) << name(i);
}

TEST(Engine, NoGossipToAProbationerThatDied) {
  // In a surge (no storm, so this is not the rule above).
  Driver d(surge_config());
  start_surge(d);
  d.handle(3, {alive(200)});
  ASSERT_TRUE(d.e.member(name(200))->probation);
  d.handle(1, {Dead{1, name(200), name(1)}});
  d.handle(1, {Dead{1, name(8), name(1)}});
  ASSERT_FALSE(d.e.in_storm(d.now));
  std::map<std::size_t, std::size_t> gossip_to;
  gossip_answering(d, d.now + 25 * kSecond, {8, 200}, [&](const Outgoing& o) {
    if (is_gossip(o)) ++gossip_to[index_of(o.to)];
  });
  EXPECT_GT(gossip_to[8], 0u);
  EXPECT_EQ(gossip_to[200], 0u);
}

TEST(Engine, AtMostOneGossipDatagramARoundGoesToTheRecentlyDead) {
  Driver d(config());
  d.add_members(1, 60);
  run_with_established(d, 60, kStart + 300 * kSecond);
  // A mass crash: 50 established members dead, 10 of us left.
  for (std::size_t i = 10; i < 60; ++i) d.handle(1, {Dead{1, name(i), name(1)}});
  ASSERT_EQ(d.e.num_live(), 10u);
  std::set<std::size_t> silent;
  for (std::size_t i = 10; i < 60; ++i) silent.insert(i);
  std::map<std::uint64_t, std::size_t> to_dead;  // by round (time sent)
  std::size_t rounds = 0;
  std::uint64_t last = 0;
  gossip_answering(d, d.now + 20 * kSecond, silent, [&](const Outgoing& o) {
    if (!is_gossip(o)) return;
    if (d.now != last) ++rounds;
    last = d.now;
    if (index_of(o.to) >= 10) ++to_dead[d.now];
  });
  ASSERT_GE(rounds, 90u);
  std::size_t total = 0;
  for (const auto& [at, n] : to_dead) {
    EXPECT_LE(n, 1u) << "round at " << at;
    total += n;
  }
  // ... and that one slot is taken in most rounds (50 dead against 9 live).
  EXPECT_GE(total, rounds / 2);
}

TEST(Engine, InAStormGossipPrefersSettledMembersOverYoungOnes) {
  EngineConfig c = storm_config();
  c.surge_min_arrivals = 0;  // the 20 newcomers in the view, not on probation
  // Share of the gossip datagrams to the live that go to young members, with
  // 20 settled (n1..n20) and 20 young (n100..n119), all answering.
  auto young_share = [&](bool storm) {
    Driver d(c, 7);
    d.add_members(1, 21);
    run_with_established(d, 21, kStart + 300 * kSecond);
    d.add_members(100, 120);
    std::set<std::size_t> silent;
    if (storm) {
      d.add_members(200, 205);
      for (std::size_t i = 200; i < 205; ++i) {
        d.handle(1, {Dead{1, name(i), name(1)}});
        silent.insert(i);
      }
    }
    EXPECT_EQ(d.e.in_storm(d.now), storm);
    EXPECT_EQ(d.e.num_live(), 41u);
    std::size_t young = 0, settled = 0;
    gossip_answering(d, d.now + 25 * kSecond, silent, [&](const Outgoing& o) {
      if (!is_gossip(o)) return;
      const std::size_t to = index_of(o.to);
      if (to >= 1 && to <= 20) ++settled;
      if (to >= 100 && to < 120) ++young;
    });
    EXPECT_EQ(d.e.in_storm(d.now), storm);
    EXPECT_GE(young + settled, 300u);
    return static_cast<double>(young) / static_cast<double>(young + settled);
  };
  const double in_storm = young_share(true);
  const double calm = young_share(false);
  EXPECT_LT(in_storm, 0.25);
  EXPECT_GT(calm, 0.4);
  EXPECT_LT(calm, 0.6);
}

}  // namespace
}  // namespace gw::cp::engine
