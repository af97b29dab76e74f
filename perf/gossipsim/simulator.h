// gossipsim: a deterministic discrete-event simulator that runs N copies of the
// real membership engine on a virtual network and a virtual clock.
//
// Events are ordered by (virtual time, sequence number), and every random draw
// (latency, loss, seeds, phantom lifetimes, stall phases) comes from one seeded
// RNG consumed in event order, so a scenario and a seed give identical results.
// Every datagram is encoded with the real codec at the sender (its exact bytes
// are what is charged and measured); the receiver gets the messages the sender
// encoded, or with --decode (Scenario::decode_at_receiver) decodes the bytes as
// the gateway does: the results are the same byte for byte (a unit test runs
// both), decoding only costs time. What a member sends passes its own copy of
// the gateway's egress
// shaper (control/host/egress_shaper.h), charged wire bytes: codec bytes plus
// the gateway header and AEAD tag (kWireOverheadBytes).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "perf/gossipsim/scenario.h"

#include "control/engine/engine.h"
#include "control/engine/messages.h"

namespace gw::sim {

// Bytes a sealed datagram adds to its codec bytes: the gateway header and the
// AEAD tag (crypto/wire_header.h).
inline constexpr std::uint64_t kWireOverheadBytes = 48 + 16;

struct Summary {
  double mean = 0;
  double p99 = 0;
  double max = 0;
};

// Detection of one crashed (or departed) steady member by the steady members
// still up at the end that held it live when it failed: seconds from its failure
// until the first, 99% and all of them marked it failed (or left).
struct Detection {
  std::string node;
  double failed_at_s = 0;
  double first_s = -1;  // -1: nobody detected it
  double p99_s = -1;
  double all_s = -1;            // -1: some observer never detected it
  std::uint32_t observers = 0;  // steady members up at the end (and since before it failed) that knew it live
  std::uint32_t detected = 0;
  std::uint32_t unaware = 0;  // steady members up at the end that never knew it live
};

// A gone member still live in a steady member's view at the end.
struct Zombie {
  std::string observer;
  std::string node;
  bool suspect = false;
  std::uint64_t incarnation = 0;
  double since_s = 0;                 // when the observer's status for it last changed
  double departed_s = 0;              // when it crashed or left
  std::uint32_t observer_health = 0;  // the observer's Lifeguard score at the end
  bool observer_in_storm = false;     // the observer's engine thinks it is in a storm
};

struct Sample {
  double t_s = 0;
  std::uint32_t up = 0;             // members running (steady and phantom)
  std::uint32_t expected_view = 0;  // members up that have not left or failed
  std::uint32_t phantoms_up = 0;    // phantoms running ("truly alive" beside the steady ones)
  double view_mean = 0;             // live members as seen by steady members up
  std::uint32_t view_min = 0;
  double view_median = 0;
  std::uint32_t view_max = 0;
  double table_mean = 0;                         // member table entries incl. tombstones
  double egress_bytes_per_member_s = 0;          // wire bytes (header and tag included)
  double egress_payload_bytes_per_member_s = 0;  // codec bytes only
  double egress_packets_per_member_s = 0;
  double link_fraction_max = 0;     // busiest shared link: gossip bytes / capacity
  std::uint64_t member_events = 0;  // engine events (join/leave/failed/update) in the interval
  std::uint64_t suspicions = 0;     // engine counter deltas summed over all members, in the interval
  std::uint64_t refutations = 0;
  bool converged = false;  // every steady view is exactly expected_view
};

// Traffic of one message type per steady member over the measured window. A
// datagram counts one packet for its first message; each message is charged its
// own encoded bytes inside the Compound, and the header and tag go with the first.
struct TypeRate {
  double packets_per_s = 0;
  double bytes_per_s = 0;          // wire
  double payload_bytes_per_s = 0;  // codec only
};

// One batch of crashed members started again (failures[].restart_after_s).
struct RestartBatch {
  double at_s = 0;
  std::uint32_t members = 0;
  double all_alive_after_s = -1;  // until every steady view holds each one live in its new life
};

// Something the plots mark: a crash, a restart, the phantom storm, a partition.
struct Marker {
  std::string label;
  double start_s = 0;
  double end_s = 0;  // == start_s: a moment (vertical line); otherwise a band
};

// Engine counters summed over members (crashed ones at their crash): every
// scalar counter the engine describes (control/engine/counters.h), in that
// order, for reading a run.
struct EngineTotals {
  static constexpr std::size_t kCount = cp::engine::kCounterInfo.size();
  std::array<std::uint64_t, kCount> values = {};

  void add(const cp::engine::Counters& c);
  void add(const EngineTotals& o);
  void subtract(const EngineTotals& o);
};

struct Results {
  std::string scenario;
  std::uint64_t seed = 0;
  std::uint32_t members = 0;
  std::uint32_t phantoms = 0;
  double duration_s = 0;

  // Per member, over [measure_from, end]: each member's mean rate, then the
  // mean/p99/max of those across steady members up for the whole window.
  Summary egress_bytes_per_s;          // wire bytes
  Summary egress_payload_bytes_per_s;  // codec bytes only
  Summary egress_packets_per_s;
  std::array<TypeRate, cp::engine::kMessageTypes> egress_by_type = {};  // mean per steady member
  double egress_peak_interval_bytes_per_s = 0;  // highest one member sent in one sample interval

  std::vector<Detection> detections;
  Summary detection_first_s;  // over the failures that were detected
  Summary detection_p99_s;
  Summary detection_all_s;
  std::uint32_t undetected = 0;           // failures some observer never marked
  std::vector<double> detection_times_s;  // every observer's detection time, all failures
  std::uint64_t detection_observers = 0;  // sum of Detection::observers (detected or not)

  std::uint64_t false_positives = 0;            // failed declarations about members up
  std::uint64_t false_positives_healthy = 0;    // ... about members that never stall
  std::uint64_t false_positives_phantom = 0;    // ... about phantoms still alive (a storm's newcomers)
  std::uint64_t false_positives_partition = 0;  // ... across an active partition
  // ... not across an active partition, but less than the longest suspicion
  // after one healed (verdicts from the split still running out or spreading)
  std::uint64_t false_positives_after_heal = 0;
  // ... about a restarted member's current life (it came back; the verdict
  // is about the new incarnation): the rest are about members that stayed up
  std::uint64_t false_positives_restarted = 0;
  double false_positives_per_member_hour = 0;
  std::uint64_t suspicions = 0;  // engine counters summed over all members
  std::uint64_t refutations = 0;
  EngineTotals engine;
  EngineTotals engine_measured;             // ... from the first sample of the measured window
  std::uint64_t resurrections = 0;          // a gone member alive again where it was declared gone
  std::uint64_t zombies_at_end = 0;         // gone members still live in some steady view at the end
  std::vector<Zombie> zombies;              // the first few of them
  std::uint64_t joins_after_departure = 0;  // steady members first hearing of a gone member
  // (observer, member) pairs at the end, over steady observers and the members
  // up that they hold live (not themselves): all of them, and those whose
  // build the observer does not know (docs/membership.md, "What members run").
  std::uint64_t build_pairs_at_end = 0;
  std::uint64_t builds_unknown_at_end = 0;

  std::array<std::uint64_t, 4> broadcast_drops = {};  // engine counters by class (0 = urgent)
  std::uint64_t urgent_drops = 0;
  std::array<std::uint64_t, 4> egress_drops = {};     // shaper drops by class
  std::array<std::uint64_t, 4> egress_deferred = {};  // shaper: datagrams that had to wait
  std::array<std::uint64_t, 4> egress_expired = {};   // shaper: dropped for waiting past max_age
  std::uint64_t egress_queue_bytes_max = 0;           // most bytes one member's shaper queue held
  std::uint64_t outbox_drops = 0;
  std::uint64_t budget_violations = 0;  // node-intervals above the egress budget

  bool converged_at_end = false;
  std::uint32_t final_view_min = 0;
  std::uint32_t final_view_max = 0;
  std::uint32_t final_expected_view = 0;
  double first_converged_s = -1;
  double converged_after_heal_s = -1;  // after the last partition ends
  // First sample at or after the last steady member's start with every steady
  // view exact, minus that start; -1 if never.
  double converged_after_last_join_s = -1;

  // Phantom storm: how far views overshot what is truly alive, and recovery.
  std::int64_t view_excess_max = 0;     // max over samples of view_max - expected_view
  double view_excess_max_fraction = 0;  // ... / expected_view at that sample
  double last_phantom_death_s = -1;
  // From the last phantom's death until the first sample from which every later
  // sample is converged; -1 if never (or no phantoms).
  double recovered_after_last_phantom_s = -1;

  std::vector<RestartBatch> restarts;
  double restarts_all_alive_after_s = -1;  // max over batches; -1 if some batch never

  // Join SyncRequests received: by all members, and by members 0..seeds-1.
  std::uint64_t join_requests = 0;
  std::uint64_t join_requests_at_seeds = 0;

  double link_fraction_mean = 0;
  double link_fraction_max = 0;

  std::uint64_t table_entries_max = 0;    // largest member table seen
  double table_bytes_per_member_est = 0;  // estimated engine table bytes per member (peak)

  std::uint64_t datagrams_sent = 0;
  std::uint64_t datagrams_delivered = 0;
  std::uint64_t datagrams_lost = 0;      // random loss or partition
  std::uint64_t datagrams_on_wire = 0;   // left a shaper
  std::uint64_t bytes_sent = 0;          // wire bytes on the wire
  std::uint64_t payload_bytes_sent = 0;  // codec bytes of those
  std::uint64_t max_datagram_bytes = 0;  // codec bytes
  std::uint64_t decode_failures = 0;
  // Times an engine was handed an earlier time than before on its own clock
  // (Scenario::clocks): must stay 0.
  std::uint64_t clock_regressions = 0;
  // Each member's clock as drawn (Scenario::clocks), by member index
  // (steady members first, then phantoms).
  struct Clock {
    std::uint64_t offset_ns = 0;
    std::int64_t drift_ppb = 0;
    bool operator==(const Clock&) const = default;
  };
  std::vector<Clock> clocks;
  // How far apart the members' probe-ring clocks are (Engine::ring_clock at
  // one instant): the largest max - min over the measured window's samples,
  // among steady members up for 30 s or more; and at the end.
  double ring_clock_spread_max_ms = 0;
  double ring_clock_spread_end_ms = 0;
  // Datagrams lost to partitions: [0] sent from the first side (members
  // [0, fraction*N)) to the second, [1] the other way.
  std::array<std::uint64_t, 2> datagrams_partitioned = {};
  std::uint64_t sim_events = 0;
  std::uint64_t member_events = 0;

  std::vector<Sample> series;
  std::vector<Marker> markers;
  double egress_budget_bytes_per_s = 0;  // 0: none

  // Not deterministic (wall clock, allocator): kept apart from the rest.
  struct Perf {
    double wall_s = 0;
    double sim_events_per_s = 0;
    double member_events_per_s = 0;
    double simulated_s_per_wall_s = 0;
    double heap_peak_bytes = 0;
    double heap_bytes_per_member = 0;  // peak heap in use / members up then
    // At the heap's peak: member table entries in all engines, the bytes the
    // tables' own structures hold per entry (MemberTable::bytes()), the shared
    // identity pool, and the whole heap per entry.
    double table_entries_at_peak = 0;
    double table_bytes_per_entry = 0;
    double identity_pool_bytes = 0;
    double heap_bytes_per_entry = 0;
  } perf;
};

// Called after each sample with it (for progress output; must not affect results).
using SampleHook = std::function<void(const Sample&)>;

// Runs a whole scenario.
Results run_scenario(const Scenario& scenario, const SampleHook& on_sample = {});

// Violated expectations as human-readable lines; empty when all hold.
std::vector<std::string> check_expectations(const Scenario& scenario, const Results& r);

}  // namespace gw::sim
