// gossipsim: a deterministic discrete-event simulator that runs N copies of the
// real membership engine on a virtual network and a virtual clock.
//
// Events are ordered by (virtual time, sequence number), and every random draw
// (latency, loss, seeds, phantom lifetimes, stall phases) comes from one seeded
// RNG consumed in event order, so a scenario and a seed give identical results.
// Every datagram is encoded with the real codec at the sender and decoded at the
// receiver, so byte counts are the bytes the gateway would send (before the
// gateway header and AEAD tag, which add a constant per packet).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "perf/gossipsim/scenario.h"

namespace gw::sim {

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
  double all_s = -1;    // -1: some observer never detected it
  std::uint32_t observers = 0;  // steady members up at the end that knew it live
  std::uint32_t detected = 0;
  std::uint32_t unaware = 0;    // steady members up at the end that never knew it live
};

// A gone member still live in a steady member's view at the end.
struct Zombie {
  std::string observer;
  std::string node;
  bool suspect = false;
  std::uint64_t incarnation = 0;
  double since_s = 0;     // when the observer's status for it last changed
  double departed_s = 0;  // when it crashed or left
};

struct Sample {
  double t_s = 0;
  std::uint32_t up = 0;            // members running (steady and phantom)
  std::uint32_t expected_view = 0; // members up that have not left or failed
  double view_mean = 0;            // live members as seen by steady members up
  std::uint32_t view_min = 0;
  std::uint32_t view_max = 0;
  double table_mean = 0;           // member table entries incl. tombstones
  double egress_bytes_per_member_s = 0;
  double egress_packets_per_member_s = 0;
  double link_fraction_max = 0;    // busiest shared link: gossip bytes / capacity
  std::uint64_t member_events = 0; // engine events (join/leave/failed/update) in the interval
  bool converged = false;          // every steady view is exactly expected_view
};

struct Results {
  std::string scenario;
  std::uint64_t seed = 0;
  std::uint32_t members = 0;
  std::uint32_t phantoms = 0;
  double duration_s = 0;

  // Per member, over [measure_from, end]: each member's mean rate, then the
  // mean/p99/max of those across steady members up for the whole window.
  Summary egress_bytes_per_s;
  Summary egress_packets_per_s;
  double egress_peak_interval_bytes_per_s = 0;  // highest one member sent in one sample interval

  std::vector<Detection> detections;
  Summary detection_first_s;  // over the failures that were detected
  Summary detection_p99_s;
  Summary detection_all_s;
  std::uint32_t undetected = 0;  // failures some observer never marked

  std::uint64_t false_positives = 0;          // failed declarations about members up
  std::uint64_t false_positives_healthy = 0;  // ... about members that never stall
  std::uint64_t false_positives_partition = 0;  // ... across an active partition
  double false_positives_per_member_hour = 0;
  std::uint64_t suspicions = 0;   // engine counters summed over all members
  std::uint64_t refutations = 0;
  std::uint64_t resurrections = 0;  // a gone member alive again where it was declared gone
  std::uint64_t zombies_at_end = 0; // gone members still live in some steady view at the end
  std::vector<Zombie> zombies;      // the first few of them
  std::uint64_t joins_after_departure = 0;  // steady members first hearing of a gone member

  std::array<std::uint64_t, 4> broadcast_drops = {};  // engine counters by class (0 = urgent)
  std::uint64_t urgent_drops = 0;
  std::array<std::uint64_t, 4> egress_drops = {};     // budget queue drops by class
  std::uint64_t outbox_drops = 0;
  std::uint64_t budget_violations = 0;  // node-intervals above the egress budget

  bool converged_at_end = false;
  std::uint32_t final_view_min = 0;
  std::uint32_t final_view_max = 0;
  std::uint32_t final_expected_view = 0;
  double first_converged_s = -1;
  double converged_after_heal_s = -1;  // after the last partition ends

  double link_fraction_mean = 0;
  double link_fraction_max = 0;

  std::uint64_t table_entries_max = 0;     // largest member table seen
  double table_bytes_per_member_est = 0;   // estimated engine table bytes per member (peak)

  std::uint64_t datagrams_sent = 0;
  std::uint64_t datagrams_delivered = 0;
  std::uint64_t datagrams_lost = 0;  // random loss or partition
  std::uint64_t bytes_sent = 0;
  std::uint64_t max_datagram_bytes = 0;
  std::uint64_t decode_failures = 0;
  std::uint64_t sim_events = 0;
  std::uint64_t member_events = 0;

  std::vector<Sample> series;

  // Not deterministic (wall clock, allocator): kept apart from the rest.
  struct Perf {
    double wall_s = 0;
    double sim_events_per_s = 0;
    double member_events_per_s = 0;
    double simulated_s_per_wall_s = 0;
    double heap_peak_bytes = 0;
    double heap_bytes_per_member = 0;  // peak heap in use / members up then
  } perf;
};

// Called after each sample with it (for progress output; must not affect results).
using SampleHook = std::function<void(const Sample&)>;

// Runs a whole scenario.
Results run_scenario(const Scenario& scenario, const SampleHook& on_sample = {});

// Violated expectations as human-readable lines; empty when all hold.
std::vector<std::string> check_expectations(const Scenario& scenario, const Results& r);

}  // namespace gw::sim
