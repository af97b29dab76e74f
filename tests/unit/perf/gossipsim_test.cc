// gossipsim: the simulator's properties on small clusters (no timings), the
// scenario loader's errors, and the CLI's exit codes and outputs.
#include <gtest/gtest.h>

#include <typeinfo>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "perf/gossipsim/report.h"
#include "perf/gossipsim/scenario.h"
#include "perf/gossipsim/simulator.h"

namespace gw::sim {
namespace {

Scenario load(const std::string& yaml) { return load_scenario_string(yaml, "test.yaml"); }

// The loader's message for a bad scenario; empty if it loads.
std::string load_error(const std::string& yaml) {
  try {
    load(yaml);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

// 40 members, 1% loss, two crashes at 40 s.
constexpr const char* kSmall = R"(
name: small
seed: 21
duration_s: 90
measure_from_s: 20
members: {count: 40, join_over_s: 8, seeds: 2}
network: {latency_base_ms: 1, latency_jitter_ms: 2, loss: 0.01}
failures:
  - {at_s: 40, count: 2}
)";

TEST(GossipSim, SameSeedSameResult) {
  const Scenario s = load(kSmall);
  const Results a = run_scenario(s);
  const Results b = run_scenario(s);
  EXPECT_EQ(to_json(a, false).dump(), to_json(b, false).dump());
  EXPECT_EQ(to_csv(a), to_csv(b));
  EXPECT_EQ(to_svg(a), to_svg(b));
  Scenario other = s;
  other.seed = 22;
  EXPECT_NE(to_json(run_scenario(other), false).dump(), to_json(a, false).dump());
}

// Handing the receiver the sender's messages instead of decoding the codec
// bytes is only a shortcut: a storm (every message type, tombstones,
// corrections) gives the same results byte for byte either way.
TEST(GossipSim, DecodingAtTheReceiverChangesNothing) {
  Scenario s = load_scenario_file(std::string(GOSSIPSIM_SCENARIOS) + "/ci/storm-onset.yaml");
  s.duration_ns = 40'000'000'000ULL;
  const Results handed = run_scenario(s);
  s.decode_at_receiver = true;
  const Results decoded = run_scenario(s);
  EXPECT_EQ(to_json(handed, false).dump(), to_json(decoded, false).dump());
  EXPECT_EQ(to_csv(handed), to_csv(decoded));
  EXPECT_GT(decoded.datagrams_delivered, 1000u);
  EXPECT_EQ(decoded.decode_failures, 0u);
}

TEST(GossipSim, ConvergesAndDetectsFailures) {
  const Results r = run_scenario(load(kSmall));
  EXPECT_TRUE(r.converged_at_end);
  EXPECT_EQ(r.final_expected_view, 38u);
  EXPECT_EQ(r.final_view_min, 38u);
  EXPECT_EQ(r.final_view_max, 38u);
  EXPECT_GE(r.first_converged_s, 0);
  ASSERT_EQ(r.detections.size(), 2u);
  for (const Detection& d : r.detections) {
    EXPECT_EQ(d.detected, d.observers) << d.node;
    EXPECT_GT(d.first_s, 0);
    EXPECT_LE(d.first_s, d.p99_s);
    EXPECT_LE(d.p99_s, d.all_s);
  }
  EXPECT_EQ(r.undetected, 0u);
  EXPECT_EQ(r.false_positives, 0u);
  EXPECT_EQ(r.resurrections, 0u);
  EXPECT_EQ(r.urgent_drops, 0u);
  // Real codec bytes: every datagram decoded, none over the packet limit.
  EXPECT_EQ(r.decode_failures, 0u);
  EXPECT_GT(r.bytes_sent, 0u);
  EXPECT_LE(r.max_datagram_bytes, 1400u);
  EXPECT_GT(r.datagrams_lost, 0u);  // 1% loss is applied
  EXPECT_GT(r.egress_bytes_per_s.mean, 0);
  EXPECT_LE(r.egress_bytes_per_s.mean, r.egress_bytes_per_s.p99);
  EXPECT_LE(r.egress_bytes_per_s.p99, r.egress_bytes_per_s.max);
  EXPECT_TRUE(check_expectations(load(kSmall), r).empty());
}

// The poisoned-mesh incident in small: phantoms join and vanish without leaving.
// Tombstones (120 s) expire inside the run, where a resurrection would show. A
// gone member can stay suspect in one view for a long while (merged deaths
// start as suspicion), hence the long tail after the last phantom dies (~40 s).
TEST(GossipSim, PhantomStormLeavesExactlyTheSteadyMembers) {
  const Results r = run_scenario(load(R"(
name: phantoms
seed: 41
duration_s: 300
sample_interval_s: 5
members: {count: 40, join_over_s: 5, seeds: 2}
engine: {tombstone_ttl_s: 120}
network: {loss: 0.01}
phantoms: {count: 200, start_s: 10, over_s: 20, min_life_s: 5, max_life_s: 10}
)"));
  EXPECT_EQ(r.resurrections, 0u);
  EXPECT_EQ(r.zombies_at_end, 0u);
  EXPECT_EQ(r.urgent_drops, 0u);
  EXPECT_TRUE(r.converged_at_end);
  EXPECT_EQ(r.final_view_min, 40u);
  EXPECT_EQ(r.final_view_max, 40u);
  // The phantoms were really there: views grew well past the steady count.
  std::uint32_t peak = 0;
  for (const Sample& s : r.series) peak = std::max(peak, s.view_max);
  EXPECT_GT(peak, 70u);
}

// False deaths split by subject: at 20 % loss, live phantoms (newcomers in a
// storm, buried without a suspicion's wait) are declared dead by mistake; the
// steady members are not.
TEST(GossipSim, FalseDeathsOfLivePhantomsAreCountedApart) {
  const Results r = run_scenario(load(R"(
name: phantoms-lossy
seed: 41
duration_s: 120
sample_interval_s: 5
members: {count: 40, join_over_s: 5, seeds: 2}
network: {loss: 0.2}
phantoms: {count: 200, start_s: 10, over_s: 20, min_life_s: 20, max_life_s: 40}
)"));
  EXPECT_GT(r.false_positives_phantom, 0u);
  EXPECT_EQ(r.false_positives, r.false_positives_phantom);
}

TEST(GossipSim, PartitionHeals) {
  const Results r = run_scenario(load(R"(
name: partition
seed: 3
duration_s: 120
members: {count: 40, join_over_s: 5, seeds: 2}
network: {loss: 0.01}
partitions:
  - {start_s: 15, end_s: 45, fraction: 0.5}
)"));
  // Each side declared the other dead (the false deaths a split causes) ...
  EXPECT_GT(r.false_positives_partition, 0u);
  // (some suspicions from the split may run out just after the heal)
  EXPECT_EQ(r.false_positives, r.false_positives_partition + r.false_positives_after_heal);
  EXPECT_LT(r.false_positives_after_heal, r.false_positives_partition / 10);
  // ... and every view is whole again after the heal.
  EXPECT_TRUE(r.converged_at_end);
  EXPECT_GE(r.converged_after_heal_s, 0);
  EXPECT_EQ(r.final_view_min, 40u);
  EXPECT_EQ(r.urgent_drops, 0u);
}

// A one-way partition: the first side is not heard (what it sends to the
// second side is lost), and it still hears the second side.
TEST(GossipSim, OneWayPartitionDropsOnlyOneDirection) {
  const std::string base = R"(
name: one-way
seed: 5
duration_s: 60
members: {count: 30, join_over_s: 5, seeds: 2}
network: {loss: 0}
)";
  const Results one_way = run_scenario(load(base + "partitions: [{start_s: 15, end_s: 40, fraction: 0.2, direction: one_way}]\n"));
  EXPECT_GT(one_way.datagrams_partitioned[0], 100u);
  EXPECT_EQ(one_way.datagrams_partitioned[1], 0u);
  // Without random loss, every lost datagram is the partition's.
  EXPECT_EQ(one_way.datagrams_lost, one_way.datagrams_partitioned[0]);
  // The probes fail across it both ways (a ping, or its ack, is lost): the
  // false deaths it causes count as across the partition.
  EXPECT_GT(one_way.false_positives_partition, 0u);
  EXPECT_TRUE(one_way.converged_at_end);
  const Results both = run_scenario(load(base + "partitions: [{start_s: 15, end_s: 40, fraction: 0.2}]\n"));
  EXPECT_GT(both.datagrams_partitioned[0], 100u);
  EXPECT_GT(both.datagrams_partitioned[1], 100u);
  EXPECT_EQ(both.datagrams_lost, both.datagrams_partitioned[0] + both.datagrams_partitioned[1]);
  EXPECT_NE(load_error(base + "partitions: [{start_s: 1, end_s: 2, direction: sideways}]\n")
                .find("partitions[0].direction: must be both or one_way, got 'sideways'"),
            std::string::npos);
}

// Each member's clock: drawn from the seed (the same seed, the same clocks;
// another seed, others), within the scenario's bounds; the engines run on
// them and never see one go back, through restarts, stalls and phantoms.
TEST(GossipSim, PerMemberClocksAreSeededBoundedAndNeverGoBack) {
  const std::string base = R"(
name: clocks
seed: 8
duration_s: 70
members: {count: 30, join_over_s: 5, seeds: 2}
network: {loss: 0.01}
failures: [{at_s: 20, count: 3, restart_after_s: 25}, {at_s: 35, count: 2}]
phantoms: {count: 20, start_s: 10, over_s: 10, min_life_s: 3, max_life_s: 8}
stalls: {fraction: 0.1, duration_ms: 1500, period_ms: 7000}
)";
  // (Restarted 25 s after the crash: a life restarted before all have seen it
  // die, up to 15 s here, is never detected by some, whatever the clocks.)
  // The most the loader allows: a day's spread of boot times, a 1 % drift.
  const Scenario s = load(base + "clocks: {offset_max_s: 86400, drift_max_ppm: 10000}\n");
  const Results a = run_scenario(s);
  ASSERT_EQ(a.clocks.size(), 50u);
  EXPECT_EQ(a.clock_regressions, 0u);
  std::uint64_t lo = UINT64_MAX;
  std::uint64_t hi = 0;
  std::int64_t dlo = 0;
  std::int64_t dhi = 0;
  for (const Results::Clock& c : a.clocks) {
    EXPECT_LE(c.offset_ns, 86'400'000'000'000ULL);
    EXPECT_LE(std::abs(c.drift_ppb), 10'000'000);
    lo = std::min(lo, c.offset_ns);
    hi = std::max(hi, c.offset_ns);
    dlo = std::min(dlo, c.drift_ppb);
    dhi = std::max(dhi, c.drift_ppb);
  }
  // Spread over the range, not one clock for all.
  EXPECT_GT(hi - lo, 3'600'000'000'000ULL);
  EXPECT_LT(dlo, -1'000'000);
  EXPECT_GT(dhi, 1'000'000);
  // The membership works on them: every crash seen, the restarted back.
  EXPECT_EQ(a.undetected, 0u);
  EXPECT_GE(a.restarts_all_alive_after_s, 0);
  EXPECT_TRUE(a.converged_at_end);
  EXPECT_EQ(a.resurrections, 0u);
  const Results again = run_scenario(s);
  EXPECT_EQ(again.clocks, a.clocks);
  EXPECT_EQ(to_json(again, false).dump(), to_json(a, false).dump());
  Scenario other = s;
  other.seed = 9;
  EXPECT_NE(run_scenario(other).clocks, a.clocks);
  // 0 and 0: one clock for all.
  const Results shared = run_scenario(load(base + "clocks: {offset_max_s: 0, drift_max_ppm: 0}\n"));
  for (const Results::Clock& c : shared.clocks) EXPECT_EQ(c, Results::Clock{});
  EXPECT_EQ(shared.clock_regressions, 0u);
  // On by default.
  const Scenario d = load(base);
  EXPECT_EQ(d.clocks.offset_max_ns, 86'400'000'000'000ULL);
  EXPECT_EQ(d.clocks.drift_max_ppm, 100);
}

TEST(GossipSimScenario, ClockFieldsAreChecked) {
  const std::string base = "name: x\nduration_s: 10\nmembers: {count: 3}\n";
  EXPECT_NE(load_error(base + "clocks: {drift_max_ppm: -1}\n")
                .find("test.yaml:4: clocks.drift_max_ppm: out of range: got '-1', must be 0..10000"),
            std::string::npos);
  EXPECT_NE(load_error(base + "clocks: {offset_max_s: 1e9}\n").find("clocks.offset_max_s: out of range"),
            std::string::npos);
  EXPECT_NE(load_error(base + "clocks: {offset_max: 5}\n").find("clocks.offset_max: unknown field"),
            std::string::npos);
  EXPECT_NE(load_error(base + "clocks: {drift_max_ppm: fast}\n").find("clocks.drift_max_ppm: expected a number"),
            std::string::npos);
  const Scenario ok = load(base + "clocks: {offset_max_s: 7200, drift_max_ppm: 50}\n");
  EXPECT_EQ(ok.clocks.offset_max_ns, 7'200'000'000'000ULL);
  EXPECT_EQ(ok.clocks.drift_max_ppm, 50);
  EXPECT_FALSE(ok.clocks.shared());
}

TEST(GossipSim, EgressBudgetIsRespected) {
  const Scenario s = load(R"(
name: budget
seed: 11
duration_s: 60
measure_from_s: 20
members: {count: 60, join_over_s: 10, seeds: 2}
network: {loss: 0.01, egress_bytes_per_s: 4000, egress_burst_bytes: 2048,
          egress_queue_bytes: 32768, members_per_link: 10, link_capacity_bytes_per_s: 1000000}
expect: {budget_respected: true, no_urgent_drop: true}
)");
  const Results r = run_scenario(s);
  EXPECT_EQ(r.budget_violations, 0u);
  // The real shaper had work to do: datagrams waited for tokens.
  EXPECT_GT(r.egress_deferred[1] + r.egress_deferred[2] + r.egress_deferred[3], 0u);
  // A token bucket lets out at most its depth plus the refill in one 1 s sample.
  EXPECT_LE(r.egress_peak_interval_bytes_per_s, 4000 + 2048);
  EXPECT_LE(r.egress_bytes_per_s.max, 4000 + 2048 / 40.0);  // 40 s measured
  EXPECT_GT(r.link_fraction_max, 0);
  EXPECT_LE(r.link_fraction_max, 10 * 6048 / 1e6);
  EXPECT_TRUE(check_expectations(s, r).empty());
}

TEST(GossipSim, StalledMembersHoldTheirInbox) {
  const Results r = run_scenario(load(R"(
name: stalls
seed: 5
duration_s: 60
members: {count: 40, join_over_s: 5, seeds: 2}
stalls: {fraction: 0.1, duration_ms: 2000, period_ms: 6000, start_s: 15, end_s: 50}
)"));
  // Stalled members miss their acks' deadlines and get suspected, then refute.
  EXPECT_GT(r.suspicions, 0u);
  EXPECT_EQ(r.false_positives_healthy, 0u);
  EXPECT_TRUE(r.converged_at_end);
}

// Wire bytes are codec bytes plus header and tag per datagram, and the by-type
// split adds up to the totals.
TEST(GossipSim, WireBytesAndMessageTypesAddUp) {
  const Results r = run_scenario(load(kSmall));
  EXPECT_NEAR(r.egress_bytes_per_s.mean,
              r.egress_payload_bytes_per_s.mean + kWireOverheadBytes * r.egress_packets_per_s.mean, 1e-6);
  EXPECT_EQ(r.bytes_sent, r.payload_bytes_sent + kWireOverheadBytes * r.datagrams_on_wire);
  double bytes = 0, payload = 0, packets = 0;
  for (const TypeRate& t : r.egress_by_type) {
    bytes += t.bytes_per_s;
    payload += t.payload_bytes_per_s;
    packets += t.packets_per_s;
  }
  EXPECT_NEAR(bytes, r.egress_bytes_per_s.mean, 1e-6);
  EXPECT_NEAR(payload, r.egress_payload_bytes_per_s.mean, 1e-6);
  EXPECT_NEAR(packets, r.egress_packets_per_s.mean, 1e-9);
  // A steady cluster probes: about one ping and one ack per member-second.
  EXPECT_GT(r.egress_by_type[0].packets_per_s, 0.5);  // ping
  EXPECT_GT(r.egress_by_type[1].packets_per_s, 0.5);  // ack
  EXPECT_GE(r.converged_after_last_join_s, 0);
  const nlohmann::json j = to_json(r, false);
  EXPECT_TRUE(j["egress"]["by_type"].contains("sync_response"));
  EXPECT_TRUE(j["egress"]["by_type"]["ping"].contains("bytes_per_member_s"));
}

// seed_mode shared: every joiner contacts member 0 (seeds: 1), so member 0
// receives every member's join; random spreads them over earlier members.
TEST(GossipSim, SharedSeedModeJoinsThroughTheSeed) {
  const std::string base = "name: seeds\nseed: 8\nduration_s: 30\nmembers: {count: 40, join_over_s: 8, seeds: 1";
  const Results shared = run_scenario(load(base + ", seed_mode: shared}\n"));
  EXPECT_GE(shared.join_requests, 39u);
  // Every member's join went to the seed (the rest are the whole-view syncs a
  // member sends to others right after joining).
  EXPECT_GE(shared.join_requests_at_seeds, 39u);
  EXPECT_TRUE(shared.converged_at_end);
  const Results random = run_scenario(load(base + "}\n"));
  EXPECT_GE(random.join_requests, 39u);
  EXPECT_LT(random.join_requests_at_seeds, random.join_requests / 2);
}

// A budget far below what joins want: the real shaper defers and drops (lowest
// classes), never lets a member past what its token bucket allows, and the
// simulator's release schedule tracks its queues exactly.
TEST(GossipSim, ShaperHoldsATightBudget) {
  const Scenario s = load(R"(
name: tight
seed: 11
duration_s: 60
measure_from_s: 20
members: {count: 60, join_over_s: 10, seeds: 2}
network: {loss: 0.01, egress_bytes_per_s: 1500, egress_burst_bytes: 2048, egress_queue_bytes: 8192}
failures:
  - {at_s: 30, count: 3, restart_after_s: 10}
expect: {budget_respected: true, no_urgent_drop: true, egress_bytes_per_member_max: 1500}
)");
  const Results r = run_scenario(s);
  EXPECT_EQ(r.budget_violations, 0u);
  EXPECT_GT(r.egress_deferred[2], 0u);
  // The engine sizes what it sends to the budget (egress_budget.h): its
  // gossip rounds were cut short, and the shaper, the backstop, dropped no
  // urgent datagram.
  EXPECT_GT(to_json(r, false)["engine_counters"]["whole_run"]["gossip_budget_short"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(r.egress_drops[0], 0u);
  EXPECT_EQ(r.egress_expired[0], 0u);
  EXPECT_LE(r.egress_peak_interval_bytes_per_s, 1500 + 2048);
  EXPECT_LE(r.egress_bytes_per_s.max, 1500 + 2048 / 40.0);
  EXPECT_TRUE(check_expectations(s, r).empty());
  // The same with no budget sends more than the budget: the shaper did the work.
  Scenario free = s;
  free.network.egress_bytes_per_s = 0;
  EXPECT_GT(run_scenario(free).egress_peak_interval_bytes_per_s, 1500 + 2048);
}

// The default 4 MiB egress queue at 3 kB/s is a 23-minute delay line. The
// engine sizes what it sends to the budget and the queue's age is bounded (5 s
// by default), so what a member's queue holds, and so what the simulator holds
// for it, is bounded by the budget, not by the queue's size.
TEST(GossipSim, DefaultQueueAtATightBudgetIsHeldInBoundedMemory) {
  const Scenario s = load(R"(
name: tight-default-queue
seed: 13
duration_s: 60
measure_from_s: 20
members: {count: 120, join_over_s: 0, seeds: 3, seed_mode: shared}
network: {loss: 0.01, egress_bytes_per_s: 3000, egress_burst_bytes: 8192}
failures:
  - {at_s: 30, count: 2}
expect: {budget_respected: true, no_urgent_drop: true}
)");
  ASSERT_EQ(s.network.egress_queue_bytes, 4u << 20);  // the gateway's default
  ASSERT_EQ(s.network.egress_max_age_ns, 5'000'000'000ULL);
  const Results r = run_scenario(s);
  // At most what arrives in one age bound: 5 s of the budget and the burst,
  // twice over for what the engine sends into debt (probes and urgent news).
  EXPECT_LE(r.egress_queue_bytes_max, 2 * (5 * 3000 + 8192));
  EXPECT_TRUE(check_expectations(s, r).empty());
  // A budget below what probes alone need (the engine cannot size down to
  // it): without the age bound the queue grows for as long as the run; with
  // it, what waited too long is dropped (expired) and the queue stays shorter.
  Scenario starved = s;
  starved.network.egress_bytes_per_s = 150;
  const Results bounded = run_scenario(starved);
  starved.network.egress_max_age_ns = 0;
  const Results unbounded = run_scenario(starved);
  EXPECT_GT(unbounded.egress_queue_bytes_max, bounded.egress_queue_bytes_max + 5'000);
  EXPECT_GT(bounded.egress_expired[1], 0u);
  EXPECT_EQ(unbounded.egress_expired[1], 0u);
}

// Crashed members restart with a higher incarnation and join again: every view
// holds them again, their return is not a resurrection, and their old death
// (seen by all before the restart) was detected.
TEST(GossipSim, RestartedMembersAreAliveAgain) {
  const Scenario s = load(R"(
name: restart
seed: 4
duration_s: 90
members: {count: 30, join_over_s: 5, seeds: 2}
network: {loss: 0.01}
failures:
  - {at_s: 20, count: 3, restart_after_s: 30}
expect: {converged: true, no_resurrection: true, restarts_alive_within_s: 15, detection_all_within_s: 25}
)");
  const Results r = run_scenario(s);
  ASSERT_EQ(r.detections.size(), 3u);
  for (const Detection& d : r.detections) EXPECT_EQ(d.detected, d.observers) << d.node;
  EXPECT_EQ(r.resurrections, 0u);
  EXPECT_EQ(r.zombies_at_end, 0u);
  EXPECT_TRUE(r.converged_at_end);
  EXPECT_EQ(r.final_expected_view, 30u);
  EXPECT_EQ(r.final_view_min, 30u);
  ASSERT_EQ(r.restarts.size(), 1u);
  EXPECT_EQ(r.restarts[0].members, 3u);
  EXPECT_EQ(r.restarts[0].at_s, 50);
  EXPECT_GE(r.restarts_all_alive_after_s, 0);
  EXPECT_TRUE(check_expectations(s, r).empty());
  // Without the restart the expected view stays at 27.
  Scenario down = s;
  down.failures[0].restart_after_ns.reset();
  EXPECT_EQ(run_scenario(down).final_expected_view, 27u);
}

// Members that leave and restart before their leave linger ends stay up: the
// old life's scheduled stop does not end the new one.
TEST(GossipSim, QuickRestartAfterLeaveStaysUp) {
  const Results r = run_scenario(load(R"(
name: leave-restart
seed: 4
duration_s: 40
members: {count: 20, join_over_s: 3, seeds: 2}
failures:
  - {at_s: 10, count: 3, leave: true, restart_after_s: 2}
)"));
  EXPECT_EQ(r.final_expected_view, 20u);
  EXPECT_TRUE(r.converged_at_end);
  EXPECT_EQ(r.resurrections, 0u);
  EXPECT_GE(r.restarts_all_alive_after_s, 0);
}

// The phantom storm metrics: views overshoot what is truly alive, then recover.
TEST(GossipSim, StormMetrics) {
  const Results r = run_scenario(load(R"(
name: storm
seed: 9
duration_s: 90
members: {count: 30, join_over_s: 5, seeds: 2}
engine: {tombstone_ttl_s: 60}
phantoms: {count: 40, start_s: 10, over_s: 10, min_life_s: 5, max_life_s: 10}
)"));
  std::uint32_t phantoms_peak = 0;
  for (const Sample& x : r.series) phantoms_peak = std::max(phantoms_peak, x.phantoms_up);
  EXPECT_GT(phantoms_peak, 10u);
  EXPECT_GT(r.view_excess_max, 0);
  EXPECT_GT(r.view_excess_max_fraction, 0);
  EXPECT_GT(r.last_phantom_death_s, 20);
  EXPECT_GE(r.recovered_after_last_phantom_s, 0);
  // From the recovery sample on, every sample is converged.
  for (const Sample& x : r.series) {
    if (x.t_s >= r.last_phantom_death_s + r.recovered_after_last_phantom_s) {
      EXPECT_TRUE(x.converged) << x.t_s;
    }
  }
}

// Each expect: bound reports its own line when violated.
TEST(GossipSim, NewExpectationsReportViolations) {
  const Scenario s = load(R"(
name: strict
seed: 4
duration_s: 40
members: {count: 20, join_over_s: 5, seeds: 2}
failures:
  - {at_s: 10, count: 2, restart_after_s: 5}
phantoms: {count: 10, start_s: 5, over_s: 5, min_life_s: 5, max_life_s: 6}
expect: {join_converged_within_s: 0, view_excess_max_fraction: 0, recovered_within_s: 0,
         restarts_alive_within_s: 0, detection_all_within_s: 0, egress_bytes_per_member_max: 1}
)");
  const Results r = run_scenario(s);
  const std::vector<std::string> bad = check_expectations(s, r);
  std::string all;
  for (const std::string& b : bad) all += b + "\n";
  for (const char* field :
       {"view_excess_max_fraction", "restarts_alive_within_s", "detection_all_within_s", "egress_bytes_per_member_max"})
    EXPECT_NE(all.find(field), std::string::npos) << field << " in:\n" << all;
}

// The same scenario and seed give identical outputs with every new part in play:
// shaper, shared seeds, restarts, phantoms, partitions.
TEST(GossipSim, DeterministicWithShaperRestartsAndPhantoms) {
  const Scenario s = load(R"(
name: everything
seed: 13
duration_s: 40
members: {count: 30, join_over_s: 5, seeds: 2, seed_mode: shared}
network: {loss: 0.02, egress_bytes_per_s: 600, egress_burst_bytes: 2048, egress_queue_bytes: 16384}
failures:
  - {at_s: 15, count: 3, restart_after_s: 8}
phantoms: {count: 20, start_s: 8, over_s: 8, min_life_s: 3, max_life_s: 8}
partitions:
  - {start_s: 30, end_s: 34, fraction: 0.3}
)");
  const Results a = run_scenario(s);
  const Results b = run_scenario(s);
  EXPECT_EQ(to_json(a, false).dump(), to_json(b, false).dump());
  EXPECT_EQ(to_csv(a), to_csv(b));
  EXPECT_EQ(to_svg(a), to_svg(b));
  EXPECT_EQ(to_svgs(a), to_svgs(b));
  // The shaper was in play (the engine sizes gossip to the budget, so what
  // waits is mostly bulk).
  EXPECT_GT(a.egress_deferred[0] + a.egress_deferred[1] + a.egress_deferred[2] + a.egress_deferred[3], 0u);
}

// ---- scenario loader ----


TEST(GossipSimScenario, UnknownFieldNamesFieldAndLine) {
  const std::string e = load_error("name: x\nduration_s: 10\nmembers: {count: 3}\nnetwork:\n  los: 0.1\n");
  EXPECT_NE(e.find("test.yaml:5:"), std::string::npos) << e;
  EXPECT_NE(e.find("network.los: unknown field"), std::string::npos) << e;
}

TEST(GossipSimScenario, BadValuesAreRejected) {
  EXPECT_NE(load_error("name: x\nduration_s: 10\nmembers: {count: 3}\nnetwork: {loss: 2}\n")
                .find("test.yaml:4: network.loss: out of range: got '2', must be 0..0.99"),
            std::string::npos);
  EXPECT_NE(load_error("name: x\nduration_s: ten\nmembers: {count: 3}\n")
                .find("test.yaml:2: duration_s: expected a number, got 'ten'"),
            std::string::npos);
  EXPECT_NE(load_error("name: x\nduration_s: 10\n").find("members: required"), std::string::npos);
  EXPECT_NE(load_error("name: x\nduration_s: 10\nmembers: {count: 3}\nengine: {preset: fast}\n")
                .find("engine.preset: must be lan, wan or local"),
            std::string::npos);
  EXPECT_NE(load_error("name: x\nduration_s: 10\nmembers: {count: 3}\nengine: {probe_timeout_ms: 5000}\n")
                .find("engine.probe_timeout_ns"),
            std::string::npos);
  EXPECT_NE(
      load_error("name: x\nduration_s: 10\nmembers: {count: 3}\nstalls: {fraction: 0.1}\n").find("stalls.period_ms"),
      std::string::npos);
  EXPECT_NE(load_error("name: x\nduration_s: 10\nmembers: {count: 3, seed_mode: dns}\n")
                .find("test.yaml:3: members.seed_mode: must be random or shared"),
            std::string::npos);
  EXPECT_NE(
      load_error("name: x\nduration_s: 10\nmembers: {count: 3}\nfailures: [{at_s: 1, count: 1, restart_after_s: -1}]\n")
          .find("test.yaml:4: failures[0].restart_after_s: out of range: got '-1', must be 0..10000000"),
      std::string::npos);
  EXPECT_NE(load_error("name: x\nduration_s: 10\nmembers: {count: 3}\nexpect: {recovered_within: 5}\n")
                .find("expect.recovered_within: unknown field"),
            std::string::npos);
  EXPECT_NE(load_error("name: x\nduration_s: 10\nmembers: {count: 3}\nnetwork: {egress_burst_bytes: 10}\n")
                .find("network.egress_burst_bytes: out of range: got '10', must be 1024..1000000000"),
            std::string::npos);
  const Scenario ok = load(
      "name: x\nduration_s: 10\nmembers: {count: 3, seed_mode: shared}\n"
      "failures: [{at_s: 1, count: 1, restart_after_s: 2}]\n"
      "expect: {join_converged_within_s: 5, egress_bytes_per_member_max: 2000}\n");
  EXPECT_EQ(ok.seed_mode, SeedMode::kShared);
  EXPECT_EQ(ok.failures[0].restart_after_ns, 2'000'000'000ULL);
  EXPECT_EQ(ok.expect.join_converged_within_s, 5);
  EXPECT_EQ(ok.expect.egress_bytes_per_member_max, 2000);
  EXPECT_EQ(load("name: x\nduration_s: 10\nmembers: {count: 3}\n").network.egress_burst_bytes, 64u << 10);
  const Scenario eng = load(
      "name: x\nduration_s: 10\nmembers: {count: 3}\n"
      "engine: {join_answer_rate: 5, join_retry_min_ms: 500, max_pending_admissions: 7}\n");
  EXPECT_EQ(eng.engine.join_answer_rate, 5u);
  EXPECT_EQ(eng.engine.join_retry_min_ns, 500'000'000ULL);
  EXPECT_EQ(eng.engine.max_pending_admissions, 7u);
}

// Found by fuzz_scenario: a null `name:` made yaml-cpp's TypedBadConversion
// escape the loader. Every odd shape must be a ScenarioError naming the file.
TEST(GossipSimScenario, NullScalarsAreScenarioErrorsNotYamlExceptions) {
  for (const char* text : {"name:\nduration_s: 10\nmembers:\n  count: 3\n", "name: [a, b]\nduration_s: 10\n",
                           "name: x\nduration_s:\n", "name: x\nduration_s: 10\nengine:\n  preset:\n",
                           "name: x\nduration_s: 10\nengine:\n  preset: [lan]\n", "{? [a]: b}\n"}) {
    try {
      (void)load_scenario_string(text, "odd.yaml");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find("odd.yaml:"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "escaped as " << typeid(e).name() << ": " << e.what() << " for: " << text;
    }
  }
}

// The scenario loader reads in the config loader's strict dialect
// (config/strict_yaml.h): each rejection names the field path and its line.
struct Rejection {
  std::string field;
  int line = -1;
  std::string message;
};

Rejection rejection(const std::string& yaml) {
  try {
    load(yaml);
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.source(), "test.yaml");
    return {e.field(), e.line(), e.message()};
  }
  ADD_FAILURE() << "accepted: " << yaml;
  return {};
}

constexpr const char* kMinimal = "name: x\nduration_s: 10\nmembers: {count: 3}\n";

TEST(GossipSimScenario, UnknownTopLevelFieldIsNamedWithASuggestion) {
  const Rejection r = rejection(std::string(kMinimal) + "nmae: y\n");
  EXPECT_EQ(r.field, "nmae");
  EXPECT_EQ(r.line, 4);
  EXPECT_EQ(r.message, "unknown field 'nmae'; did you mean 'name'?");
  // Nothing close: the known fields are listed instead.
  const Rejection far = rejection(std::string(kMinimal) + "colour: blue\n");
  EXPECT_EQ(far.field, "colour");
  EXPECT_NE(far.message.find("known fields: name seed duration_s"), std::string::npos) << far.message;
}

TEST(GossipSimScenario, UnknownNestedFieldIsNamedByPath) {
  const Rejection engine = rejection(std::string(kMinimal) + "engine:\n  preset: lan\n  tombstone_ttl: 60\n");
  EXPECT_EQ(engine.field, "engine.tombstone_ttl");
  EXPECT_EQ(engine.line, 6);
  EXPECT_EQ(engine.message, "unknown field 'tombstone_ttl'; did you mean 'tombstone_ttl_s'?");
  // In a list element the path carries the index.
  const Rejection failure =
      rejection(std::string(kMinimal) + "failures:\n  - {at_s: 1, count: 1}\n  - {at_s: 2, count: 1, lave: true}\n");
  EXPECT_EQ(failure.field, "failures[1].lave");
  EXPECT_EQ(failure.line, 6);
  EXPECT_EQ(failure.message, "unknown field 'lave'; did you mean 'leave'?");
}

TEST(GossipSimScenario, WrongTypesAreNamed) {
  const Rejection quoted = rejection("name: x\nduration_s: 10\nmembers:\n  count: \"3\"\n");
  EXPECT_EQ(quoted.field, "members.count");
  EXPECT_EQ(quoted.line, 4);
  EXPECT_EQ(quoted.message, "expected an integer, got quoted string '3'");
  const Rejection fraction = rejection("name: x\nduration_s: 10\nmembers: {count: 2.5}\n");
  EXPECT_EQ(fraction.field, "members.count");
  EXPECT_EQ(fraction.message, "expected an integer, got '2.5'");
  // YAML 1.1 booleans are not booleans here, as in the gateway's config.
  const Rejection yes = rejection(std::string(kMinimal) + "expect:\n  converged: yes\n");
  EXPECT_EQ(yes.field, "expect.converged");
  EXPECT_EQ(yes.line, 5);
  EXPECT_EQ(yes.message, "expected a boolean, got 'yes'");
  const Rejection list = rejection(std::string(kMinimal) + "network: {loss: [0.1]}\n");
  EXPECT_EQ(list.field, "network.loss");
  EXPECT_EQ(list.message, "expected a number, got a list");
  const Rejection map = rejection(std::string(kMinimal) + "partitions: {start_s: 1, end_s: 2}\n");
  EXPECT_EQ(map.field, "partitions");
  EXPECT_EQ(map.message, "expected a list, got a map");
  const Rejection section = rejection(std::string(kMinimal) + "stalls: 3\n");
  EXPECT_EQ(section.field, "stalls");
  EXPECT_EQ(section.message, "expected a map, got '3'");
}

TEST(GossipSimScenario, OutOfRangeValuesAreNamed) {
  const Rejection seeds = rejection("name: x\nduration_s: 10\nmembers:\n  count: 3\n  seeds: 17\n");
  EXPECT_EQ(seeds.field, "members.seeds");
  EXPECT_EQ(seeds.line, 5);
  EXPECT_EQ(seeds.message, "out of range: got '17', must be 1..16");
  const Rejection fraction =
      rejection(std::string(kMinimal) + "partitions:\n  - {start_s: 1, end_s: 2, fraction: 1}\n");
  EXPECT_EQ(fraction.field, "partitions[0].fraction");
  EXPECT_EQ(fraction.line, 5);
  EXPECT_EQ(fraction.message, "out of range: got '1', must be 0.001..0.999");
  const Rejection late =
      rejection(std::string(kMinimal) + "failures:\n  - {at_s: 1, count: 1}\n  - {at_s: 10, count: 1}\n");
  EXPECT_EQ(late.field, "failures[1].at_s");
  EXPECT_EQ(late.line, 6);
  EXPECT_EQ(late.message, "must be below duration_s");
  const Rejection life =
      rejection(std::string(kMinimal) + "phantoms:\n  count: 5\n  min_life_s: 10\n  max_life_s: 5\n");
  EXPECT_EQ(life.field, "phantoms.max_life_s");
  EXPECT_EQ(life.line, 7);
  // Fractions of a second are numbers; the bound is in the unit written.
  EXPECT_EQ(load(std::string(kMinimal) + "sample_interval_s: 0.25\n").sample_interval_ns, 250'000'000ULL);
  EXPECT_EQ(
      load(std::string(kMinimal) + "stalls: {fraction: 0.5, duration_ms: 1.5, period_ms: 1e3}\n").stalls.duration_ns,
      1'500'000ULL);
}

TEST(GossipSimScenario, DuplicateFieldsAreRejected) {
  const Rejection top = rejection(std::string(kMinimal) + "duration_s: 20\n");
  EXPECT_EQ(top.field, "duration_s");
  EXPECT_EQ(top.line, 4);
  EXPECT_EQ(top.message, "duplicate field (first set on line 2)");
  const Rejection nested = rejection(std::string(kMinimal) + "network:\n  loss: 0.1\n  loss: 0.2\n");
  EXPECT_EQ(nested.field, "network.loss");
  EXPECT_EQ(nested.line, 6);
  EXPECT_EQ(nested.message, "duplicate field (first set on line 5)");
}

TEST(GossipSimScenario, OnlyOneDocument) {
  const Rejection second = rejection(std::string(kMinimal) + "---\nname: y\nduration_s: 5\nmembers: {count: 2}\n");
  EXPECT_EQ(second.field, "");
  EXPECT_EQ(second.line, 4);
  EXPECT_EQ(second.message, "expected one YAML document, found more");
  const Rejection empty = rejection("# nothing but a comment\n");
  EXPECT_EQ(empty.message, "empty document");
}

TEST(GossipSimScenario, ScaleMultipliesCounts) {
  Scenario s = load(
      "name: x\nduration_s: 10\nmembers: {count: 1000}\nphantoms: {count: 500}\n"
      "failures: [{at_s: 5, count: 10}]\n");
  scale_scenario(s, 0.1);
  EXPECT_EQ(s.members, 100u);
  EXPECT_EQ(s.phantoms.count, 50u);
  EXPECT_EQ(s.failures[0].count, 1u);
}

// Every shipped scenario file loads.
TEST(GossipSimScenario, ShippedScenariosLoad) {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(GOSSIPSIM_SCENARIOS)) {
    if (entry.path().extension() != ".yaml") continue;
    EXPECT_NO_THROW(load_scenario_file(entry.path().string())) << entry.path();
    ++n;
  }
  EXPECT_GE(n, 14u);
}

// Every shipped CI scenario holds its own `expect:` properties.
TEST(GossipSimScenario, ShippedCiScenariosHoldTheirExpectations) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(GOSSIPSIM_SCENARIOS) + "/ci"))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  EXPECT_GE(files.size(), 6u);
  for (const std::filesystem::path& f : files) {
    const Scenario s = load_scenario_file(f.string());
    EXPECT_LE(s.members + s.phantoms.count, 500u) << f;
    EXPECT_LE(s.duration_ns, 120'000'000'000ULL) << f;
    const Results r = run_scenario(s);
    for (const std::string& bad : check_expectations(s, r)) ADD_FAILURE() << f << ": " << bad;
  }
}

// ---- CLI ----

// scale-N against N: one CSV row per run in order of N, read from what
// gossipsim writes; a result without a figure is refused by name.
TEST(GossipSimScaling, ChartsRunsAgainstNAndNamesAMissingField) {
  Scenario big = load(kSmall);
  Scenario small = big;
  scale_scenario(small, 0.5);
  const nlohmann::json jb = to_json(run_scenario(big), true);
  const nlohmann::json js = to_json(run_scenario(small), true);
  const std::string csv = scaling_csv({{"big", jb}, {"small", js}});
  std::istringstream lines(csv);
  std::string header, first, second, extra;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_FALSE(std::getline(lines, extra));
  EXPECT_EQ(header.rfind("members,egress_mean,", 0), 0u);
  const auto cell = [](const std::string& row, std::size_t k) {
    std::istringstream in(row);
    std::string c;
    for (std::size_t i = 0; i <= k; ++i) std::getline(in, c, ',');
    return std::stod(c);
  };
  EXPECT_EQ(cell(first, 0), 20);  // sorted by N
  EXPECT_EQ(cell(second, 0), 40);
  const double mean = jb["egress"]["bytes_per_member_s"]["mean"].get<double>();
  EXPECT_GT(mean, 0);
  EXPECT_NEAR(cell(second, 1), mean, mean * 1e-5);  // six significant digits
  const std::string svg = scaling_svg({{"big", jb}, {"small", js}});
  EXPECT_NE(svg.find("1.5 x the mean at N = 20"), std::string::npos);
  EXPECT_NE(svg.find("false positives"), std::string::npos);
  nlohmann::json broken = jb;
  broken["egress"]["by_type"].erase("dead");
  try {
    scaling_csv({{"run-a/result.json", broken}});
    ADD_FAILURE() << "a result without egress.by_type.dead was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "run-a/result.json: no field egress.by_type.dead");
  }
}

// The memory law: heap peaks that grow exactly as 85 B x N^2 are fitted with
// exponent 2 and no residual, and the largest N is the one that fills the
// budget; one run off the law shows as its residual.
TEST(GossipSimScaling, MemoryLawFitsTheHeapPeaksAgainstN) {
  Scenario sc = load(kSmall);
  const nlohmann::json base = to_json(run_scenario(sc), true);
  std::vector<std::pair<std::string, nlohmann::json>> runs;
  for (double n : {1000.0, 4000.0, 16000.0}) {
    nlohmann::json j = base;
    j["members"] = n;
    j["perf"]["heap_peak_bytes"] = 85 * n * n;
    runs.emplace_back("n" + std::to_string(static_cast<int>(n)), j);
  }
  const double budget = 85.0 * 20000 * 20000;
  const std::string law = memory_law(runs, budget, 50000);
  EXPECT_NE(law.find("heap = 85 B x N^2 (log-log least squares, 3 runs)"), std::string::npos) << law;
  EXPECT_NE(law.find("heap = 85 B x N^2 (exponent fixed)"), std::string::npos) << law;
  EXPECT_NE(law.find("N = 4000: heap peak 1.36 GB, law 1.36 GB, residual +0.0 %"), std::string::npos) << law;
  EXPECT_NE(law.find("largest N within 31.66 GiB: 20000"), std::string::npos) << law;
  EXPECT_NE(law.find("heap at N = 50000: 212.5 GB"), std::string::npos) << law;
  // One run 10 % over the N^2 law: its residual against the fixed law says so.
  runs[1].second["perf"]["heap_peak_bytes"] = 1.1 * 85 * 4000 * 4000;
  const std::string off = memory_law(runs, budget, 50000);
  EXPECT_EQ(off.find("heap = 85 B x N^2 (exponent fixed)"), std::string::npos) << off;
  EXPECT_NE(off.find("N = 4000: heap peak 1.496 GB"), std::string::npos) << off;
  // A run without members is refused, not fitted.
  runs[0].second["members"] = 0;
  EXPECT_THROW(memory_law(runs, budget, 50000), std::runtime_error);
}

int run_cli(const std::string& args) {
  const std::string cmd = std::string(GOSSIPSIM_PATH) + " " + args + " >/dev/null 2>&1";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(GossipSimCli, WritesResultsAndReportsExpectations) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gossipsim_cli_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string scenario = (dir / "s.yaml").string();
  std::ofstream(scenario) << "name: cli\nduration_s: 20\nmembers: {count: 10, join_over_s: 2}\n"
                             "expect: {converged: true}\n";
  EXPECT_EQ(run_cli("--scenario " + scenario + " --out " + (dir / "out").string()), 0);
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "result.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "timeseries.csv"));
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "plot.svg"));
  for (const char* svg : {"views.svg", "egress.svg", "suspicions.svg", "detection.svg"})
    EXPECT_TRUE(std::filesystem::exists(dir / "out" / svg)) << svg;
  // Impossible expectation: exit 1.
  std::ofstream(scenario) << "name: cli\nduration_s: 2\nmembers: {count: 10, join_over_s: 2}\n"
                             "failures: [{at_s: 1, count: 1}]\nexpect: {all_failures_detected: true}\n";
  EXPECT_EQ(run_cli("--scenario " + scenario + " --out " + (dir / "out").string()), 1);
  // Bad scenario and bad arguments: exit 2.
  std::ofstream(scenario) << "name: cli\nduration_s: 20\nmembrs: {count: 10}\n";
  EXPECT_EQ(run_cli("--scenario " + scenario + " --out " + (dir / "out").string()), 2);
  EXPECT_EQ(run_cli("--scenario " + scenario), 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gw::sim
