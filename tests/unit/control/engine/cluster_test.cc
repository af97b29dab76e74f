// Whole-protocol tests: many engines on the virtual network of sim_harness.h.
#include <gtest/gtest.h>

#include "control/engine/wire_size.h"
#include "tests/unit/control/engine/sim_harness.h"

namespace gw::cp::engine::testing {
namespace {

constexpr std::size_t kNodes = 32;

EngineConfig test_config() {
  EngineConfig c = EngineConfig::lan();
  c.tombstone_ttl_ns = 600 * kSecond;
  return c;
}

bool converged(SimNet& net, const std::vector<std::size_t>& live) {
  for (std::size_t i : live) {
    if (net.engine(i).num_live() != live.size()) return false;
    for (std::size_t j : live)
      if (net.status(i, j) != MemberStatus::kAlive) return false;
  }
  return true;
}

// Runs until every node in `live` sees exactly `live` alive, or `limit_ns` passes.
bool run_until_converged(SimNet& net, const std::vector<std::size_t>& live, std::uint64_t limit_ns) {
  const std::uint64_t end = net.now() + limit_ns;
  while (!converged(net, live)) {
    if (net.now() >= end) return false;
    net.run_for(250 * kMillisecond);
  }
  return true;
}

// Gossip spreads a join in seconds with high probability, but SWIM's gossip is
// probabilistic: what it misses, anti-entropy repairs within about two push-pull
// intervals (the first has a random phase of up to one interval).
constexpr std::uint64_t kConvergeBound = 100 * kSecond;

std::vector<std::size_t> all_but(std::size_t n, std::size_t skip);

// Node 0 starts alone; node i joins through a random earlier node, 100 ms apart.
// True once all have converged (within kConvergeBound).
// With `join_all`, node i joins through every earlier node (so no gossip luck
// is needed: for tests that switch periodic sync off).
bool build_cluster(SimNet& net, std::size_t n, const EngineConfig& cfg, std::uint64_t seed, bool join_all = false) {
  Rng pick(seed);
  net.add(cfg);
  for (std::size_t i = 1; i < n; ++i) {
    net.run_for(100 * kMillisecond);
    net.add(cfg);
    std::vector<std::size_t> seeds = {static_cast<std::size_t>(pick.uniform(i))};
    if (join_all) seeds = all_but(i, i);
    net.join(i, seeds);
  }
  return run_until_converged(net, all_but(n, n), kConvergeBound);
}

std::vector<std::size_t> all_but(std::size_t n, std::size_t skip) {
  std::vector<std::size_t> v;
  for (std::size_t i = 0; i < n; ++i)
    if (i != skip) v.push_back(i);
  return v;
}

TEST(Cluster, ConvergesAfterJoins) {
  SimNet net(1);
  EXPECT_TRUE(build_cluster(net, kNodes, test_config(), 1));
  EXPECT_EQ(net.decode_failures(), 0u);
  // Every datagram fits the configured size (real encoded bytes).
  EXPECT_LE(net.max_datagram_bytes(), test_config().max_packet_bytes);
  for (std::size_t i = 0; i < kNodes; ++i) {
    EXPECT_EQ(net.count_events(i, EventKind::kFailed, sim_name((i + 1) % kNodes)), 0u);
    EXPECT_EQ(net.engine(i).counters().deaths, 0u) << i;
  }
}

TEST(Cluster, FiftyNodesJoiningOneSeedConverge) {
  // Everybody uses node 0 as its only seed, 50 ms apart: the seed's join answer
  // rate limit (set low here) refuses most joins; the seed still merges each
  // refused joiner, gossip spreads it, and the joiners' retries (to the seed or
  // to a member they heard of meanwhile) get them the whole view.
  SimNet net(9);
  EngineConfig cfg = test_config();
  cfg.join_answer_rate = 2;
  cfg.join_answer_burst = 5;
  net.add(cfg);
  for (std::size_t i = 1; i < 50; ++i) {
    net.run_for(50 * kMillisecond);
    net.add(cfg);
    net.join(i, {0});
  }
  EXPECT_TRUE(run_until_converged(net, all_but(50, 50), kConvergeBound));
  EXPECT_GT(net.engine(0).counters().join_drop_rate, 20u);
  EXPECT_EQ(net.decode_failures(), 0u);
  EXPECT_LE(net.max_datagram_bytes(), cfg.max_packet_bytes);
}

TEST(Cluster, ConvergesWithLoss) {
  SimNet net(2);
  net.set_loss_ppm(20'000);  // 2 % of datagrams lost
  EXPECT_TRUE(build_cluster(net, 24, test_config(), 2));
}

TEST(Cluster, SilentNodeDetectedAsFailedByEveryMemberWithinSuspicionBound) {
  const EngineConfig cfg = test_config();
  SimNet net(3);
  ASSERT_TRUE(build_cluster(net, kNodes, cfg, 3));

  const std::size_t victim = 7;
  net.set_up(victim, false);
  const std::uint64_t down_at = net.now();
  // Bound: the victim is probed within a few intervals (N members each probe one
  // member per interval), then the suspicion runs at most its max timeout, and
  // the Dead spreads within a few gossip rounds; health may stretch intervals.
  const std::uint64_t max_suspicion =
      cfg.suspicion_max_timeout_mult * suspicion_min_timeout(cfg.suspicion_mult, kNodes, cfg.probe_interval_ns);
  const std::uint64_t bound = 10 * cfg.probe_interval_ns + max_suspicion + 5 * kSecond;
  // Nobody may bury it before the minimum suspicion timeout has run.
  const std::uint64_t min_suspicion = suspicion_min_timeout(cfg.suspicion_mult, kNodes, cfg.probe_interval_ns);
  net.run_for(min_suspicion);
  for (std::size_t i : all_but(kNodes, victim)) EXPECT_NE(net.status(i, victim), MemberStatus::kDead) << "node " << i;
  net.run_until(down_at + bound);
  for (std::size_t i : all_but(kNodes, victim)) {
    EXPECT_EQ(net.status(i, victim), MemberStatus::kDead) << "node " << i;
    EXPECT_EQ(net.count_events(i, EventKind::kFailed, sim_name(victim)), 1u) << "node " << i;
    EXPECT_EQ(net.count_events(i, EventKind::kLeave, sim_name(victim)), 0u);
  }
  // Nobody else was harmed.
  for (std::size_t i : all_but(kNodes, victim))
    for (std::size_t j : all_but(kNodes, victim))
      EXPECT_EQ(net.status(i, j), MemberStatus::kAlive) << i << " about " << j;
  // Lifeguard: helpers that could not reach the victim said so in time, so
  // the probers knew the fault was not theirs (nacks sent at the full probe
  // timeout arrived after the probe had closed and were all dropped).
  std::uint64_t nacks = 0;
  for (std::size_t i : all_but(kNodes, victim)) nacks += net.engine(i).counters().probe_nack_received;
  EXPECT_GT(nacks, 0u);
}

TEST(Cluster, FalselySuspectedLiveNodeRefutes) {
  SimNet net(4);
  ASSERT_TRUE(build_cluster(net, 20, test_config(), 4));

  const std::size_t target = 5;
  const std::uint64_t inc = net.engine(target).incarnation();
  // Node 3 is told (as if by node 9) that node 5 is suspect.
  net.inject(3, 9, Compound{Suspect{inc, sim_name(target), sim_name(9)}});
  EXPECT_EQ(net.status(3, target), MemberStatus::kSuspect);
  net.run_for(60 * kSecond);

  EXPECT_GE(net.engine(target).counters().refutations, 1u);
  EXPECT_GT(net.engine(target).incarnation(), inc);
  for (std::size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(net.status(i, target), MemberStatus::kAlive) << "node " << i;
    EXPECT_EQ(net.count_events(i, EventKind::kFailed, sim_name(target)), 0u) << "node " << i;
    if (i != target) {
      EXPECT_EQ(net.engine(i).member(sim_name(target))->incarnation, net.engine(target).incarnation());
    }
  }
}

TEST(Cluster, FlakyLinkSuspicionIsRefutedAfterRecovery) {
  EngineConfig cfg = test_config();
  SimNet net(5);
  ASSERT_TRUE(build_cluster(net, 16, cfg, 5));
  const std::size_t target = 2;
  net.set_isolated(target, true);
  // Isolated until somebody suspects it (well below the suspicion timeout).
  std::size_t suspecting = 0;
  for (int step = 0; step < 100 && suspecting == 0; ++step) {
    net.run_for(100 * kMillisecond);
    for (std::size_t i : all_but(16, target))
      if (net.status(i, target) == MemberStatus::kSuspect) ++suspecting;
  }
  ASSERT_GT(suspecting, 0u);
  net.set_isolated(target, false);
  EXPECT_TRUE(run_until_converged(net, all_but(16, 16), 30 * kSecond));
  EXPECT_GE(net.engine(target).counters().refutations, 1u);
  // Refuted in time: nobody declared it failed.
  for (std::size_t i : all_but(16, target))
    EXPECT_EQ(net.count_events(i, EventKind::kFailed, sim_name(target)), 0u) << "node " << i;
}

TEST(Cluster, NodeWronglyDeclaredDeadRefutesWithoutSync) {
  EngineConfig cfg = test_config();
  cfg.push_pull_interval_ns = 600 * kSecond;  // recovery must come from gossip, not sync
  SimNet net(10);
  ASSERT_TRUE(build_cluster(net, 12, cfg, 10, true));
  const std::size_t lost = 2;
  const std::uint64_t inc = net.engine(lost).incarnation();
  net.set_isolated(lost, true);
  net.run_for(22 * kSecond);
  for (std::size_t i : all_but(12, lost)) ASSERT_EQ(net.status(i, lost), MemberStatus::kDead);
  net.set_isolated(lost, false);
  // Without any sync it hears of its death (acks to its pings, gossip to the
  // recently dead) and refutes; its own stale suspicions reach their targets
  // through the buddy rule on acks, and they refute too.
  EXPECT_TRUE(run_until_converged(net, all_but(12, 12), 30 * kSecond));
  EXPECT_GT(net.engine(lost).incarnation(), inc);
  for (std::size_t i : all_but(12, lost)) {
    EXPECT_EQ(net.count_events(i, EventKind::kFailed, sim_name(lost)), 1u);
    EXPECT_EQ(net.count_events(i, EventKind::kJoin, sim_name(lost)), 2u);
  }
}

TEST(Cluster, LongPartitionHealsThroughReconnectSyncs) {
  EngineConfig cfg = test_config();
  SimNet net(11);
  ASSERT_TRUE(build_cluster(net, 12, cfg, 11));
  const std::size_t lost = 3;
  net.set_isolated(lost, true);
  // Long enough for both sides to bury each other and stop gossiping to the dead.
  net.run_for(120 * kSecond);
  for (std::size_t i : all_but(12, lost)) ASSERT_EQ(net.status(i, lost), MemberStatus::kDead);
  EXPECT_EQ(net.engine(lost).num_live(), 1u);
  net.set_isolated(lost, false);
  EXPECT_TRUE(run_until_converged(net, all_but(12, 12), 150 * kSecond));
  EXPECT_GT(net.engine(lost).counters().sync_reconnects, 0u);
}

TEST(Cluster, LeaveIsRecordedAsLeftByAll) {
  SimNet net(6);
  ASSERT_TRUE(build_cluster(net, 20, test_config(), 6));

  const std::size_t leaver = 11;
  net.leave(leaver);
  EXPECT_FALSE(net.engine(leaver).leave_done());
  std::uint64_t waited = 0;
  while (!net.engine(leaver).leave_done() && waited < 10 * kSecond) {
    net.run_for(100 * kMillisecond);
    waited += 100 * kMillisecond;
  }
  ASSERT_TRUE(net.engine(leaver).leave_done());
  EXPECT_GE(net.engine(leaver).broadcasts().retired(), 1u);
  net.set_up(leaver, false);  // the host exits
  net.run_for(60 * kSecond);
  for (std::size_t i : all_but(20, leaver)) {
    EXPECT_EQ(net.status(i, leaver), MemberStatus::kLeft) << "node " << i;
    EXPECT_EQ(net.count_events(i, EventKind::kLeave, sim_name(leaver)), 1u) << "node " << i;
    EXPECT_EQ(net.count_events(i, EventKind::kFailed, sim_name(leaver)), 0u) << "node " << i;
  }
}

TEST(Cluster, TombstonesBlockStaleAliveAndRestartRejoins) {
  EngineConfig cfg = test_config();
  SimNet net(7);
  ASSERT_TRUE(build_cluster(net, 12, cfg, 7));

  const std::size_t victim = 4;
  const std::uint64_t old_inc = net.engine(victim).incarnation();
  const Alive stale{old_inc, sim_name(victim), sim_addr(victim), {}, 1};
  net.set_up(victim, false);
  net.run_for(120 * kSecond);
  for (std::size_t i : all_but(12, victim)) ASSERT_EQ(net.status(i, victim), MemberStatus::kDead);

  // A phantom replays the victim's old Alive: the dead stay dead.
  const std::uint64_t ignored_before = net.engine(0).counters().alive_drop_tombstone;
  net.inject(0, 9, Compound{stale});
  EXPECT_EQ(net.status(0, victim), MemberStatus::kDead);
  EXPECT_EQ(net.engine(0).counters().alive_drop_tombstone, ignored_before + 1);
  net.run_for(10 * kSecond);
  for (std::size_t i : all_but(12, victim)) EXPECT_EQ(net.status(i, victim), MemberStatus::kDead);

  // A real restart (fresh state, incarnation 0) learns of its tombstone from the
  // seed and refutes it with a higher incarnation: everybody takes it back.
  net.start(victim, cfg);
  net.join(victim, {0});
  EXPECT_TRUE(run_until_converged(net, all_but(12, 12), kConvergeBound));
  EXPECT_GT(net.engine(victim).incarnation(), old_inc);
  for (std::size_t i : all_but(12, victim)) {
    EXPECT_EQ(net.status(i, victim), MemberStatus::kAlive) << "node " << i;
    EXPECT_EQ(net.count_events(i, EventKind::kJoin, sim_name(victim)), 2u) << "node " << i;
  }
}

TEST(Cluster, TombstonesExpireAfterTtl) {
  EngineConfig cfg = test_config();
  cfg.tombstone_ttl_ns = 60 * kSecond;
  SimNet net(8);
  ASSERT_TRUE(build_cluster(net, 8, cfg, 8));
  net.set_up(3, false);
  net.run_for(50 * kSecond);
  for (std::size_t i : all_but(8, 3)) ASSERT_EQ(net.status(i, 3), MemberStatus::kDead);
  net.run_for(120 * kSecond);
  for (std::size_t i : all_but(8, 3)) {
    EXPECT_EQ(net.status(i, 3), std::nullopt) << "node " << i;
    EXPECT_EQ(net.engine(i).counters().tombstones_expired, 1u);
    EXPECT_EQ(net.engine(i).table().size(), 7u);
  }
}

std::vector<std::uint8_t> scenario_trace(std::uint64_t seed) {
  SimNet net(seed);
  net.set_loss_ppm(10'000);
  build_cluster(net, 10, test_config(), seed);
  net.run_for(20 * kSecond);
  net.set_up(3, false);
  net.leave(6);
  net.run_for(40 * kSecond);
  return net.trace();
}

TEST(Cluster, SameSeedGivesIdenticalBytesDifferentSeedDiffers) {
  const std::vector<std::uint8_t> a = scenario_trace(42);
  const std::vector<std::uint8_t> b = scenario_trace(42);
  const std::vector<std::uint8_t> c = scenario_trace(43);
  ASSERT_GT(a.size(), 10'000u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

}  // namespace
}  // namespace gw::cp::engine::testing
