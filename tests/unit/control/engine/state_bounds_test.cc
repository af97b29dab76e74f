// The engine's member state at its bounds, driven by hand (engine_driver.h):
// the graveyard and the member table bounded, oversized tags, incarnations far
// in the future, our name or a live member's address claimed without a newer
// incarnation; the member table itself (pages by id, the order outside the
// view). The rest of the member state is in state_test.cc.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "control/engine/engine.h"
#include "tests/unit/control/engine/engine_driver.h"

namespace gw::cp::engine {
namespace {

// ---------------------------------------------------------------- tombstones, bounds

TEST(Engine, GraveyardIsBoundedOldestFirst) {
  EngineConfig c = config();
  c.tombstone_ttl_ns = 10 * kSecond;
  c.max_graveyard = 4;
  Driver d(c);
  d.add_members(1, 11);
  for (std::size_t i = 1; i < 11; ++i) {
    d.handle(11, {Leave{1, name(i)}});
    d.now += kSecond;
  }
  d.run_until(d.now + 20 * kSecond);
  EXPECT_EQ(d.e.counters().tombstones_expired, 10u);
  EXPECT_EQ(d.e.table().graveyard_size(), 4u);
  EXPECT_EQ(d.e.counters().graveyard_evictions, 6u);
  EXPECT_FALSE(d.e.table().buried(name(6)).has_value());
  EXPECT_TRUE(d.e.table().buried(name(7)).has_value());
  EXPECT_TRUE(d.e.table().buried(name(10)).has_value());
}

TEST(Engine, MemberTableIsBounded) {
  EngineConfig c = config();
  c.max_members = 4;  // ourselves + 3
  Driver d(c);
  d.add_members(1, 10);
  EXPECT_EQ(d.e.table().size(), 4u);
  EXPECT_EQ(d.e.counters().admission_drop_table_full, 6u);
}

TEST(Engine, OversizedTagsAreRefused) {
  EngineConfig c = config();
  c.max_tag_bytes = 16;
  Driver d(c);
  d.handle(1, {alive(1, 1, {{"role", std::string(40, 'x')}})});
  EXPECT_EQ(d.e.member(name(1)), nullptr);
  EXPECT_EQ(d.e.counters().tags_drop_too_large, 1u);
  EXPECT_FALSE(d.e.set_tags({{"k", std::string(20, 'v')}}, d.now));
  const std::uint64_t inc = d.e.incarnation();
  EXPECT_TRUE(d.e.set_tags({{"k", "v"}}, d.now));
  EXPECT_EQ(d.e.incarnation(), inc + 1);
}

// ---------------------------------------------------------------- bad input
// Messages that decode but make no sense: rejected and counted, never trusted.

TEST(Engine, IncarnationsFarInTheFutureAreDroppedAndCounted) {
  constexpr std::uint64_t kJump = 1ULL << 40;
  Driver d(config());
  EXPECT_EQ(d.e.config().max_incarnation_jump, kJump);
  d.add_members(1, 5);  // all at incarnation 1
  const std::uint64_t inc = d.e.incarnation();
  // About us: refuting these would pin us near (or wrap past) UINT64_MAX.
  d.handle(1, {Suspect{UINT64_MAX, name(0), name(1)}, Dead{inc + kJump + 1, name(0), name(1)},
               Alive{UINT64_MAX, name(0), addr(0), {}, 1}});
  EXPECT_EQ(d.e.incarnation(), inc);
  EXPECT_EQ(d.e.counters().refutations, 0u);
  EXPECT_EQ(d.e.counters().update_drop_far_future, 3u);
  // About others: neither buried nor bumped.
  d.handle(1, {Suspect{2 * kJump, name(1), name(2)}, Dead{UINT64_MAX - 1, name(2), name(1)}, Leave{UINT64_MAX, name(3)},
               alive(4, 1 + kJump + 1)});
  EXPECT_EQ(d.e.counters().update_drop_far_future, 7u);
  for (std::size_t i = 1; i < 5; ++i) {
    EXPECT_EQ(d.e.member(name(i))->status, MemberStatus::kAlive) << i;
    EXPECT_EQ(d.e.member(name(i))->incarnation, 1u) << i;
  }
  // Never seen: only the top of the range is refused (a newcomer may start anywhere).
  d.handle(9, {alive(9, UINT64_MAX - 5), alive(10, UINT64_MAX - kJump)});
  EXPECT_EQ(d.e.member(name(9)), nullptr);
  EXPECT_EQ(d.e.member(name(10))->incarnation, UINT64_MAX - kJump);
  EXPECT_EQ(d.e.counters().update_drop_far_future, 8u);
  // Sync entries pass the same checks.
  d.handle(1, {SyncRequest{1,
                           name(1),
                           false,
                           0,
                           1,
                           {MemberState{name(11), addr(11), UINT64_MAX, MemberStatus::kAlive, {}},
                            MemberState{name(0), addr(0), UINT64_MAX, MemberStatus::kDead, {}},
                            MemberState{name(2), addr(2), 3 * kJump, MemberStatus::kLeft, {}}}}});
  EXPECT_EQ(d.e.counters().update_drop_far_future, 11u);
  EXPECT_EQ(d.e.member(name(11)), nullptr);
  EXPECT_EQ(d.e.member(name(2))->status, MemberStatus::kAlive);
  EXPECT_EQ(d.e.incarnation(), inc);
  // Believable jumps pass: a jump of exactly max_incarnation_jump, and a host that
  // restarts with Unix seconds as its incarnation.
  d.handle(4, {alive(4, 1 + kJump)});
  EXPECT_EQ(d.e.member(name(4))->incarnation, 1 + kJump);
  constexpr std::uint64_t kUnixSeconds = 1'800'000'000;
  d.handle(3, {alive(3, kUnixSeconds)});
  EXPECT_EQ(d.e.member(name(3))->incarnation, kUnixSeconds);
  d.handle(1, {Suspect{inc + kUnixSeconds, name(0), name(1)}});
  EXPECT_EQ(d.e.incarnation(), inc + kUnixSeconds + 1);
  EXPECT_EQ(d.e.counters().refutations, 1u);
  EXPECT_EQ(d.e.counters().update_drop_far_future, 11u);
}

TEST(Engine, MaxIncarnationJumpIsConfigurableAndValidated) {
  EngineConfig c = config();
  c.max_incarnation_jump = 100;
  Driver d(c);
  d.add_members(1, 2);
  d.handle(1, {alive(1, 1 + 101)});
  EXPECT_EQ(d.e.member(name(1))->incarnation, 1u);
  EXPECT_EQ(d.e.counters().update_drop_far_future, 1u);
  d.handle(1, {alive(1, 1 + 100)});
  EXPECT_EQ(d.e.member(name(1))->incarnation, 101u);
  // Refutation stays below the top of the range even at the very edge.
  d.handle(1, {Suspect{UINT64_MAX - 100, name(0), name(1)}});
  EXPECT_EQ(d.e.counters().update_drop_far_future, 2u);
  EXPECT_EQ(d.e.incarnation(), 0u);

  c = config();
  c.max_incarnation_jump = 0;
  EXPECT_EQ(c.validate().rfind("max_incarnation_jump:", 0), 0u);
  c.max_incarnation_jump = UINT64_MAX;
  EXPECT_EQ(c.validate().rfind("max_incarnation_jump:", 0), 0u);
  c = config();
  c.initial_incarnation = UINT64_MAX;
  EXPECT_EQ(c.validate().rfind("initial_incarnation:", 0), 0u);
  // Unvalidated configs are clamped, never trusted to overflow.
  Driver top(c);
  EXPECT_EQ(top.e.incarnation(), UINT64_MAX - (1ULL << 40));
  c = config();
  c.max_incarnation_jump = 0;
  Driver zero(c);
  EXPECT_EQ(zero.e.config().max_incarnation_jump, 1ULL << 40);
}

// ---------------------------------------------------------------- the clock bound (issue 51)
// A key holder raised a member 2^40 at a time to the top of the range, then
// declared it dead: its refutation (heard + 1) was beyond belief everywhere,
// and it stayed dead for good. With a wall clock, nothing above Unix time
// now + slack (in microseconds) is believed, so every death a key holder can
// make is refuted a microsecond later.

constexpr std::uint64_t kUnixNs = 1'800'000'000ULL * kSecond;  // Unix time at kStart

EngineConfig clocked(std::size_t self = 0) {
  EngineConfig c = config(self);
  c.unix_clock_offset_ns = kUnixNs - kStart;
  c.initial_incarnation = kUnixNs / 1000;
  return c;
}

TEST(Engine, NoKeyHolderCanPinAMemberAboveTheClock) {
  Driver d(clocked());
  const std::uint64_t start_us = kUnixNs / 1000;
  d.handle(1, {alive(1, start_us), alive(2, start_us), alive(3, start_us)});
  const std::uint64_t ceiling = (kUnixNs + d.e.config().incarnation_clock_slack_ns) / 1000;
  // The attack as it was: 2^40 at a time to the top, then a death there.
  std::uint64_t inc = start_us;
  while (inc < UINT64_MAX - (2ULL << 40)) {
    inc += 1ULL << 40;
    d.handle(2, {alive(1, inc)});
  }
  d.handle(2, {Dead{inc, name(1), name(2)}});
  EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kAlive);
  EXPECT_EQ(d.e.member(name(1))->incarnation, start_us);
  EXPECT_GT(d.e.counters().update_drop_beyond_clock, 1000u);
  // The highest lie believed: a death at the ceiling. The member refutes it
  // (heard + 1) a millisecond later, and is alive again.
  d.handle(2, {Dead{ceiling, name(1), name(2)}});
  EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kDead);
  d.now += kMillisecond;
  d.handle(1, {alive(1, ceiling + 1)});
  EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kAlive);
  EXPECT_EQ(d.e.member(name(1))->incarnation, ceiling + 1);
  // About us: a suspicion above the clock is refused; at the ceiling, refuted.
  const std::uint64_t refused = d.e.counters().update_drop_beyond_clock;
  d.handle(2, {Suspect{ceiling + kSecond, name(0), name(2)}});
  EXPECT_EQ(d.e.counters().update_drop_beyond_clock, refused + 1);
  EXPECT_EQ(d.e.counters().refutations, 0u);
  d.handle(2, {Suspect{ceiling, name(0), name(2)}});
  EXPECT_EQ(d.e.incarnation(), ceiling + 1);
  EXPECT_EQ(d.e.counters().refutations, 1u);
  // A restart months later jumps far: believed (the relative bound gives
  // way to the clock's).
  d.now += 90ULL * 24 * 3600 * kSecond;
  d.handle(3, {alive(3, (kUnixNs + 90ULL * 24 * 3600 * kSecond) / 1000)});
  EXPECT_EQ(d.e.member(name(3))->incarnation, (kUnixNs + 90ULL * 24 * 3600 * kSecond) / 1000);
}

TEST(Engine, TheClockBoundFollowsAWallClockStep) {
  // Started with the clock a day behind: every peer is beyond belief until
  // the host tells the engine of the correction.
  EngineConfig c = clocked();
  c.unix_clock_offset_ns -= 24ULL * 3600 * kSecond;
  Driver d(c);
  d.handle(1, {alive(1, kUnixNs / 1000)});
  EXPECT_EQ(d.e.member(name(1)), nullptr);
  EXPECT_EQ(d.e.counters().update_drop_beyond_clock, 1u);
  d.e.set_unix_clock_offset(kUnixNs - kStart);
  d.handle(1, {alive(1, kUnixNs / 1000)});
  ASSERT_NE(d.e.member(name(1)), nullptr);
}

TEST(Engine, NoGraveyardTraceRefusesANameForEver) {
  EngineConfig c = clocked();
  c.graveyard_ttl_ns = 600 * kSecond;
  Driver d(c);
  const std::uint64_t start_us = kUnixNs / 1000;
  // A death near the top about a name never seen: refused, no trace.
  d.handle(2, {Dead{UINT64_MAX - (2ULL << 40), name(9), name(2)}});
  EXPECT_FALSE(d.e.table().buried(name(9)).has_value());
  // The highest believable: a trace, which refuses the name's Alive below it...
  const std::uint64_t ceiling = (kUnixNs + c.incarnation_clock_slack_ns) / 1000;
  d.handle(2, {Dead{ceiling, name(8), name(2)}});
  ASSERT_TRUE(d.e.table().buried(name(8)).has_value());
  d.handle(8, {alive(8, start_us)});
  EXPECT_EQ(d.e.member(name(8)), nullptr);
  EXPECT_EQ(d.e.counters().alive_drop_graveyard, 1u);
  // ...not for ever: lies about it every few seconds do not keep the trace
  // past its TTL (the lie repeated after that lays a new one).
  for (int i = 0; i < 59; ++i) {
    d.run_until(d.now + 10 * kSecond);
    d.handle(2, {Dead{ceiling, name(8), name(2)}});
  }
  EXPECT_EQ(d.e.counters().graveyard_expired, 0u);
  d.run_until(d.now + 10 * kSecond);
  EXPECT_FALSE(d.e.table().buried(name(8)).has_value());
  EXPECT_EQ(d.e.counters().graveyard_expired, 1u);
  // The lie stopped: a restart passes.
  d.handle(8, {alive(8, start_us + 1000 * 1'000'000ULL)});
  ASSERT_NE(d.e.member(name(8)), nullptr);
  EXPECT_EQ(d.e.member(name(8))->status, MemberStatus::kAlive);
}

// Issue 51: addresses inside messages named broadcast, multicast, loopback,
// 0.0.0.0 and the gateway itself, and 29 datagrams went there. They are
// checked as the ladder checks a datagram's source.
TEST(Engine, AddressesNoMemberCanHaveAreNeitherStoredNorAnswered) {
  Driver d(config());
  d.add_members(1, 3);
  const std::vector<Address> martians = {
      Address{{255, 255, 255, 255}, 7946},
      Address{{224, 0, 0, 1}, 7946},
      Address{{127, 0, 0, 1}, 7946},
      Address{{0, 0, 0, 0}, 7946},
      addr(0),  // ours
      Address{{0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 7946},
      Address{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 7946},
      Address{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}, 7946},
  };
  std::size_t i = 100;
  for (const Address& a : martians) {
    d.handle(1, {Alive{1, name(i), a, {}, 1}});
    EXPECT_EQ(d.e.member(name(i)), nullptr) << i;
    ++i;
  }
  EXPECT_EQ(d.e.counters().msg_drop_martian_addr, martians.size());
  // A ping asking for its ack there, an indirect ping naming a target or a
  // requester there: nothing is sent.
  const std::size_t sent = d.sent.size();
  for (const Address& a : martians) {
    d.handle(1, {Ping{7, name(0), name(1), a}});
    d.handle(1, {IndirectPing{8, name(2), a, true, name(1), addr(1)}});
    d.handle(1, {IndirectPing{9, name(2), addr(2), true, name(1), a}});
  }
  EXPECT_EQ(d.sent.size(), sent);
  EXPECT_EQ(d.e.counters().msg_drop_martian_addr, 4 * martians.size());
  // Ordinary addresses still are.
  d.handle(1, {Ping{7, name(0), name(1), addr(1)}});
  ASSERT_EQ(d.sent.size(), sent + 1);
  EXPECT_EQ(d.sent.back().to, addr(1));
  d.handle(1, {alive(9)});
  EXPECT_NE(d.e.member(name(9)), nullptr);
}

TEST(Engine, OversizedTagsAreRefusedFromEverySource) {
  EngineConfig c = config();
  c.max_tag_bytes = 16;
  Driver d(c);
  d.add_members(1, 3);
  const std::vector<Tag> big = {{"role", std::string(40, 'x')}};
  // An update of a known member: it keeps its old state.
  d.handle(1, {alive(1, 2, big)});
  EXPECT_EQ(d.e.member(name(1))->incarnation, 1u);
  EXPECT_TRUE(d.e.member(name(1))->tags().empty());
  // A sync entry: not admitted.
  d.handle(2, {SyncRequest{1, name(2), false, 0, 1, {MemberState{name(5), addr(5), 1, MemberStatus::kAlive, big}}}});
  EXPECT_EQ(d.e.member(name(5)), nullptr);
  // About us: neither stored nor refuted.
  d.handle(2, {Alive{d.e.incarnation() + 1, name(0), addr(0), big, 1}});
  EXPECT_EQ(d.e.counters().refutations, 0u);
  EXPECT_EQ(d.e.counters().tags_drop_too_large, 3u);
}

TEST(Engine, OurNameAtAnotherAddressIsRefutedNeverTrusted) {
  Driver d(config());
  d.add_members(1, 4);
  const std::uint64_t inc = d.e.incarnation();
  // Same incarnation, lower, higher: each claim is refuted, our entry unchanged.
  d.handle(1, {Alive{inc, name(0), addr(9), {}, 1}});
  EXPECT_EQ(d.e.incarnation(), inc + 1);
  d.handle(1, {Alive{0, name(0), addr(9), {}, 1}});
  EXPECT_EQ(d.e.incarnation(), inc + 2);
  d.handle(1, {Alive{inc + 10, name(0), addr(9), {}, 1}});
  EXPECT_EQ(d.e.incarnation(), inc + 11);
  // From a sync too.
  d.handle(2, {SyncRequest{1, name(2), false, 0, 1, {MemberState{name(0), addr(9), 0, MemberStatus::kAlive, {}}}}});
  EXPECT_EQ(d.e.incarnation(), inc + 12);
  EXPECT_EQ(d.e.counters().conflict_self_name, 4u);
  EXPECT_EQ(d.e.counters().refutations, 4u);
  EXPECT_EQ(d.e.member(name(0))->addr(), addr(0));
  // Our own Alive echoed back is no conflict.
  d.handle(3, {Alive{d.e.incarnation(), name(0), addr(0), {}, 1}});
  EXPECT_EQ(d.e.counters().conflict_self_name, 4u);
  EXPECT_EQ(d.e.counters().refutations, 4u);
  // The refutation carries our real address, urgently.
  d.handle(2, {Ping{5, name(0), name(2), addr(2)}});
  const Alive* a = find_msg<Alive>(d.sent.back());
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->node, name(0));
  EXPECT_EQ(a->addr, addr(0));
  EXPECT_EQ(a->incarnation, inc + 12);
  EXPECT_EQ(d.sent.back().priority, PriorityClass::kUrgent);
}

TEST(Engine, ALiveMemberMovesOnlyWithANewerIncarnation) {
  Driver d(config());
  d.add_members(1, 4);  // incarnation 1
  // Another address, not newer: a second host claims the name; ignored.
  d.handle(2, {Alive{1, name(1), addr(9), {}, 1}, Alive{0, name(1), addr(9), {}, 1}});
  EXPECT_EQ(d.e.member(name(1))->addr(), addr(1));
  EXPECT_EQ(d.e.counters().conflict_address, 2u);
  EXPECT_EQ(d.e.counters().update_drop_stale, 0u);
  EXPECT_EQ(count_events(d.events, EventKind::kUpdate, name(1)), 0u);
  // Newer: a real move or restart elsewhere.
  d.handle(9, {Alive{2, name(1), addr(9), {}, 1}});
  EXPECT_EQ(d.e.member(name(1))->addr(), addr(9));
  EXPECT_EQ(count_events(d.events, EventKind::kUpdate, name(1)), 1u);
  // The old address echoing the same incarnation does not move it back.
  d.handle(2, {Alive{2, name(1), addr(1), {}, 1}});
  EXPECT_EQ(d.e.member(name(1))->addr(), addr(9));
  EXPECT_EQ(d.e.counters().conflict_address, 3u);
  // Same address, same incarnation: merely stale.
  d.handle(2, {Alive{2, name(1), addr(9), {}, 1}});
  EXPECT_EQ(d.e.counters().update_drop_stale, 1u);
  EXPECT_EQ(d.e.counters().conflict_address, 3u);
}

// ---------------------------------------------------------------- the member table

// reconnect() walks only the entries outside the view: they must be exactly
// the tombstones and probationers, in the order a walk of the whole table
// passes them (its random pick among them depends on that order).
TEST(MemberTable, OutsideTheViewAreTheTombstonesAndProbationersInNameOrder) {
  MemberTable t(100, 0, kSecond);
  for (std::size_t i = 30; i >= 1; --i) {
    Member m = table_member(i, 1);
    m.probation = i % 7 == 0;
    t.insert(m);
  }
  for (std::size_t i : {3, 11, 12, 25}) t.set_status(*t.find(name(i)), MemberStatus::kDead, 0);
  t.set_status(*t.find(name(17)), MemberStatus::kLeft, 0);
  t.set_status(*t.find(name(5)), MemberStatus::kSuspect, 0);
  std::vector<std::string> whole;
  t.for_each([&](const Member& m) {
    if (m.probation || m.is_tombstone()) whole.push_back(m.name.str());
  });
  std::vector<std::string> outside;
  t.for_each_outside_view([&](const Member& m) { outside.push_back(m.name.str()); });
  // 4 probationers (7, 14, 21, 28), 5 tombstones; the suspect stays in the view.
  EXPECT_EQ(whole.size(), 9u);
  EXPECT_EQ(outside, whole);
}

// The table's entries sit at their names' ids (IdPages) against a map,
// through a seeded run of puts and removes; a page goes with its last entry,
// and a copy is a copy.
TEST(MemberTable, EntriesAtTheirIdsAgreeWithAMapAndEmptyPagesAreFreed) {
  std::vector<Name> names;
  for (std::size_t i = 0; i < 500; ++i) names.emplace_back("idp-" + std::to_string(i * 7919 % 1009));
  IdPages pages;
  std::map<std::uint32_t, std::uint64_t> model;  // id -> incarnation
  Rng rng(11);
  const auto check = [&](const IdPages& p, const std::map<std::uint32_t, std::uint64_t>& want) {
    for (const Name& n : names) {
      const Member* e = const_cast<IdPages&>(p).find(n.id());
      const auto it = want.find(n.id());
      ASSERT_EQ(e != nullptr, it != want.end()) << n.str();
      if (e != nullptr) {
        ASSERT_EQ(e->name, n);
        ASSERT_EQ(e->incarnation, it->second);
      }
    }
  };
  for (int op = 0; op < 20000; ++op) {
    const Name& n = names[rng.uniform(names.size())];
    if (model.count(n.id()) != 0) {
      pages.remove(n.id());
      model.erase(n.id());
    } else {
      Member m;
      m.name = n;
      m.incarnation = rng.uniform(1000) + 1;
      const Member* put = &pages.put(std::move(m));
      EXPECT_EQ(put, pages.find(n.id()));
      model[n.id()] = pages.find(n.id())->incarnation;
    }
    if (op % 1000 == 999) check(pages, model);
  }
  check(pages, model);
  ASSERT_FALSE(model.empty());
  std::set<std::uint32_t> pages_used;
  for (const auto& [id, inc] : model) pages_used.insert(id >> IdPages::kShift);
  EXPECT_EQ(pages.pages(), pages_used.size());
  const std::size_t bytes_full = pages.bytes();
  // A copy keeps its entries whatever happens to the original.
  const IdPages copy = pages;
  const auto copied = model;
  for (const auto& [id, inc] : copied) pages.remove(id);
  model.clear();
  check(pages, model);
  check(copy, copied);
  // Every page went with its last entry: only the page pointers are left.
  EXPECT_EQ(pages.pages(), 0u);
  EXPECT_LE(pages.bytes() + pages_used.size() * IdPages::kPage * sizeof(Member), bytes_full);
  EXPECT_EQ(copy.pages(), pages_used.size());
}

// A datagram's names are looked up once, when their entries are prefetched;
// by a name's turn its id may have been freed and given to another name
// (a probationer forgotten, a newcomer admitted): the id is checked, not
// trusted.
TEST(MemberTable, AnIdFromPrefetchFindsItsOwnNameOnly) {
  MemberTable t(100, 0, kSecond);
  for (std::size_t i = 1; i <= 5; ++i) t.insert(table_member(i, 1));
  const std::uint32_t id2 = t.prefetch(name(2));
  ASSERT_NE(id2, IdentityPool::kNone);
  EXPECT_EQ(t.find(name(2), id2), t.find(name(2)));
  // Another name's id, or none: looked up by name.
  EXPECT_EQ(t.find(name(3), id2), t.find(name(3)));
  EXPECT_EQ(t.find(name(4), IdentityPool::kNone), t.find(name(4)));
  // Unknown when prefetched, admitted before its turn.
  const std::uint32_t id60 = t.prefetch(name(60));
  EXPECT_EQ(id60, IdentityPool::kNone);
  t.insert(table_member(60, 1));
  ASSERT_NE(t.find(name(60), id60), nullptr);
  EXPECT_EQ(t.find(name(60), id60)->name.str(), name(60));
  // Forgotten before its turn, its id reused by a newcomer.
  {
    Member p = table_member(61, 1);
    p.probation = true;
    t.insert(p);
  }
  const std::uint32_t id61 = t.prefetch(name(61));
  ASSERT_NE(id61, IdentityPool::kNone);
  t.forget_probationer(name(61));
  ASSERT_EQ(identities().find_name(name(61)), IdentityPool::kNone);
  t.insert(table_member(62, 1));
  ASSERT_EQ(t.find(name(62))->name.id(), id61) << "the pool reuses the freed id (else this test proves nothing)";
  EXPECT_EQ(t.find(name(61), id61), nullptr);
  EXPECT_EQ(t.find(name(62), id61), t.find(name(62)));
}

}  // namespace
}  // namespace gw::cp::engine
