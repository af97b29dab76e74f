// Probing and suspicion, driven by hand (engine_driver.h): the probe ring,
// indirect probes, the fallback ping, nacks and relays, Lifeguard's awareness
// and buddy rule, stalls, suspicion timeouts and confirmations, hearsay
// checks, suspicions told along the ring and retold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "control/engine/engine.h"
#include "tests/unit/control/engine/engine_driver.h"

namespace gw::cp::engine {
namespace {

// ---------------------------------------------------------------- the probe ring

TEST(Engine, PingIsAnsweredWithAckAndMisdirectedPingIsNot) {
  Driver d(config());
  d.handle(1, {Ping{42, name(0), name(1), addr(1)}});
  ASSERT_EQ(d.sent.size(), 1u);
  EXPECT_EQ(d.sent[0].to, addr(1));
  EXPECT_EQ(d.sent[0].priority, PriorityClass::kProbe);
  const Ack* ack = find_msg<Ack>(d.sent[0]);
  ASSERT_NE(ack, nullptr);
  EXPECT_EQ(ack->seq_no, 42u);
  d.handle(1, {Ping{43, "someone-else", name(1), addr(1)}});
  EXPECT_EQ(d.sent.size(), 1u);
  EXPECT_EQ(d.e.counters().ping_drop_misdirected, 1u);
}

TEST(Engine, RoundRobinProbesEveryMemberOncePerRound) {
  EngineConfig c = config();
  c.probe_ring = false;  // SWIM's randomised round-robin, one probe a whole interval apart
  Driver d(c);
  d.add_members(1, 9);
  std::vector<std::string> order;
  d.run_until(kStart + 8 * kSecond + 999 * kMillisecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) {
      order.push_back(p->target);
      d.handle(1, {Ack{p->seq_no, p->target}});
    }
  });
  ASSERT_GE(order.size(), 8u);
  // The first 8 probes cover the 8 members exactly once, in shuffled order.
  std::set<std::string> first(order.begin(), order.begin() + 8);
  EXPECT_EQ(first.size(), 8u);
  std::vector<std::string> sorted_order(order.begin(), order.begin() + 8);
  std::vector<std::string> sorted = sorted_order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(sorted_order, sorted) << "not shuffled (possible but unlikely for this seed)";
}

TEST(Engine, ProbeRingProbesEveryMemberOncePerRoundOneIntervalApart) {
  // Nine engines with the same view: in every round each member is probed by
  // exactly one other, and a member's probes come one interval (less 1/L)
  // apart, whoever sends them.
  constexpr std::size_t kN = 9;
  std::vector<std::unique_ptr<Driver>> ds;
  for (std::size_t i = 0; i < kN; ++i) {
    ds.push_back(std::make_unique<Driver>(config(i), 1 + i));
    Compound view;
    for (std::size_t j = 0; j < kN; ++j)
      if (j != i) view.push_back(alive(j));
    ds.back()->handle((i + 1) % kN, view);
  }
  std::map<std::string, std::vector<std::uint64_t>> probed_at;
  const std::uint64_t until = kStart + 30 * kSecond;
  for (auto& d : ds)
    d->run_until(until, [&](const Outgoing& o) {
      if (const Ping* p = find_msg<Ping>(o)) {
        probed_at[p->target].push_back(d->now);
        d->e.handle(o.to, {Ack{p->seq_no, p->target}}, d->now);
      }
    });
  ASSERT_EQ(probed_at.size(), kN);
  for (auto& [target, at] : probed_at) {
    std::sort(at.begin(), at.end());
    // After the first two rounds (the phases settle), one probe per round.
    std::map<std::uint64_t, int> per_round;
    for (std::uint64_t t : at)
      if (t >= kStart + 2 * kSecond) ++per_round[t / kSecond];
    for (const auto& [round, n] : per_round) EXPECT_EQ(n, 1) << target << " round " << round;
    EXPECT_GE(per_round.size(), 26u) << target;
    for (std::size_t k = 1; k < at.size(); ++k) {
      if (at[k - 1] < kStart + 2 * kSecond) continue;
      EXPECT_LE(at[k] - at[k - 1], 2 * kSecond) << target;
    }
  }
}

// Nine members whose host clocks are hours apart and drift (the gateway
// hands each engine its own boot-relative clock): the ring's rounds come from
// the ring clock their pings carry, so once the members tell theirs (after
// their quiet start) every member is probed by exactly one other per round,
// as with one clock for all.
// (Read from each member's own clock, the rounds disagreed: some members were
// probed two or three times a round and others not at all.)
TEST(Engine, ProbeRingHoldsWithAClockPerMember) {
  constexpr std::size_t kN = 9;
  struct Host {
    std::uint64_t offset;
    std::int64_t drift_ppm;
    std::uint64_t clock(std::uint64_t t) const {
      return offset + t + static_cast<std::uint64_t>(static_cast<std::int64_t>(t / 1000) * drift_ppm / 1000);
    }
  };
  std::vector<Host> hosts;
  std::vector<std::unique_ptr<Engine>> es;
  const std::uint64_t t0 = kStart;
  for (std::size_t i = 0; i < kN; ++i) {
    hosts.push_back({(i * 5 % kN) * 3600 * kSecond + i * 137 * kMillisecond, static_cast<std::int64_t>(i * 25) - 100});
    es.push_back(std::make_unique<Engine>(config(i), 1 + i, hosts[i].clock(t0)));
    Compound view;
    for (std::size_t j = 0; j < kN; ++j)
      if (j != i) view.push_back(alive(j));
    es[i]->handle(addr((i + 1) % kN), view, hosts[i].clock(t0));
  }
  const auto index_of = [&](const Address& a) {
    for (std::size_t j = 0; j < kN; ++j)
      if (addr(j) == a) return j;
    return kN;
  };
  // Global time in steps of 1 ms; datagrams arrive at once.
  // By round, on one clock for all: member 0's ring clock (each member's
  // own would count its own rounds, one probe each whatever the others do).
  std::map<std::string, std::vector<std::uint64_t>> probed_at;
  std::vector<std::uint64_t> last_ring(kN, 0);
  const std::uint64_t until = t0 + 45 * kSecond;
  // Started together, nobody has heard a ring clock: each tells its own after
  // its quiet start, the largest wins within a round or two.
  const std::uint64_t told = t0 + (Probing::kRingQuietIntervals + 3) * kSecond;
  for (std::uint64_t t = t0; t < until; t += kMillisecond) {
    for (std::size_t i = 0; i < kN; ++i) {
      Engine& e = *es[i];
      const std::uint64_t now = hosts[i].clock(t);
      if (e.next_deadline() <= now) e.tick(now);
      // The ring clock never goes back.
      EXPECT_GE(e.ring_clock(now), last_ring[i]);
      last_ring[i] = e.ring_clock(now);
      for (const Outgoing& o : e.take_outbox()) {
        const std::size_t j = index_of(o.to);
        if (j == kN) continue;
        if (const Ping* p = find_msg<Ping>(o); p != nullptr && t >= told)
          probed_at[p->target].push_back(es[0]->ring_clock(hosts[0].clock(t)) / kSecond);
        es[j]->handle(addr(i), o.messages, hosts[j].clock(t));
        for (const Outgoing& back : es[j]->take_outbox()) {
          if (index_of(back.to) == i) e.handle(addr(j), back.messages, now);
        }
      }
    }
  }
  // The ring clocks agree to the millisecond they are carried in.
  std::uint64_t lo = UINT64_MAX;
  std::uint64_t hi = 0;
  for (std::size_t i = 0; i < kN; ++i) {
    lo = std::min(lo, es[i]->ring_clock(hosts[i].clock(until)));
    hi = std::max(hi, es[i]->ring_clock(hosts[i].clock(until)));
  }
  EXPECT_LE(hi - lo, 2 * kMillisecond);
  ASSERT_EQ(probed_at.size(), kN);
  for (auto& [target, rounds] : probed_at) {
    std::map<std::uint64_t, int> per_round;
    for (std::uint64_t r : rounds) ++per_round[r];
    // Past the first round (the phases settle), one a round.
    std::size_t counted = 0;
    for (auto it = std::next(per_round.begin(), std::min<std::size_t>(2, per_round.size())); it != per_round.end();
         ++it) {
      if (std::next(it) == per_round.end()) break;  // the last round may be cut by the end
      EXPECT_EQ(it->second, 1) << target << " round " << it->first;
      ++counted;
    }
    EXPECT_GE(counted, 25u) << target;
  }
}

// A member that has heard no ring clock tells none of its own while it is
// quiet, and takes the first it hears as it is, even behind its own clock (a
// joiner whose host clock is ahead does not move the cluster's rounds).
// After, a ring clock heard is only ever caught up with, and one beyond any
// real clock (a corrupt or hostile ping) is ignored.
TEST(Engine, RingClockOnlyMovesForwardAndIgnoresTheAbsurd) {
  Driver d(config());
  d.add_members(1, 4);
  const std::uint64_t own = d.e.ring_clock(d.now);
  EXPECT_EQ(own, d.now);
  bool quiet_ping = false;
  d.run_until(d.now + 3 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) {
      EXPECT_EQ(p->ring_ms, 0u);
      quiet_ping = true;
    }
  });
  EXPECT_TRUE(quiet_ping);
  // Behind our own clock: taken.
  d.handle(1, {Ping{1, name(0), name(1), addr(1), (d.now - 500 * kSecond) / kMillisecond}});
  EXPECT_EQ(d.e.ring_clock(d.now), d.now - 500 * kSecond);
  d.handle(1, {Ping{1, name(0), name(1), addr(1), (d.now + 5 * kSecond) / kMillisecond}});
  EXPECT_EQ(d.e.ring_clock(d.now), d.now + 5 * kSecond);
  d.handle(2, {Ping{2, name(0), name(2), addr(2), (d.now + 1 * kSecond) / kMillisecond}});
  EXPECT_EQ(d.e.ring_clock(d.now), d.now + 5 * kSecond);
  d.handle(3, {Ping{3, name(0), name(3), addr(3), 1ULL << 50}});
  EXPECT_EQ(d.e.ring_clock(d.now), d.now + 5 * kSecond);
  d.handle(3, {Ping{4, name(0), name(3), addr(3), 0}});
  EXPECT_EQ(d.e.ring_clock(d.now), d.now + 5 * kSecond);
  // Our pings carry it now.
  bool seen = false;
  d.run_until(d.now + 3 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) {
      EXPECT_EQ(p->ring_ms, d.e.ring_clock(d.now) / kMillisecond);
      seen = true;
    }
  });
  EXPECT_TRUE(seen);
}

TEST(Engine, EveryProbeReachesAVerdictWhileTheViewKeepsChanging) {
  // The probe ring's phase follows our place in the view, which moves with
  // every arrival; a probe must still run to its verdict before the next one
  // starts. Cut short, the probes of a dead member never failed while members
  // kept arriving (an arrival storm left every dead newcomer in every view).
  constexpr std::size_t kSelf = 5000;  // "n5000": arrivals sort on both sides
  EngineConfig cfg = config(kSelf);
  cfg.surge_min_arrivals = 0;        // arrivals straight into the view
  cfg.awareness_max_multiplier = 1;  // unanswered helpers never slow our probes
  Driver d(cfg);
  for (std::size_t i = 1; i < 20; ++i) d.handle(i, {alive(i)});
  const auto gone = [](const std::string& n) { return std::stoul(n.substr(1)) % 4 == 0; };
  std::size_t next = 20;
  const std::uint64_t until = kStart + 60 * kSecond;
  while (d.now < until) {
    // Four arrivals a second; every fourth member never answers.
    d.handle(next, {alive(next)});
    ++next;
    d.run_until(d.now + 250 * kMillisecond, [&](const Outgoing& o) {
      if (const Ping* p = find_msg<Ping>(o); p != nullptr && !gone(p->target))
        d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
    });
  }
  const Counters c = d.e.counters();
  EXPECT_GT(c.probe_started, 50u);
  // Every probe answered, failed or stale; at most the last one still running.
  const std::uint64_t verdicts =
      c.probe_ack_direct + c.probe_ack_indirect + c.probe_failed + c.probe_outdated + c.probe_abandoned_stall;
  EXPECT_LE(c.probe_started - verdicts, 1u)
      << c.probe_started << " started, " << c.probe_ack_direct << " acked, " << c.probe_ack_indirect
      << " acked indirectly, " << c.probe_failed << " failed";
  EXPECT_GE(c.probe_failed, 5u);
}

TEST(Engine, AProbeOfAnOlderIncarnationGivesNoVerdictOnTheNewer) {
  EngineConfig c = config();
  c.probe_ring = false;  // SWIM's round robin: the next probe is a whole interval later
  Driver d(c);
  d.add_members(1, 6);
  std::string target;
  std::uint64_t ping_at = 0;
  auto first_ping = [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o); p && target.empty()) {
      target = p->target;
      ping_at = d.now;
    }
  };
  while (target.empty()) d.run_until(d.e.next_deadline(), first_ping);
  const std::size_t x = std::stoul(target.substr(1));
  ASSERT_EQ(d.e.member(target)->incarnation, 1u);
  // Nobody answers; past the direct timeout (helpers asked), before the final
  // deadline, x restarts (or refutes): incarnation 2.
  d.run_until(ping_at + c.probe_timeout_ns + 100 * kMillisecond);
  ASSERT_EQ(d.e.counters().probe_indirect_sent, 3u);
  d.handle(x, {alive(x, 2)});
  // The probe runs out unanswered: its silence was about incarnation 1.
  bool accused = false;
  d.run_until(ping_at + c.probe_interval_ns + 500 * kMillisecond, [&](const Outgoing& o) {
    for (const Message& m : o.messages) {
      if (const Suspect* s = std::get_if<Suspect>(&m); s && s->node == target) accused = true;
      if (const Dead* dd = std::get_if<Dead>(&m); dd && dd->node == target) accused = true;
    }
  });
  EXPECT_FALSE(accused);
  EXPECT_EQ(d.e.counters().probe_outdated, 1u);
  EXPECT_EQ(d.e.counters().probe_failed, 0u);
  EXPECT_EQ(d.e.counters().suspicions, 0u);
  EXPECT_EQ(d.e.member(target)->status, MemberStatus::kAlive);
  EXPECT_EQ(d.e.member(target)->incarnation, 2u);
  EXPECT_EQ(d.e.health_score(), 0u);  // no blame on our health either
}

// ---------------------------------------------------------------- indirect probes, the fallback ping, nacks and relays

TEST(Engine, MissedAckLeadsToIndirectProbesThenSuspicion) {
  EngineConfig c = config();
  c.probe_ring = false;  // SWIM's randomised round-robin, one probe a whole interval apart
  Driver d(c);
  d.add_members(1, 6);
  std::uint64_t ping_at = 0;
  std::string target;
  std::uint32_t seq = 0;
  std::vector<std::uint64_t> indirect_at;
  std::set<std::string> helpers;
  d.run_until(kStart + 3 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o); p && target.empty()) {
      ping_at = d.now;
      target = p->target;
      seq = p->seq_no;
    }
    if (const IndirectPing* ip = find_msg<IndirectPing>(o); ip && ip->seq_no == seq) {
      indirect_at.push_back(d.now);
      EXPECT_EQ(ip->target, target);
      EXPECT_TRUE(ip->want_nack);
      helpers.insert(o.to == addr(1) ? name(1) : "x" + std::to_string(o.to.ip[3]));
    }
  });
  ASSERT_FALSE(target.empty());
  ASSERT_EQ(indirect_at.size(), 3u);  // k = indirect_checks
  EXPECT_EQ(helpers.size(), 3u);
  EXPECT_EQ(indirect_at[0] - ping_at, 500 * kMillisecond);  // the probe timeout
  // Nobody answered: the target is suspected at the end of the interval.
  EXPECT_GE(d.e.counters().probe_failed, 1u);
  EXPECT_EQ(d.e.member(target)->status, MemberStatus::kSuspect);
}

TEST(Engine, NacksFromHelpersSpareOurHealth) {
  EngineConfig c = config();
  c.probe_ring = false;  // SWIM's randomised round-robin, one probe a whole interval apart
  Driver d(c);
  d.add_members(1, 5);
  std::uint32_t seq = 0;
  d.run_until(kStart + 2 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o); p && seq == 0) seq = p->seq_no;
    // Every helper answers "could not reach it either" (members 1..4 are addr(i)).
    if (const IndirectPing* ip = find_msg<IndirectPing>(o); ip && ip->seq_no == seq)
      d.e.handle(o.to, {Nack{ip->seq_no, name(o.to.ip[3])}}, d.now);
  });
  EXPECT_EQ(d.e.counters().probe_failed, 1u);
  EXPECT_EQ(d.e.counters().probe_nack_received, 3u);
  EXPECT_EQ(d.e.health_score(), 0u);
}

// memberlist pings over TCP as well when the UDP ping goes unanswered; we have
// one transport, so the same ping goes once more with the indirect requests.
// Here the helpers stay silent and only that second ping is answered: the probe
// succeeds. Without it, one lost round trip plus silent helpers is a suspicion.
TEST(Engine, FallbackPingAnsweredSparesATargetWhoseFirstPingWasLost) {
  for (const bool fallback : {true, false}) {
    SCOPED_TRACE(fallback ? "fallback_ping" : "no fallback_ping");
    EngineConfig c = config();
    c.probe_ring = false;  // SWIM's randomised round-robin, one probe a whole interval apart
    c.fallback_ping = fallback;
    Driver d(c);
    d.add_members(1, 5);
    std::uint32_t seq = 0;
    std::string target;
    std::vector<std::uint64_t> pings_at;
    std::uint64_t indirect_at = 0;
    d.run_until(kStart + 2 * kSecond, [&](const Outgoing& o) {
      if (const Ping* p = find_msg<Ping>(o); p && (seq == 0 || p->seq_no == seq)) {
        seq = p->seq_no;
        target = p->target;
        pings_at.push_back(d.now);
        // The first is lost; the second (same number, same target) is answered.
        if (pings_at.size() == 2) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
      }
      if (const IndirectPing* ip = find_msg<IndirectPing>(o); ip && ip->seq_no == seq && indirect_at == 0)
        indirect_at = d.now;
    });
    ASSERT_FALSE(target.empty());
    ASSERT_NE(indirect_at, 0u);
    const Counters& k = d.e.counters();
    if (fallback) {
      ASSERT_EQ(pings_at.size(), 2u);
      EXPECT_EQ(pings_at[1], indirect_at);  // with the indirect requests, at the probe timeout
      EXPECT_EQ(pings_at[1] - pings_at[0], 500 * kMillisecond);
      // One with every round of indirect requests (here later probes' too).
      EXPECT_EQ(k.probe_fallback_sent * 3, k.probe_indirect_sent);
      EXPECT_GE(k.probe_ack_indirect, 1u);
      EXPECT_EQ(k.probe_failed, 0u);
      EXPECT_EQ(d.e.member(target)->status, MemberStatus::kAlive);
    } else {
      EXPECT_EQ(pings_at.size(), 1u);
      EXPECT_EQ(k.probe_fallback_sent, 0u);
      EXPECT_EQ(k.probe_failed, 1u);
      EXPECT_EQ(d.e.member(target)->status, MemberStatus::kSuspect);
    }
  }
}

TEST(Engine, IndirectAckCountsAsSuccess) {
  EngineConfig c = config();
  c.probe_ring = false;  // SWIM's randomised round-robin, one probe a whole interval apart
  Driver d(c);
  d.add_members(1, 5);
  std::uint32_t seq = 0;
  std::string target;
  d.run_until(kStart + 2 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o); p && seq == 0) {
      seq = p->seq_no;
      target = p->target;
    }
    if (const IndirectPing* ip = find_msg<IndirectPing>(o); ip && ip->seq_no == seq) {
      d.e.handle(o.to, {Ack{ip->seq_no, ip->target}}, d.now);  // forwarded by a helper
    }
  });
  EXPECT_EQ(d.e.counters().probe_ack_indirect, 1u);
  EXPECT_EQ(d.e.counters().probe_failed, 0u);
  EXPECT_EQ(d.e.member(target)->status, MemberStatus::kAlive);
}

TEST(Engine, HelperPingsTargetAndForwardsAckOrSendsNack) {
  Driver d(config());
  // Indirect ping from n1 about n2.
  d.handle(1, {IndirectPing{77, name(2), addr(2), true, name(1), addr(1)}});
  ASSERT_EQ(d.sent.size(), 1u);
  EXPECT_EQ(d.sent[0].to, addr(2));
  const Ping* p = find_msg<Ping>(d.sent[0]);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->target, name(2));
  // The target answers: the ack goes to the requester with its sequence number.
  d.handle(2, {Ack{p->seq_no, name(2)}});
  ASSERT_EQ(d.sent.size(), 2u);
  EXPECT_EQ(d.sent[1].to, addr(1));
  ASSERT_NE(find_msg<Ack>(d.sent[1]), nullptr);
  EXPECT_EQ(find_msg<Ack>(d.sent[1])->seq_no, 77u);

  // Second relay: the target stays silent, so the requester gets a Nack.
  d.handle(1, {IndirectPing{78, name(3), addr(3), true, name(1), addr(1)}});
  const std::size_t before = d.sent.size();
  bool nacked = false;
  d.run_until(d.now + kSecond, [&](const Outgoing& o) {
    if (const Nack* n = find_msg<Nack>(o)) {
      EXPECT_EQ(o.to, addr(1));
      EXPECT_EQ(n->seq_no, 78u);
      nacked = true;
    }
  });
  EXPECT_GT(d.sent.size(), before);
  EXPECT_TRUE(nacked);
  EXPECT_EQ(d.e.counters().relay_nack_sent, 1u);
}

TEST(Engine, RelayTableIsBounded) {
  EngineConfig c = config();
  c.max_pending_relays = 2;
  Driver d(c);
  for (std::uint32_t i = 0; i < 5; ++i) d.handle(1, {IndirectPing{i, name(2), addr(2), true, name(1), addr(1)}});
  EXPECT_EQ(d.e.counters().relay_started, 2u);
  EXPECT_EQ(d.e.counters().relay_drop_full, 3u);
}

TEST(Engine, AcksAndNacksNobodyWaitsForAreDroppedAndCounted) {
  EngineConfig c = config();
  c.probe_ring = false;  // SWIM's randomised round-robin, one probe a whole interval apart
  Driver d(c);
  d.add_members(1, 5);
  // No probe or relay in flight at all.
  d.handle(1, {Ack{9999, name(1)}, Nack{9999, name(1)}});
  EXPECT_EQ(d.e.counters().ack_drop_unsolicited, 1u);
  EXPECT_EQ(d.e.counters().nack_drop_unsolicited, 1u);

  std::uint32_t seq = 0;
  std::string target;
  std::vector<std::string> helpers;
  d.run_until(kStart + 2 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o); p && seq == 0) {
      seq = p->seq_no;
      target = p->target;
      // The right number from the wrong member proves nothing about the target.
      d.e.handle(o.to, {Ack{seq, target == name(1) ? name(2) : name(1)}}, d.now);
    }
    if (const IndirectPing* ip = find_msg<IndirectPing>(o); ip && ip->seq_no == seq) {
      helpers.push_back(name(o.to.ip[3]));
      // A stranger's nack and a helper's second nack do not count.
      if (helpers.size() == 1)
        d.e.handle(o.to, {Nack{seq, "stranger"}, Nack{seq, helpers[0]}, Nack{seq, helpers[0]}}, d.now);
    }
  });
  ASSERT_NE(seq, 0u);
  ASSERT_EQ(helpers.size(), 3u);
  EXPECT_EQ(d.e.counters().probe_ack_direct, 0u);
  EXPECT_EQ(d.e.counters().ack_drop_unsolicited, 2u);
  EXPECT_EQ(d.e.counters().probe_failed, 1u);
  EXPECT_EQ(d.e.counters().probe_nack_received, 1u);
  EXPECT_EQ(d.e.counters().nack_drop_unsolicited, 3u);
  // Two of three helpers silent: Lifeguard still blames our own link.
  EXPECT_EQ(d.e.health_score(), 2u);
  // A late ack for the finished probe: nothing waits for it.
  d.handle(1, {Ack{seq, target}});
  EXPECT_EQ(d.e.counters().ack_drop_unsolicited, 3u);
  EXPECT_EQ(d.e.counters().probe_ack_indirect, 0u);
}

TEST(Engine, RelayForwardsOnlyTheTargetsAck) {
  Driver d(config());
  d.handle(1, {IndirectPing{77, name(2), addr(2), true, name(1), addr(1)}});
  ASSERT_EQ(d.sent.size(), 1u);
  const std::uint32_t seq = find_msg<Ping>(d.sent[0])->seq_no;
  // Another member answering our relay ping must not vouch for the target.
  d.handle(3, {Ack{seq, name(3)}});
  EXPECT_EQ(d.sent.size(), 1u);
  EXPECT_EQ(d.e.counters().ack_drop_unsolicited, 1u);
  d.handle(2, {Ack{seq, name(2)}});
  ASSERT_EQ(d.sent.size(), 2u);
  EXPECT_EQ(find_msg<Ack>(d.sent[1])->seq_no, 77u);
  EXPECT_EQ(d.e.counters().relay_ack_forwarded, 1u);
  // The relay is over: a repeat is dropped, not forwarded twice.
  d.handle(2, {Ack{seq, name(2)}});
  EXPECT_EQ(d.sent.size(), 2u);
  EXPECT_EQ(d.e.counters().ack_drop_unsolicited, 2u);
}

// ---------------------------------------------------------------- Lifeguard

TEST(Engine, LifeguardHealthRaisesProbeTimeoutAndSuccessLowersIt) {
  Driver d(config());
  d.add_members(1, 5);
  EXPECT_EQ(d.e.health_score(), 0u);
  EXPECT_EQ(d.e.probe_timeout_ns(), 500 * kMillisecond);
  // All peers silent: every probe fails and no helper nacks.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ping_to_indirect;  // (score, gap)
  std::uint64_t ping_at = 0;
  std::uint32_t seq = 0;
  std::uint32_t score_at_ping = 0;
  d.run_until(kStart + 12 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) {
      ping_at = d.now;
      seq = p->seq_no;
      score_at_ping = d.e.health_score();
    }
    if (const IndirectPing* ip = find_msg<IndirectPing>(o); ip && ip->seq_no == seq) {
      ping_to_indirect.emplace_back(score_at_ping, d.now - ping_at);
      seq = 0;
    }
  });
  EXPECT_GT(d.e.health_score(), 0u);
  EXPECT_EQ(d.e.probe_timeout_ns(), 500 * kMillisecond * (d.e.health_score() + 1));
  EXPECT_EQ(d.e.probe_interval_ns(), kSecond * (d.e.health_score() + 1));
  // The observed ping-to-indirect gap is the stretched timeout.
  ASSERT_GE(ping_to_indirect.size(), 2u);
  bool saw_stretched = false;
  for (const auto& [score, gap] : ping_to_indirect) {
    EXPECT_EQ(gap, 500 * kMillisecond * (score + 1));
    if (score > 0) saw_stretched = true;
  }
  EXPECT_TRUE(saw_stretched);
  EXPECT_LE(d.e.health_score(), d.e.config().awareness_max_multiplier - 1);

  // Successful direct probes lower the score again, one step each.
  const std::uint32_t high = d.e.health_score();
  d.add_members(10, 14);  // fresh, answering members
  int acks = 0;
  d.run_until(d.now + 60 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) {
      d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
      ++acks;
    }
  });
  EXPECT_GT(acks, 0);
  EXPECT_LT(d.e.health_score(), high);
}

TEST(Engine, BuddySystemPiggybacksSuspicionOnPingToSuspect) {
  EngineConfig c = config();
  c.retransmit_mult = 1;  // gossip carries each update once...
  Driver d(c);
  d.add_members(1, 4);
  d.handle(2, {Suspect{1, name(1), name(2)}});
  ASSERT_EQ(d.e.member(name(1))->status, MemberStatus::kSuspect);
  // ...so after this ack the queued suspicion is used up: only the buddy rule
  // can put it on the ping to the suspect.
  d.handle(3, {Ping{1, name(0), name(3), addr(3)}});
  ASSERT_TRUE(d.e.broadcasts().empty());
  bool pinged = false;
  d.run_until(kStart + 4 * kSecond, [&](const Outgoing& o) {
    const Ping* p = find_msg<Ping>(o);
    if (p == nullptr) return;
    if (p->target == name(1)) {
      pinged = true;
      bool has_suspect = false;
      for (const Message& m : o.messages)
        if (const Suspect* s = std::get_if<Suspect>(&m); s && s->node == name(1)) has_suspect = true;
      EXPECT_TRUE(has_suspect) << "ping to a suspect must carry the suspicion";
    }
    d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  });
  EXPECT_TRUE(pinged);
}

TEST(Engine, AckToASuspectedOrDeadPingerTellsItSo) {
  EngineConfig c = config();
  c.retransmit_mult = 1;
  Driver d(c);
  d.add_members(1, 5);
  d.handle(3, {Suspect{1, name(1), name(3)}, Dead{1, name(2), name(3)}});
  d.handle(4, {Ping{1, name(0), name(4), addr(4)}});  // uses up the queued broadcasts
  ASSERT_TRUE(d.e.broadcasts().empty());
  d.handle(1, {Ping{2, name(0), name(1), addr(1)}});
  const Suspect* s = find_msg<Suspect>(d.sent.back());
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->node, name(1));
  d.handle(2, {Ping{3, name(0), name(2), addr(2)}});
  const Dead* x = find_msg<Dead>(d.sent.back());
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->node, name(2));
  EXPECT_EQ(d.sent.back().priority, PriorityClass::kUrgent);  // it carries a Dead
}

TEST(Engine, AfterOurOwnStallTheBacklogComesBeforeOurVerdicts) {
  Driver d(config());
  d.add_members(1, 20);
  run_with_established(d, 20, kStart + 100 * kSecond);
  // n5 and n6 are suspected; then we are not run for 60 s (a starved control
  // lcore), longer than their suspicion timeouts.
  d.handle(1, {Suspect{1, name(5), name(1)}, Suspect{1, name(6), name(1)}});
  ASSERT_EQ(d.e.member(name(5))->status, MemberStatus::kSuspect);
  const std::uint64_t woke = d.now + 60 * kSecond;
  ASSERT_LT(*d.e.suspicion_deadline(name(5)), woke);
  d.now = woke;
  d.e.tick(d.now);
  d.collect();
  // Our timers ran out on our absence: no verdict yet.
  EXPECT_EQ(d.e.counters().own_stalls, 1u);
  EXPECT_EQ(d.e.member(name(5))->status, MemberStatus::kSuspect);
  EXPECT_EQ(count_events(d.events, EventKind::kFailed, name(5)), 0u);
  // The backlog holds n5's refutation: it stays; n6 never refuted: dead a
  // probe interval later.
  d.handle(5, {alive(5, 2)});
  run_with_established(d, 20, woke + 2 * kSecond);
  EXPECT_EQ(d.e.member(name(5))->status, MemberStatus::kAlive);
  EXPECT_EQ(count_events(d.events, EventKind::kFailed, name(5)), 0u);
  EXPECT_EQ(d.e.member(name(6))->status, MemberStatus::kDead);
  EXPECT_EQ(d.e.counters().own_stalls, 1u);
}

// ---------------------------------------------------------------- suspicion

TEST(Engine, SuspicionTimeoutShrinksWithIndependentConfirmations) {
  Driver d(config());
  d.add_members(1, 11);  // N = 11, so K = suspicion_mult - 2 = 2 confirmations expected
  d.handle(2, {Suspect{1, name(1), name(2)}});
  const std::uint64_t start = d.now;
  const std::uint64_t min = suspicion_min_timeout(4, 11, kSecond);
  const std::uint64_t max = 6 * min;
  ASSERT_TRUE(d.e.suspicion_deadline(name(1)).has_value());
  EXPECT_EQ(*d.e.suspicion_deadline(name(1)), start + max);
  // The same accuser again: not independent.
  d.handle(2, {Suspect{1, name(1), name(2)}});
  EXPECT_EQ(*d.e.suspicion_deadline(name(1)), start + max);
  d.handle(3, {Suspect{1, name(1), name(3)}});
  const std::uint64_t after_one = *d.e.suspicion_deadline(name(1));
  EXPECT_LT(after_one, start + max);
  EXPECT_GT(after_one, start + min);
  EXPECT_EQ(*d.e.suspicion_confirmations(name(1)), 1u);
  d.handle(4, {Suspect{1, name(1), name(4)}});
  EXPECT_EQ(*d.e.suspicion_deadline(name(1)), start + min);
  // At the deadline it is declared dead: Failed event, urgent Dead broadcast.
  d.run_until(start + min);
  EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kDead);
  EXPECT_EQ(count_events(d.events, EventKind::kFailed, name(1)), 1u);
  EXPECT_EQ(d.e.counters().deaths, 1u);
  d.handle(5, {Ping{9, name(0), name(5), addr(5)}});
  bool dead_sent = false;
  for (const Message& m : d.sent.back().messages)
    if (const Dead* x = std::get_if<Dead>(&m); x && x->node == name(1)) dead_sent = true;
  EXPECT_TRUE(dead_sent);
  EXPECT_EQ(d.sent.back().priority, PriorityClass::kUrgent);
}

// Issue 51: one key holder suspected 30 live members with confirmations
// from invented accusers, and half were dead within the minimum timeout.
// A confirmation counts only from a live member of the view, sent from that
// member's own address; and the suspect hears the suspicion from each member
// that holds it on the ring, so it refutes whatever the timeout.
TEST(Engine, OneKeyHolderCannotConfirmItsOwnSuspicion) {
  Driver d(config());
  d.add_members(1, 12);  // N = 12, so K = 2 confirmations expected
  // Settled (nobody young any more): the suspicion goes by the probe ring, not
  // by epidemic, and a member that holds it on another's word told nobody.
  d.run_until(kStart + 90 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  });
  d.handle(11, {Dead{1, name(11), name(2)}});  // n11 is buried: no longer a voice
  d.sent.clear();
  d.handle(2, {Suspect{1, name(1), name(2)}});
  const std::uint64_t start = d.now;
  const std::uint64_t min = suspicion_min_timeout(4, 11, kSecond);
  const std::uint64_t max = 6 * min;
  ASSERT_EQ(*d.e.suspicion_deadline(name(1)), start + max);
  // The suspect was told, by us, directly.
  bool suspect_told = false;
  for (const Outgoing& o : d.sent)
    if (const Suspect* x = find_msg<Suspect>(o); x && x->node == name(1) && o.to == addr(1)) suspect_told = true;
  EXPECT_TRUE(suspect_told);
  // From the key holder's own address: invented names, real members' names,
  // a buried member's, ours.
  d.handle(2, {Suspect{1, name(1), "ghost-a"}, Suspect{1, name(1), "ghost-b"}, Suspect{1, name(1), name(3)},
               Suspect{1, name(1), name(4)}, Suspect{1, name(1), name(11)}, Suspect{1, name(1), name(0)}});
  EXPECT_EQ(*d.e.suspicion_deadline(name(1)), start + max);
  EXPECT_EQ(*d.e.suspicion_confirmations(name(1)), 0u);
  EXPECT_EQ(d.e.counters().suspicion_confirm_drop_unvouched, 6u);
  // A buried member at its own address: not in the view either.
  d.handle(11, {Suspect{1, name(1), name(11)}});
  EXPECT_EQ(*d.e.suspicion_confirmations(name(1)), 0u);
  EXPECT_EQ(d.e.counters().suspicion_confirm_drop_unvouched, 7u);
  // Members in the view, each from its own address: they count.
  d.handle(3, {Suspect{1, name(1), name(3)}});
  d.handle(4, {Suspect{1, name(1), name(4)}});
  EXPECT_EQ(*d.e.suspicion_confirmations(name(1)), 2u);
  EXPECT_EQ(*d.e.suspicion_deadline(name(1)), start + min);
  EXPECT_EQ(d.e.counters().suspicion_confirm_drop_unvouched, 7u);
}

TEST(Engine, AConfirmationGoesToTheAccusersAndIsNotReGossiped) {
  EngineConfig c = config();
  c.gossip_nodes = 0;  // no gossip rounds: a datagram carries news only as a piggyback
  Driver d(c);
  d.add_members(1, 11);  // N = 11: K = 2 confirmations expected
  d.handle(2, {Suspect{1, name(1), name(2)}});
  d.handle(4, {Ping{1, name(0), name(4), addr(4)}});  // our ack carries the suspicion once
  const BroadcastQueue::Key key{BroadcastQueue::Kind::kMember, name(1)};
  ASSERT_TRUE(d.e.broadcasts().contains(key));
  const std::uint32_t sent_before = d.e.broadcasts().transmits(key);
  ASSERT_GT(sent_before, 0u);
  // A third member's word: counted (the timeout shrinks), not passed on; the
  // queued suspicion keeps its transmissions instead of starting afresh.
  const std::uint64_t deadline = *d.e.suspicion_deadline(name(1));
  d.handle(3, {Suspect{1, name(1), name(3)}});
  EXPECT_EQ(*d.e.suspicion_confirmations(name(1)), 1u);
  EXPECT_LT(*d.e.suspicion_deadline(name(1)), deadline);
  EXPECT_EQ(d.e.broadcasts().transmits(key), sent_before);
  // Our own probe of n1 fails: our confirmation goes straight to both
  // accusers, n2 that started it and n3 that confirmed it.
  std::uint64_t failed_at = 0;
  std::optional<std::uint32_t> confirmations;
  const std::uint64_t failed_before = d.e.counters().probe_failed;
  d.run_until(d.now + 15 * kSecond, [&](const Outgoing& o) {
    if (failed_at == 0 && d.e.counters().probe_failed > failed_before) {
      failed_at = d.now;
      confirmations = d.e.suspicion_confirmations(name(1));
    }
    if (const Ping* p = find_msg<Ping>(o); p != nullptr && p->target != name(1))
      d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  });
  ASSERT_NE(failed_at, 0u) << "our probe of n1 never failed";
  EXPECT_EQ(confirmations, std::optional<std::uint32_t>{2});
  std::set<std::size_t> told;
  for (std::size_t i = 0; i < d.sent.size(); ++i) {
    if (d.sent_at[i] != failed_at) continue;
    for (const Message& m : d.sent[i].messages)
      if (const Suspect* s = std::get_if<Suspect>(&m); s && s->node == name(1) && s->from == name(0))
        for (std::size_t a : {2u, 3u})
          if (d.sent[i].to == addr(a)) told.insert(a);
  }
  EXPECT_EQ(told, (std::set<std::size_t>{2, 3}));
}

TEST(Engine, ASuspicionOnHearsayWhoseVerdictNeverCameIsCheckedByOurOwnProbe) {
  Driver d(config());
  d.add_members(1, 100);  // min 8 s, max 48 s; our ring reaches n1 once in 99 rounds
  d.handle(2, {Suspect{1, name(1), name(2)}});
  const std::uint64_t start = d.now;
  const std::uint64_t min = suspicion_min_timeout(4, 100, kSecond);
  // The accusers' Dead never reaches us. Every member but n1 answers; a
  // member holding n1 dead answers our own accusation with its confirmation,
  // as Engine::correct does.
  std::uint64_t checked_at = 0;
  const auto index = [](const Address& a) { return static_cast<std::size_t>(a.ip[2]) << 8 | a.ip[3]; };
  d.run_until(start + min + 5 * kSecond, [&](const Outgoing& o) {
    const Ping* p = find_msg<Ping>(o);
    if (p != nullptr && p->target == name(1) && checked_at == 0) checked_at = d.now;
    if (p != nullptr && p->target != name(1)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
    if (o.to == addr(1)) return;
    for (const Message& m : o.messages)
      if (const Suspect* s = std::get_if<Suspect>(&m); s && s->node == name(1) && s->from == name(0))
        d.e.handle(o.to, {Suspect{1, name(1), name(index(o.to))}}, d.now);
  });
  EXPECT_EQ(d.e.counters().probe_hearsay, 1u);
  // Pinged at the first probe after the accusers' verdict should have come...
  EXPECT_GE(checked_at, start + min + kSecond);
  EXPECT_LE(checked_at, start + min + 2 * kSecond);
  // ... and buried on our own failed probe and the confirmations it drew,
  // not at the longest timeout (start + 48 s).
  EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kDead);
}

// Suspect messages about n<who> sent to anyone but n<who>, over the next 5 s
// (every ping answered, except those to `silent`).
int suspects_carried(Driver& d, std::size_t who, std::size_t silent = SIZE_MAX) {
  int n = 0;
  d.run_until(d.now + 5 * kSecond, [&](const Outgoing& o) {
    for (const Message& m : o.messages)
      if (const auto* x = std::get_if<Suspect>(&m); x && x->node == name(who) && o.to != addr(who)) ++n;
    if (const Ping* p = find_msg<Ping>(o); p && o.to != addr(silent))
      d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  });
  return n;
}

TEST(Engine, OnTheRingASuspicionIsToldToTheSuspectAndItsNextProbersOnly) {
  Driver d(config());
  d.add_members(1, 99);  // 99 live, ourselves included
  const auto answer = [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  };
  d.run_until(kStart + 90 * kSecond, answer);
  // Heard on another's word: passed on to nobody but the suspect, once (it
  // also gets it on each of our pings to it, the buddy rule).
  d.handle(2, {Suspect{1, name(5), name(2)}});
  ASSERT_EQ(d.e.member(name(5))->status, MemberStatus::kSuspect);
  ASSERT_NE(find_msg<Suspect>(d.sent.back()), nullptr);
  EXPECT_EQ(d.sent.back().to, addr(5));
  EXPECT_EQ(suspects_carried(d, 5), 0);
  EXPECT_EQ(d.e.counters().suspicion_tells, 1u);

  // Our own probe fails: the member we probe next never answers.
  std::optional<std::size_t> target;
  std::set<Address> told;
  std::vector<std::string> expected;
  d.run_until(d.now + 3 * kSecond, [&](const Outgoing& o) {
    const Ping* p = find_msg<Ping>(o);
    if (!target && p != nullptr && p->target != name(5)) target = std::stoul(p->target.substr(1));
    for (const Message& m : o.messages)
      if (const auto* x = std::get_if<Suspect>(&m); x && target && x->node == name(*target) && x->from == name(0)) {
        if (told.empty()) {
          // The ring, from its definition: the live members in name order;
          // in round r position i probes i + 1 + r mod (L - 1). So the
          // target's probers this round and the next are at its position
          // less that; the first three that are not us.
          std::vector<std::string> view;
          for (const Member& mm : d.e.members())
            if (mm.status == MemberStatus::kAlive || mm.status == MemberStatus::kSuspect) view.push_back(mm.name.str());
          std::sort(view.begin(), view.end());
          const std::size_t l = view.size();
          const std::size_t pos = std::lower_bound(view.begin(), view.end(), name(*target)) - view.begin();
          for (std::uint64_t r = d.now / kSecond; expected.size() < 3; ++r) {
            const std::string& prober = view[(pos + l - 1 - r % (l - 1)) % l];
            if (prober != name(0)) expected.push_back(prober);
          }
        }
        told.insert(o.to);
      }
    if (p != nullptr && (!target || p->target != name(*target))) answer(o);
  });
  ASSERT_TRUE(target.has_value());
  ASSERT_EQ(d.e.member(name(*target))->status, MemberStatus::kSuspect);
  std::set<Address> want{addr(*target)};
  for (const std::string& n : expected) want.insert(addr(std::stoul(n.substr(1))));
  EXPECT_EQ(told, want);
  // Counted: one datagram to the suspect and one to each next prober (and
  // the one to n5 above).
  EXPECT_EQ(d.e.counters().suspicion_tells, want.size() + 1);
  const std::uint64_t retells = d.e.counters().suspicion_retells;
  // And told to the suspect again every probe interval while it lasts: one
  // lost datagram must not bury a live member.
  int to_suspect = 0;
  d.run_until(d.now + 4 * kSecond, [&](const Outgoing& o) {
    if (o.to == addr(*target) && find_msg<Suspect>(o) != nullptr) ++to_suspect;
    if (const Ping* p = find_msg<Ping>(o); p && p->target != name(*target)) answer(o);
  });
  EXPECT_GE(to_suspect, 3);
  // Each retell counted (the suspect also hears it on our pings to it).
  EXPECT_GE(d.e.counters().suspicion_retells - retells, 3u);
  EXPECT_LE(d.e.counters().suspicion_retells - retells, static_cast<std::uint64_t>(to_suspect));
  EXPECT_EQ(d.e.counters().suspicion_tells, want.size() + 1);
  EXPECT_EQ(d.e.counters().retell_drop_full, 0u);
}

TEST(Engine, ARefutationOfAToldSuspicionGoesToTheTellerAndOutTheSuspicionsFewTimes) {
  Driver d(config());
  d.add_members(1, 99);
  ASSERT_EQ(d.e.retransmit_limit(), 8u);
  ASSERT_EQ(d.e.suspicion_retransmit_limit(), 4u);
  const auto answer = [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  };
  d.run_until(kStart + 90 * kSecond, answer);
  const auto our_alives = [&](std::size_t from, std::optional<Address> only = std::nullopt) {
    int n = 0;
    for (std::size_t i = from; i < d.sent.size(); ++i)
      for (const Message& m : d.sent[i].messages)
        if (const auto* a = std::get_if<Alive>(&m); a && a->node == name(0) && (!only || d.sent[i].to == *only)) ++n;
    return n;
  };
  std::size_t mark = d.sent.size();
  const std::uint64_t inc = d.e.incarnation();
  d.handle(7, {Suspect{inc, name(0), name(7)}});
  EXPECT_EQ(d.e.incarnation(), inc + 1);
  // At once, to the member that told us.
  EXPECT_EQ(our_alives(mark, addr(7)), 1);
  d.run_until(d.now + 5 * kSecond, answer);
  // That, and the suspicion's own few transmissions.
  EXPECT_EQ(our_alives(mark), 1 + 4);
  // A death everyone heard: refuted with the whole limit, and first-hand to
  // the member that holds us dead (we were cut off from it: it rejoins us).
  mark = d.sent.size();
  const std::uint64_t rejoins = d.e.counters().rejoins;
  d.handle(3, {Dead{inc + 1, name(0), name(3)}});
  EXPECT_EQ(our_alives(mark, addr(3)), 1);
  d.run_until(d.now + 5 * kSecond, answer);
  EXPECT_EQ(our_alives(mark), 1 + 8);
  EXPECT_EQ(d.e.counters().rejoins, rejoins + 1);
}

}  // namespace
}  // namespace gw::cp::engine
