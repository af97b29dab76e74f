// The engine's member state, driven by hand (engine_driver.h): alive, suspect,
// dead and leave merged by incarnation, refutation, tombstones and the
// graveyard, incarnation bounds, corrections of stale news, events, tags, user
// data, the outbox, config and determinism; the member table itself.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "control/codec.h"
#include "control/engine/engine.h"
#include "tests/unit/control/engine/engine_driver.h"

namespace gw::cp::engine {
namespace {

// ---------------------------------------------------------------- output, timers and determinism

// Draining into a vector of the host's: the same datagrams and events as the
// returning forms, the vector emptied first, the engine's own emptied.
TEST(Engine, TakingOutputIntoAVectorGivesItAllAndEmptiesTheEngine) {
  Engine e(config(0), 1, kStart);
  const std::vector<Address> seeds = {addr(1), addr(2)};
  e.join(seeds, kStart);
  std::vector<Outgoing> out(3);  // whatever it held goes
  e.take_outbox(out);
  ASSERT_EQ(out.size(), 2u);
  std::set<Address> to;
  for (const Outgoing& o : out) {
    to.insert(o.to);
    EXPECT_NE(find_msg<SyncRequest>(o), nullptr);
  }
  EXPECT_EQ(to, (std::set<Address>{addr(1), addr(2)}));
  e.take_outbox(out);
  EXPECT_TRUE(out.empty());

  e.handle(addr(3), {alive(3), alive(4)}, kStart);
  std::vector<MemberEvent> events(5);
  e.take_events(events);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(count_events(events, EventKind::kJoin, name(3)), 1u);
  EXPECT_EQ(count_events(events, EventKind::kJoin, name(4)), 1u);
  e.take_events(events);
  EXPECT_TRUE(events.empty());
  EXPECT_TRUE(e.take_events().empty());
}

std::vector<std::uint8_t> run_single(std::uint64_t seed) {
  Driver d(config(), seed);
  d.add_members(1, 30);
  std::vector<std::uint8_t> bytes;
  d.run_until(kStart + 20 * kSecond, [&](const Outgoing& o) {
    const std::vector<std::uint8_t> b = encode(o.messages);
    bytes.insert(bytes.end(), o.to.ip.begin(), o.to.ip.end());
    bytes.insert(bytes.end(), b.begin(), b.end());
    // Every third member answers.
    if (const Ping* p = find_msg<Ping>(o); p && o.to.ip[3] % 3 == 0)
      d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  });
  return bytes;
}

TEST(Engine, DeterministicOutboxForSameSeed) {
  EXPECT_EQ(run_single(11), run_single(11));
  EXPECT_NE(run_single(11), run_single(12));
}

TEST(Engine, NextDeadlineAlwaysAdvances) {
  Driver d(config());
  d.add_members(1, 5);
  std::uint64_t last = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t next = d.e.next_deadline();
    ASSERT_GT(next, last);
    ASSERT_NE(next, UINT64_MAX);
    d.now = next;
    d.e.tick(next);
    d.collect();
    last = next;
  }
}

// ---------------------------------------------------------------- merging alive, suspect, dead and leave

TEST(Engine, NewerAliveClearsSuspicionOlderIsIgnored) {
  Driver d(config());
  d.add_members(1, 4);
  d.handle(2, {Suspect{1, name(1), name(2)}});
  d.handle(1, {alive(1, 1)});  // same incarnation: does not refute
  EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kSuspect);
  EXPECT_EQ(d.e.counters().update_drop_stale, 1u);
  d.handle(1, {alive(1, 2)});
  EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kAlive);
  EXPECT_FALSE(d.e.suspicion_deadline(name(1)).has_value());
  d.handle(2, {Suspect{1, name(1), name(2)}});  // older incarnation
  EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kAlive);
}

TEST(Engine, SuspicionAboutUsIsRefutedUrgently) {
  Driver d(config());
  d.add_members(1, 4);
  const std::uint64_t inc = d.e.incarnation();
  d.handle(1, {Suspect{inc, name(0), name(1)}});
  EXPECT_EQ(d.e.incarnation(), inc + 1);
  EXPECT_EQ(d.e.counters().refutations, 1u);
  EXPECT_EQ(d.e.health_score(), 1u);  // Lifeguard: we may be the slow one
  // The refutation rides on our next datagram, which becomes urgent.
  d.handle(2, {Ping{5, name(0), name(2), addr(2)}});
  const Outgoing& ack = d.sent.back();
  ASSERT_NE(find_msg<Ack>(ack), nullptr);
  const Alive* a = find_msg<Alive>(ack);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->node, name(0));
  EXPECT_EQ(a->incarnation, inc + 1);
  EXPECT_EQ(ack.priority, PriorityClass::kUrgent);
  // Dead about us: refuted too, above the claimed incarnation.
  d.handle(1, {Dead{inc + 5, name(0), name(1)}});
  EXPECT_EQ(d.e.incarnation(), inc + 6);
  EXPECT_EQ(d.e.counters().refutations, 2u);
}

TEST(Engine, AliveWithoutAddressIsRefused) {
  Driver d(config());
  d.handle(1, {Alive{1, name(1), {}, {}, 1}});
  EXPECT_EQ(d.e.member(name(1)), nullptr);
  EXPECT_EQ(d.e.counters().alive_drop_no_addr, 1u);
  d.handle(1, {Alive{1, std::string(300, 'x'), addr(1), {}, 1}, Alive{1, "", addr(1), {}, 1}});
  EXPECT_EQ(d.e.counters().alive_drop_bad_name, 2u);
  EXPECT_EQ(d.e.table().size(), 1u);
}

TEST(Engine, TombstonesBlockStaleAliveAndHigherIncarnationRejoins) {
  EngineConfig c = config();
  c.tombstone_ttl_ns = 60 * kSecond;
  Driver d(c);
  d.add_members(1, 4);
  d.handle(2, {Dead{3, name(1), name(2)}});
  EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kDead);
  EXPECT_EQ(count_events(d.events, EventKind::kFailed, name(1)), 1u);
  d.handle(1, {alive(1, 3)});
  d.handle(1, {alive(1, 2)});
  EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kDead);
  EXPECT_EQ(d.e.counters().alive_drop_tombstone, 2u);
  // A restart with a higher incarnation is a rejoin.
  d.handle(1, {alive(1, 4)});
  EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kAlive);
  EXPECT_EQ(count_events(d.events, EventKind::kJoin, name(1)), 2u);

  // Leave: recorded as Left, then forgotten after the TTL.
  d.handle(2, {Leave{1, name(2)}});
  EXPECT_EQ(d.e.member(name(2))->status, MemberStatus::kLeft);
  EXPECT_EQ(count_events(d.events, EventKind::kLeave, name(2)), 1u);
  const std::uint64_t left_at = d.now;
  d.run_until(left_at + 59 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  });
  ASSERT_NE(d.e.member(name(2)), nullptr);
  d.run_until(left_at + 61 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  });
  EXPECT_EQ(d.e.member(name(2)), nullptr);
  EXPECT_EQ(d.e.counters().tombstones_expired, 1u);

  // The tombstone is gone, its trace is not: stale gossip about the old life
  // (incarnation 1, still in some peer's sync) cannot bring it back ...
  ASSERT_EQ(d.e.table().buried(name(2)), std::optional<std::uint64_t>(1));
  const std::size_t joins_before = count_events(d.events, EventKind::kJoin, name(2));
  d.handle(3, {alive(2, 1)});
  EXPECT_EQ(d.e.member(name(2)), nullptr);
  EXPECT_EQ(d.e.counters().alive_drop_graveyard, 1u);
  d.handle(3, {SyncRequest{7, name(3), false, 0, 1, {MemberState{name(2), addr(2), 1, MemberStatus::kAlive, {}}}}});
  EXPECT_EQ(d.e.member(name(2)), nullptr);
  EXPECT_EQ(d.e.counters().alive_drop_graveyard, 2u);
  EXPECT_EQ(count_events(d.events, EventKind::kJoin, name(2)), joins_before);
  // ... but a restart (a newer incarnation) does.
  d.handle(2, {alive(2, 2)});
  ASSERT_NE(d.e.member(name(2)), nullptr);
  EXPECT_EQ(d.e.member(name(2))->status, MemberStatus::kAlive);
}

// gossipctl force-leave (issue 18): the host hands the engine a failed
// member's Leave at the incarnation it died with. Old code ignored it (already
// a tombstone), so the member stayed failed and a reconnect target for ever.
TEST(Engine, AFailedMembersLeaveMarksItLeftAndNoSyncBringsItBack) {
  Driver d(config());
  d.add_members(1, 4);
  d.handle(2, {Dead{3, name(1), name(2)}});
  ASSERT_EQ(d.e.member(name(1))->status, MemberStatus::kDead);
  d.sent.clear();
  d.e.handle(addr(0), {Leave{3, name(1)}}, d.now);
  d.collect();
  ASSERT_EQ(d.e.member(name(1))->status, MemberStatus::kLeft);
  EXPECT_EQ(count_events(d.events, EventKind::kLeave, name(1)), 1u);
  // The Leave goes out to the others (piggybacked on the next datagrams).
  bool leave_sent = false;
  d.run_until(d.now + 3 * kSecond, [&](const Outgoing& o) {
    for (const Message& m : o.messages)
      if (const Leave* l = std::get_if<Leave>(&m); l != nullptr && l->node == name(1)) leave_sent = true;
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  });
  EXPECT_TRUE(leave_sent);
  // A peer that still holds the old life (alive or failed at incarnation 3)
  // syncs with us: it stays left.
  d.handle(3, {SyncRequest{7,
                           name(3),
                           false,
                           0,
                           1,
                           {MemberState{name(1), addr(1), 3, MemberStatus::kAlive, {}},
                            MemberState{name(2), addr(2), 1, MemberStatus::kAlive, {}}}}});
  d.handle(3, {SyncRequest{8, name(3), false, 0, 1, {MemberState{name(1), addr(1), 3, MemberStatus::kDead, {}}}}});
  d.handle(3, {alive(1, 3)});
  EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kLeft);
  // Our own syncs carry it as left.
  bool synced_left = false;
  for (const auto& o : d.sent)
    for (const Message& m : o.messages)
      if (const SyncResponse* r = std::get_if<SyncResponse>(&m))
        for (const MemberState& st : r->members)
          if (st.node == name(1) && st.status == MemberStatus::kLeft) synced_left = true;
  EXPECT_TRUE(synced_left);
  // A restart of the member (a newer incarnation) is a rejoin, as for any tombstone.
  d.handle(1, {alive(1, 4)});
  EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kAlive);
}

TEST(Engine, DeathHeardBeforeLifeKeepsTheMemberOut) {
  Driver d(config());
  // The Dead overtakes the Alive (different paths through the cluster).
  d.handle(2, {Dead{5, "ghost", name(2)}});
  EXPECT_EQ(d.e.member("ghost"), nullptr);
  EXPECT_EQ(d.e.counters().update_drop_unknown, 1u);
  d.handle(3, {Alive{5, "ghost", addr(9), {}, 1}});
  EXPECT_EQ(d.e.member("ghost"), nullptr);
  EXPECT_EQ(d.e.counters().alive_drop_graveyard, 1u);
  EXPECT_TRUE(d.events.empty());
  // A newer life is a member.
  d.handle(3, {Alive{6, "ghost", addr(9), {}, 1}});
  ASSERT_NE(d.e.member("ghost"), nullptr);
  EXPECT_EQ(count_events(d.events, EventKind::kJoin, "ghost"), 1u);
}

TEST(Engine, LeaveIsUrgentAndDoneAfterEnoughTransmissions) {
  Driver d(config());
  d.add_members(1, 9);
  d.run_until(kStart + 20 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  });
  d.e.leave(d.now);
  EXPECT_FALSE(d.e.leave_done());
  int carried = 0;
  std::uint64_t done_at = 0;
  d.run_until(d.now + 10 * kSecond, [&](const Outgoing& o) {
    if (const Leave* l = find_msg<Leave>(o); l && l->node == name(0)) {
      ++carried;
      EXPECT_EQ(o.priority, PriorityClass::kUrgent);
    }
    EXPECT_EQ(find_msg<Ping>(o), nullptr) << "a leaving member stops probing";
    if (done_at == 0 && d.e.leave_done()) done_at = d.now;
  });
  EXPECT_TRUE(d.e.leave_done());
  EXPECT_EQ(carried, static_cast<int>(d.e.retransmit_limit()));
  // Hearing our own Leave back is not refuted.
  d.handle(1, {Leave{d.e.incarnation(), name(0)}});
  EXPECT_EQ(d.e.counters().refutations, 0u);
}

TEST(Engine, LeaveAloneIsDoneAtOnce) {
  Driver d(config());
  d.e.leave(d.now);
  EXPECT_TRUE(d.e.leave_done());
}

// ---------------------------------------------------------------- corrections of stale news

TEST(Engine, StaleNewsOfADeadNewcomerIsAnsweredWithTheDeath) {
  Driver d(config());
  d.add_members(2, 4);  // established
  d.run_until(kStart + 300 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  });
  d.add_members(1, 2);  // a newcomer ...
  d.now += kSecond;
  d.handle(2, {Dead{3, name(1), name(2)}});  // ... that died young
  ASSERT_EQ(d.e.member(name(1))->status, MemberStatus::kDead);
  const std::size_t before = d.sent.size();
  // Member 3 still spreads its life: it is told, in one urgent datagram.
  d.handle(3, {alive(1, 3), Suspect{3, name(1), name(3)}});
  ASSERT_EQ(d.sent.size(), before + 1);
  const Outgoing& o = d.sent.back();
  EXPECT_EQ(o.to, addr(3));
  EXPECT_EQ(o.priority, PriorityClass::kUrgent);
  ASSERT_EQ(o.messages.size(), 1u);
  const Dead* dead = std::get_if<Dead>(&o.messages[0]);
  ASSERT_NE(dead, nullptr);
  EXPECT_EQ(dead->node, name(1));
  EXPECT_EQ(dead->incarnation, 3u);
  EXPECT_EQ(d.e.counters().stale_corrections, 1u);
  // News newer than the death (a restart) is not corrected but applied.
  d.handle(3, {alive(1, 4)});
  EXPECT_EQ(d.sent.size(), before + 1);
  EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kAlive);
  // An established member's death may be a partition's false verdict: not
  // spread as a verdict to those who still see it alive. The sender gets our
  // suspicion (it suspects, and the member refutes if alive), the member
  // itself is told that we hold it dead; both once.
  d.handle(2, {Dead{1, name(3), name(2)}});
  ASSERT_EQ(d.e.member(name(3))->status, MemberStatus::kDead);
  const std::size_t after_dead = d.sent.size();
  d.handle(4, {alive(3, 1)});
  int suspects_to_sender = 0, deaths_to_member = 0, deaths_to_sender = 0;
  for (std::size_t i = after_dead; i < d.sent.size(); ++i) {
    const Outgoing& out = d.sent[i];
    for (const Message& msg : out.messages) {
      const Suspect* su = std::get_if<Suspect>(&msg);
      const Dead* de = std::get_if<Dead>(&msg);
      if (su != nullptr && su->node == name(3) && out.to == addr(4)) ++suspects_to_sender;
      if (de != nullptr && de->node == name(3) && out.to == addr(3)) ++deaths_to_member;
      if (de != nullptr && de->node == name(3) && out.to == addr(4)) ++deaths_to_sender;
    }
  }
  EXPECT_EQ(suspects_to_sender, 1);
  EXPECT_EQ(deaths_to_member, 1);
  EXPECT_EQ(deaths_to_sender, 0);
  EXPECT_EQ(d.e.counters().dead_told, 1u);
  const std::size_t after_told = d.sent.size();
  d.handle(4, {alive(3, 1)});
  EXPECT_EQ(d.sent.size(), after_told);
  // A left member is answered with its Leave (its own word), established or not.
  d.handle(2, {Leave{1, name(2)}});
  const std::size_t after_leave = d.sent.size();
  d.handle(4, {alive(2, 1)});
  ASSERT_EQ(d.sent.size(), after_leave + 1);
  EXPECT_NE(std::get_if<Leave>(&d.sent.back().messages[0]), nullptr);
}

TEST(Engine, StaleSuspicionOrDeathIsAnsweredWithTheNewerAlive) {
  Driver d(config());
  d.add_members(1, 6);
  d.handle(3, {alive(3, 5)});
  ASSERT_EQ(d.e.member(name(3))->incarnation, 5u);
  auto answer_to = [&](std::size_t from, Compound msgs) -> const Outgoing* {
    const std::size_t before = d.sent.size();
    d.handle(from, std::move(msgs));
    if (d.sent.size() != before + 1) return nullptr;
    return &d.sent.back();
  };
  auto carries_only_alive = [](const Outgoing& o, const std::string& node, std::uint64_t inc) {
    if (o.messages.size() != 1) return false;
    const Alive* a = std::get_if<Alive>(&o.messages[0]);
    return a != nullptr && a->node == node && a->incarnation == inc;
  };
  // n4 missed n3's refutation: told, in one urgent datagram back.
  const Outgoing* o = answer_to(4, {Suspect{3, name(3), name(4)}});
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->to, addr(4));
  EXPECT_EQ(o->priority, PriorityClass::kUrgent);
  EXPECT_TRUE(carries_only_alive(*o, name(3), 5));
  EXPECT_EQ(std::get<Alive>(o->messages[0]).addr, addr(3));
  EXPECT_EQ(d.e.counters().stale_corrections, 1u);
  o = answer_to(4, {Dead{3, name(3), name(4)}});
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->to, addr(4));
  EXPECT_TRUE(carries_only_alive(*o, name(3), 5));
  EXPECT_EQ(d.e.counters().stale_corrections, 2u);
  // Both in one datagram: one Alive.
  o = answer_to(2, {Suspect{4, name(3), name(2)}, Dead{4, name(3), name(2)}});
  ASSERT_NE(o, nullptr);
  EXPECT_TRUE(carries_only_alive(*o, name(3), 5));
  EXPECT_EQ(d.e.member(name(3))->status, MemberStatus::kAlive);
  EXPECT_EQ(d.e.counters().suspicions, 0u);
  // About us: suspected at 0, we refute (1); a suspicion at 0 later is
  // answered with our Alive at 1.
  d.handle(2, {Suspect{0, name(0), name(2)}});
  ASSERT_EQ(d.e.incarnation(), 1u);
  o = answer_to(5, {Suspect{0, name(0), name(5)}});
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->to, addr(5));
  EXPECT_TRUE(carries_only_alive(*o, name(0), 1));
  EXPECT_EQ(d.e.incarnation(), 1u);  // no second refutation
}

TEST(Engine, ASuspicionOfAnEstablishedMemberWeHoldDeadIsConfirmed) {
  Driver d(config());
  d.add_members(1, 9);
  run_with_established(d, 9, kStart + 300 * kSecond);
  d.handle(2, {Dead{1, name(5), name(2)}});
  ASSERT_EQ(d.e.member(name(5))->status, MemberStatus::kDead);
  // n4 suspects n5 itself, with everyone else past it: our Suspect is the
  // independent confirmation it would otherwise wait for, not our Dead.
  std::size_t before = d.sent.size();
  d.handle(4, {Suspect{1, name(5), name(4)}});
  ASSERT_EQ(d.sent.size(), before + 1);
  const Outgoing* o = &d.sent.back();
  EXPECT_EQ(o->to, addr(4));
  EXPECT_EQ(o->priority, PriorityClass::kUrgent);
  ASSERT_EQ(o->messages.size(), 1u);
  const Suspect* s = std::get_if<Suspect>(&o->messages[0]);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->node, name(5));
  EXPECT_EQ(s->incarnation, 1u);
  EXPECT_EQ(s->from, name(0));
  EXPECT_EQ(d.e.counters().stale_corrections, 1u);
  // Once per sender and member: n4 may hold n5 dead by now too and confirm
  // back (our own Suspect), which must not start a confirmation ping-pong.
  before = d.sent.size();
  d.handle(4, {Suspect{1, name(5), name(4)}});
  EXPECT_EQ(d.sent.size(), before);
  // Another sender still gets its confirmation.
  d.handle(6, {Suspect{1, name(5), name(6)}});
  ASSERT_EQ(d.sent.size(), before + 1);
  EXPECT_EQ(d.sent.back().to, addr(6));
  // A member that died young (a newcomer) is answered with our Dead.
  d.add_members(50, 51);
  d.now += kSecond;
  d.handle(2, {Dead{1, name(50), name(2)}});
  ASSERT_EQ(d.e.member(name(50))->status, MemberStatus::kDead);
  before = d.sent.size();
  d.handle(4, {Suspect{1, name(50), name(4)}});
  ASSERT_EQ(d.sent.size(), before + 1);
  o = &d.sent.back();
  ASSERT_EQ(o->messages.size(), 1u);
  const Dead* dead = std::get_if<Dead>(&o->messages[0]);
  ASSERT_NE(dead, nullptr);
  EXPECT_EQ(dead->node, name(50));
  EXPECT_EQ(dead->from, name(0));
}

// ---------------------------------------------------------------- user data

TEST(Engine, UserDataIsGossipedAndDelivered) {
  Driver a(config(0));
  a.add_members(1, 3);
  a.e.send_user_data("hello", a.now);
  a.e.send_user_data("hello again", a.now);  // replaces the unsent one
  std::vector<std::string> carried;
  a.run_until(kStart + kSecond, [&](const Outgoing& o) {
    for (const Message& m : o.messages)
      if (const UserData* u = std::get_if<UserData>(&m)) carried.push_back(u->data);
  });
  ASSERT_FALSE(carried.empty());
  for (const std::string& c : carried) EXPECT_EQ(c, "hello again");

  Driver b(config(1));
  b.handle(0, {UserData{name(0), "hello again"}});
  const std::vector<UserData> got = b.e.take_user_data();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].source, name(0));
  EXPECT_EQ(b.e.counters().user_data_in, 1u);
  EXPECT_TRUE(b.e.take_user_data().empty());
}

// ---------------------------------------------------------------- config

TEST(Engine, PresetsValidateAndErrorsNameTheField) {
  for (EngineConfig c : {EngineConfig::lan(), EngineConfig::wan(), EngineConfig::local()}) {
    c.name = "a";
    c.addr = addr(1);
    EXPECT_EQ(c.validate(), "");
  }
  EngineConfig c = config();
  c.probe_timeout_ns = c.probe_interval_ns;
  EXPECT_EQ(c.validate().rfind("probe_timeout_ns:", 0), 0u);
  c = config();
  c.name.clear();
  EXPECT_EQ(c.validate().rfind("name:", 0), 0u);
  c = config();
  c.suspicion_retransmit_mult = 0;
  EXPECT_EQ(c.validate().rfind("suspicion_retransmit_mult:", 0), 0u);
  EXPECT_LT(EngineConfig::local().probe_timeout_ns, EngineConfig::lan().probe_timeout_ns);
  EXPECT_GT(EngineConfig::wan().probe_interval_ns, EngineConfig::lan().probe_interval_ns);
}

TEST(Engine, ZeroIntervalsStillAdvance) {
  EngineConfig c = config();
  c.probe_interval_ns = 0;
  c.gossip_interval_ns = 0;
  Driver d(c);
  d.add_members(1, 3);
  std::uint64_t last = 0;
  for (int i = 0; i < 100; ++i) {
    const std::uint64_t next = d.e.next_deadline();
    ASSERT_GT(next, last);
    d.now = next;
    d.e.tick(next);
    last = next;
  }
}

}  // namespace
}  // namespace gw::cp::engine
