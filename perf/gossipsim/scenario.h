// A gossipsim scenario: cluster size and churn, the virtual network, the engine
// preset, scheduled faults and the properties to check, loaded from YAML.
// Times in the YAML are seconds (`_s`) or milliseconds (`_ms`); here everything
// is nanoseconds of the virtual clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/strict_yaml.h"
#include "control/engine/config.h"
#include "control/host/egress_shaper.h"

namespace gw::sim {

// A scenario file that cannot be used: what() is "<file>:<line>: <field>: <why>"
// (`:<line>` left out when unknown, `<field>: ` when the whole file is at
// fault); field() and line() as config::strict::Error documents them.
class ScenarioError : public config::strict::Error {
 public:
  using config::strict::Error::Error;
};

struct NetworkSpec {
  std::uint64_t latency_base_ns = 1'000'000;    // one-way floor; default 1 ms
  std::uint64_t latency_jitter_ns = 1'000'000;  // mean of the exponential extra; default 1 ms
  double loss = 0.0;                            // per datagram, in [0, 1); default 0
  // Each member's egress shaper (control/host/egress_shaper.h), charged wire
  // bytes (codec bytes + gateway header + AEAD tag).
  std::uint64_t egress_bytes_per_s = 0;                               // per-node budget; 0 = unlimited
  std::uint64_t egress_burst_bytes = cp::ShaperConfig{}.burst_bytes;  // bucket depth; gateway default
  std::uint64_t egress_queue_bytes = cp::ShaperConfig{}.queue_bytes;  // backlog before drops; gateway default
  std::uint64_t egress_max_age_ns = cp::ShaperConfig{}.max_age_ns;    // longest wait before a drop; gateway default
  std::uint32_t members_per_link = 0;                                 // nodes sharing one uplink; 0 = none
  std::uint64_t link_capacity_bytes_per_s = 0;                        // that uplink's capacity (measured against)
};

struct FailureSpec {
  std::uint64_t at_ns = 0;
  std::uint32_t count = 0;  // steady members that crash (no leave) at at_ns
  bool leave = false;       // leave gracefully instead
  // Start them again this long after at_ns (fresh engine, higher incarnation,
  // joining through seeds again); none: they stay down.
  std::optional<std::uint64_t> restart_after_ns;
};

struct PhantomSpec {
  std::uint32_t count = 0;     // short-lived members that join and vanish
  std::uint64_t start_ns = 0;  // first join
  std::uint64_t over_ns = 0;   // joins spread evenly over this window
  std::uint64_t min_life_ns = 5'000'000'000ULL;
  std::uint64_t max_life_ns = 60'000'000'000ULL;
};

// Which way a partition cuts.
enum class PartitionDirection : std::uint8_t {
  kBoth,     // neither side hears the other
  kOneWay,   // the first side is not heard: what its members send to the second side is lost,
             // what the second side sends to them arrives (A hears B, B does not hear A)
};

struct PartitionSpec {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  double fraction = 0.5;  // members [0, fraction*N) on one side, the rest on the other
  PartitionDirection direction = PartitionDirection::kBoth;
};

// Each member's own clock, as the gateway hands the engine its host's
// boot-relative monotonic clock: local = offset + t + drift * t, with the
// offset uniform in [0, offset_max] and the drift uniform in
// [-drift_max_ppm, +drift_max_ppm], drawn per member from the scenario's
// seed (a restarted member keeps its host's clock). The engine of a member
// only ever sees its own clock; both 0 = one clock for all. On by default:
// hosts booted up to a day apart, crystals within 100 ppm.
struct ClockSpec {
  std::uint64_t offset_max_ns = 86'400'000'000'000ULL;  // 24 h
  double drift_max_ppm = 100;
  bool shared() const { return offset_max_ns == 0 && drift_max_ppm == 0; }
};

struct StallSpec {
  double fraction = 0.0;          // of steady members that stall periodically
  std::uint64_t duration_ns = 0;  // each stall
  std::uint64_t period_ns = 0;    // stall start to stall start (random phase per node)
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = UINT64_MAX;
};

// Properties the run must show; checked by check_expectations() and the CLI.
struct ExpectSpec {
  bool converged = false;  // all views exactly the live set at the end
  bool no_resurrection = false;
  bool no_urgent_drop = false;
  bool budget_respected = false;  // no node exceeded its egress budget
  bool all_failures_detected = false;
  std::int64_t max_false_positives = -1;  // -1: not checked
  // Each below: negative = not checked.
  double join_converged_within_s = -1;      // convergence.after_last_join_s at most this
  double view_excess_max_fraction = -1;     // storm.view_excess_max_fraction at most this
  double recovered_within_s = -1;           // storm.recovered_after_last_phantom_s at most this
  double restarts_alive_within_s = -1;      // restarts.all_alive_after_s at most this
  double detection_all_within_s = -1;       // every tracked failure seen by all within this
  double healed_within_s = -1;              // convergence.after_heal_s (last partition's end) at most this
  double egress_bytes_per_member_max = -1;  // mean wire bytes/s per member at most this
};

// How joiners pick the members they join through.
enum class SeedMode : std::uint8_t {
  kRandom,  // `seeds` random earlier steady members up
  kShared,  // members 0..seeds-1 for everyone (one seed list or DNS name)
};

struct Scenario {
  std::string name;
  std::uint64_t seed = 1;
  std::uint64_t duration_ns = 60'000'000'000ULL;
  std::uint64_t sample_interval_ns = 1'000'000'000ULL;
  std::uint64_t measure_from_ns = 0;  // egress stats only after this (warm-up excluded)
  cp::engine::EngineConfig engine = cp::engine::EngineConfig::lan();
  std::uint32_t members = 10;
  std::uint64_t join_over_ns = 0;  // steady members start evenly over this window
  std::uint32_t seeds = 1;         // earlier members each joiner contacts
  SeedMode seed_mode = SeedMode::kRandom;
  NetworkSpec network;
  std::vector<FailureSpec> failures;
  PhantomSpec phantoms;
  std::vector<PartitionSpec> partitions;
  StallSpec stalls;
  ClockSpec clocks;
  ExpectSpec expect;
  // Not a scenario field (the results are the same either way): decode every
  // datagram's codec bytes at the receiver, as the gateway does, instead of
  // handing over the messages the sender encoded (gossipsim --decode).
  bool decode_at_receiver = false;
};

// Loads and validates in the strict YAML dialect of the gateway's config
// (config/strict_yaml.h): unknown or duplicate fields, wrong types, values out
// of range and several documents are errors. Throws only ScenarioError, naming
// file, line and field.
Scenario load_scenario_file(const std::string& path);
Scenario load_scenario_string(const std::string& yaml, const std::string& origin = "<string>");

// Multiplies member, phantom and failure counts by `factor` (at least 1 member).
void scale_scenario(Scenario& s, double factor);

}  // namespace gw::sim
