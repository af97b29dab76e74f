// The engine's egress budget (egress_budget.h): the plan by class on its own,
// then the engine sizing what it sends to it (gossip rounds, piggybacking,
// syncs), driven by hand (engine_driver.h).
#include "control/engine/egress_budget.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "control/engine/engine.h"
#include "control/engine/wire_size.h"
#include "tests/unit/control/engine/engine_driver.h"

namespace gw::cp::engine {
namespace {

constexpr std::uint64_t kMs = kMillisecond;

// ---------------------------------------------------------------- the plan

TEST(EgressBudget, UnlimitedSaysYesToEverything) {
  EgressBudget b(0, 10 * kSecond, 0);
  b.charge_essential(1'000'000);
  b.charge_bulk(1'000'000);
  EXPECT_TRUE(b.unlimited());
  EXPECT_EQ(b.gossip_room(), UINT64_MAX);
  EXPECT_TRUE(b.bulk_ready());
  EXPECT_EQ(b.sync_cap(), UINT64_MAX);
}

TEST(EgressBudget, GossipSpendsWhatProbesAndUrgentNewsLeave) {
  // 4,000 B/s: 3,000 for probes, urgent news and gossip, 1,000 for syncs.
  EgressBudget b(4'000, 10 * kSecond, 0);
  EXPECT_EQ(b.gossip_room(), 3'000u);  // a second's worth, no reserve yet
  // Probes and urgent news always go, even into debt, and gossip waits.
  b.charge_essential(3'500);
  EXPECT_EQ(b.gossip_room(), 0u);
  b.refill(500 * kMs);  // +1,500
  EXPECT_EQ(b.gossip_room(), 1'000u);
  // After a second, what they took is held back for them: half of the 3,500
  // of the first second (the reserve follows them smoothly), capped at half
  // the share so that gossip always has some.
  b.refill(1'000 * kMs);  // tokens 2,500
  EXPECT_EQ(b.reserve(), 1'750u);
  EXPECT_EQ(b.gossip_room(), 1'000u);  // 2,500 less the capped reserve of 1,500
  b.charge_gossip(1'000);
  EXPECT_EQ(b.gossip_room(), 0u);
  // Quiet probes: the reserve decays and gossip gets the share back.
  for (std::uint64_t s = 3; s < 12; ++s) b.refill(s * kSecond);
  EXPECT_LT(b.reserve(), 10u);
  EXPECT_GE(b.gossip_room(), 2'990u);
}

TEST(EgressBudget, SyncsHaveAShareOfTheirOwnAndWaitOutTheirDebt) {
  EgressBudget b(4'000, 10 * kSecond, 0);
  EXPECT_EQ(b.sync_cap(), 10'000u);  // 1,000 B/s for the 10 s sync timeout
  ASSERT_TRUE(b.bulk_ready());
  b.charge_bulk(10'000);  // one sync at the cap: 9 s of debt
  EXPECT_FALSE(b.bulk_ready());
  EXPECT_EQ(b.gossip_room(), 3'000u);  // gossip does not pay for it
  b.refill(8'999 * kMs);
  EXPECT_FALSE(b.bulk_ready());
  b.refill(9'000 * kMs);
  EXPECT_TRUE(b.bulk_ready());
}

TEST(EgressBudget, LongIdleTimesAndLargeRatesDoNotOverflow) {
  EgressBudget b(10'000'000'000ULL, 10 * kSecond, 0);
  b.charge_bulk(1'000'000'000'000ULL);
  b.refill(1'000'000 * kSecond);  // days later: paid back, and no more than a second deep
  EXPECT_TRUE(b.bulk_ready());
  EXPECT_EQ(b.gossip_room(), 7'500'000'000ULL);
}

// ---------------------------------------------------------------- the engine

// Estimated wire bytes of a datagram, as the budget charges it.
std::uint64_t wire(const Outgoing& o) { return estimated_size(o.messages) + EgressBudget::kDatagramOverheadBytes; }

// 200 members joined at once (200 Alive to disseminate), every probe answered
// for 60 s; wire bytes sent per second, and the pings.
struct Load {
  std::map<std::uint64_t, std::uint64_t> bytes_per_s;
  std::uint64_t total = 0;
  std::size_t pings = 0;
  std::size_t largest_gossip = 0;
};

Load run_join_news(std::uint64_t budget) {
  EngineConfig c = config();
  c.egress_bytes_per_sec = budget;
  Driver d(c);
  d.add_members(1, 200);
  Load load;
  d.run_until(kStart + 60 * kSecond, [&](const Outgoing& o) {
    const std::uint64_t w = wire(o);
    load.bytes_per_s[(d.now - kStart) / kSecond] += w;
    load.total += w;
    if (const Ping* p = find_msg<Ping>(o)) {
      if (p->source == name(0)) ++load.pings;
      d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
    } else if (find_msg<Alive>(o) != nullptr && find_msg<Ack>(o) == nullptr) {
      load.largest_gossip = std::max<std::size_t>(load.largest_gossip, w);
    }
  });
  return load;
}

TEST(EngineEgressBudget, GossipIsSizedToTheBudgetAndProbesKeepTheirRate) {
  const Load free = run_join_news(0);
  const Load tight = run_join_news(3'000);
  // Unlimited, the news goes out in whole datagrams, far above 3 kB/s at first.
  EXPECT_GT(free.largest_gossip, 1'000u);
  EXPECT_GT(std::max_element(free.bytes_per_s.begin(), free.bytes_per_s.end(),
                             [](const auto& a, const auto& b) { return a.second < b.second; })
                ->second,
            6'000u);
  // Under 3 kB/s: no second above the budget (a second's burst of the
  // interactive share at the start aside), and on average within it.
  for (const auto& [s, bytes] : tight.bytes_per_s) EXPECT_LE(bytes, 2 * 3'000u) << "second " << s;
  EXPECT_LE(tight.total, 60u * 3'000u + 3'000u);
  // Probing is not what gave way: a ping a second either way.
  EXPECT_GE(tight.pings, 58u);
  EXPECT_GE(tight.pings + 1, free.pings);
}

TEST(EngineEgressBudget, AJoinAnswerIsCappedAndTheNextOneBringsTheRest) {
  EngineConfig c = config();
  c.egress_bytes_per_sec = 2'000;  // syncs: 500 B/s, 5,000 B in a 10 s sync timeout
  Driver d(c);
  d.add_members(1, 400);  // a whole view of about 16 kB
  d.run_until(kStart + 2 * kSecond);
  const auto answer = [&](std::uint32_t seq) {
    const std::size_t from = d.sent.size();
    d.handle(900 + seq, {SyncRequest{seq, name(900 + seq), true, 0, 1, {MemberState{name(900 + seq), addr(900 + seq), 1, MemberStatus::kAlive, {}}}, 0, {}, 0}});
    std::vector<std::string> names;
    std::uint64_t bytes = 0;
    for (std::size_t i = from; i < d.sent.size(); ++i)
      if (const SyncResponse* r = find_msg<SyncResponse>(d.sent[i])) {
        bytes += estimated_size(d.sent[i].messages);
        for (const MemberState& m : r->members) names.push_back(m.node);
      }
    return std::pair{names, bytes};
  };
  const auto [first, first_bytes] = answer(1);
  ASSERT_FALSE(first.empty());
  EXPECT_LE(first_bytes, 5'000u + c.max_packet_bytes);
  EXPECT_LT(first.size(), 300u);
  // The sync share is in debt now: the next joiner is not answered yet (it retries).
  const auto [refused, refused_bytes] = answer(2);
  EXPECT_TRUE(refused.empty());
  EXPECT_GE(d.e.counters().sync_drop_budget, 1u);
  // Once paid back, the next answer starts where the first ended.
  d.run_until(d.now + 12 * kSecond);
  const auto [second, second_bytes] = answer(3);
  ASSERT_FALSE(second.empty());
  std::size_t overlap = 0;
  for (const std::string& n : second)
    if (n != name(0) && std::find(first.begin(), first.end(), n) != first.end()) ++overlap;
  EXPECT_LT(overlap, second.size() / 4);
}

// The news piggybacked on acks spends the gossip room and no more: at a tight
// budget every ack filled to a whole datagram was what starved the probes.
// The acks themselves all go (probes are never what gives way).
struct AckLoad {
  std::size_t acks = 0;
  std::size_t bare = 0;              // acks that carried nothing else
  std::uint64_t piggybacked = 0;     // estimated codec bytes of the news they carried
};

AckLoad answer_pings(std::uint64_t budget) {
  EngineConfig c = config();
  c.egress_bytes_per_sec = budget;
  Driver d(c);
  d.add_members(1, 400);  // 400 Alive to disseminate
  const std::size_t from = d.sent.size();
  for (std::size_t i = 1; i <= 40; ++i) d.handle(i, {Ping{static_cast<std::uint32_t>(i), name(0), name(i), addr(i)}});
  AckLoad load;
  for (std::size_t i = from; i < d.sent.size(); ++i) {
    const Outgoing& o = d.sent[i];
    if (find_msg<Ack>(o) == nullptr) continue;
    ++load.acks;
    if (o.messages.size() == 1) ++load.bare;
    load.piggybacked += estimated_size(o.messages) - estimated_size(Compound{o.messages.front()});
  }
  return load;
}

TEST(EngineEgressBudget, AcksCarryNewsOnlyAsFarAsTheGossipRoomGoes) {
  const AckLoad free = answer_pings(0);
  const AckLoad tight = answer_pings(2'000);  // interactive share 1,500 B/s
  EXPECT_EQ(free.acks, 40u);
  EXPECT_EQ(tight.acks, 40u);
  // Unlimited: every ack is filled with news.
  EXPECT_EQ(free.bare, 0u);
  EXPECT_GT(free.piggybacked, 40u * 500u);
  // Under the budget: news rides along until the second's gossip room is
  // spent, then the acks go bare (the news waits for later rounds).
  EXPECT_GT(tight.piggybacked, 0u);
  EXPECT_LE(tight.piggybacked, 1'500u);
  EXPECT_GE(tight.bare, 30u);
}

// Urgent news is neither dropped nor held behind a backlog of other news: a
// death heard and our own refutation go out in the next gossip rounds while
// the budget holds back 400 members' Alive, and no urgent entry is dropped.
TEST(EngineEgressBudget, UrgentNewsGoesAheadOfTheBacklogAndIsNeverDropped) {
  EngineConfig c = config();
  c.egress_bytes_per_sec = 2'000;
  Driver d(c);
  d.add_members(1, 400);
  const auto answer = [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  };
  d.run_until(kStart + 2 * kSecond, answer);
  const std::uint64_t inc = d.e.incarnation();
  const std::uint64_t heard_at = d.now;
  const std::size_t from = d.sent.size();
  d.handle(1, {Dead{1, name(5), name(1)}});
  d.handle(2, {Suspect{inc, name(0), name(2)}});
  bool dead_out = false;
  bool refuted = false;
  std::uint64_t alive_bytes = 0;  // of the backlog, sent in the same time
  d.run_until(heard_at + 2 * kSecond, answer);
  for (std::size_t i = from; i < d.sent.size(); ++i)
    for (const Message& m : d.sent[i].messages) {
      if (const Dead* x = std::get_if<Dead>(&m); x != nullptr && x->node == name(5)) dead_out = true;
      if (const Alive* a = std::get_if<Alive>(&m)) {
        if (a->node == name(0) && a->incarnation > inc) refuted = true;
        if (a->node != name(0)) alive_bytes += estimated_size(Compound{m});
      }
    }
  EXPECT_TRUE(dead_out);
  EXPECT_TRUE(refuted);
  // The backlog is real: the budget has let out only part of it.
  EXPECT_LT(alive_bytes, 400u * 3u * 30u);
  EXPECT_EQ(d.e.counters().broadcast_drop[0], 0u);
  EXPECT_GT(d.e.counters().gossip_budget_short, 0u);
}

// Proof pings are probes out of turn: under a budget they go as far as it has
// room and the rest wait a probe interval (the probation lasts longer); none
// is declared unproven for want of budget. Unlimited, every probationer gets
// its proof ping the moment its probation ends.
struct ProofLoad {
  std::map<std::uint64_t, std::size_t> per_s;  // proof pings by second
  std::uint64_t deferred = 0, unproven = 0, promoted = 0;
};

ProofLoad proofs_for_sixty(std::uint64_t budget) {
  EngineConfig c = surge_config();
  c.egress_bytes_per_sec = budget;
  Driver d(c);
  start_surge(d);
  Compound arrivals;
  for (std::size_t i = 200; i < 260; ++i) arrivals.push_back(alive(i));
  d.handle(3, arrivals);
  ProofLoad load;
  // Everyone answers every ping (the probationers too), but the probationers
  // say nothing of their own accord: each needs a proof ping.
  run_answering(d, d.now + d.e.config().probation_ns + 30 * kSecond, {}, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o); p && index_of(o.to) >= 200) ++load.per_s[d.now / kSecond];
  });
  load.deferred = d.e.counters().probation_proof_deferred;
  load.unproven = d.e.counters().probation_unproven;
  load.promoted = d.e.counters().probation_promoted;
  return load;
}

TEST(EngineEgressBudget, ProofPingsAreSizedToTheBudgetAndNobodyDiesOfIt) {
  const ProofLoad free = proofs_for_sixty(0);
  const ProofLoad tight = proofs_for_sixty(1'500);
  std::size_t free_peak = 0, tight_peak = 0;
  for (const auto& [s, n] : free.per_s) free_peak = std::max(free_peak, n);
  for (const auto& [s, n] : tight.per_s) tight_peak = std::max(tight_peak, n);
  EXPECT_GE(free_peak, 50u);
  EXPECT_EQ(free.deferred, 0u);
  // 1,125 B/s for probes, urgent news and gossip: a dozen pings a second at most.
  EXPECT_LE(tight_peak, 15u);
  EXPECT_GT(tight.deferred, 0u);
  EXPECT_EQ(tight.unproven, 0u);
  EXPECT_EQ(free.unproven, 0u);
  EXPECT_GE(tight.promoted, 60u);
}

TEST(EngineEgressBudget, UnlimitedAnswersAWholeViewAsBefore) {
  Driver d(config());
  d.add_members(1, 400);
  d.run_until(kStart + 2 * kSecond);
  const std::size_t from = d.sent.size();
  d.handle(901, {SyncRequest{1, name(901), true, 0, 1, {MemberState{name(901), addr(901), 1, MemberStatus::kAlive, {}}}, 0, {}, 0}});
  std::size_t members = 0;
  for (std::size_t i = from; i < d.sent.size(); ++i)
    if (const SyncResponse* r = find_msg<SyncResponse>(d.sent[i])) members += r->members.size();
  EXPECT_GE(members, 400u);
}

}  // namespace
}  // namespace gw::cp::engine
