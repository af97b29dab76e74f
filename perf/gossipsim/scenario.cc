// YAML -> Scenario. Every field is checked by name; unknown fields and bad values
// stop the load with the field and its line so a typo never silently falls back
// to a default.
#include "perf/gossipsim/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <sstream>

namespace gw::sim {
namespace {

using cp::engine::EngineConfig;
constexpr double kNsPerS = 1e9;
constexpr double kNsPerMs = 1e6;

class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const YAML::Node& n, const std::string& field,
                         const std::string& why) const {
    const int line = n.IsDefined() ? n.Mark().line + 1 : 0;
    throw ScenarioError(origin_ + ":" + std::to_string(line) + ": " + field + ": " + why);
  }

  // Rejects keys outside `known` (typos must not pass silently).
  void only(const YAML::Node& map, const std::string& where,
            std::initializer_list<const char*> known) const {
    if (!map.IsMap()) fail(map, where, "must be a mapping");
    for (const auto& kv : map) {
      const std::string key = kv.first.as<std::string>();
      const bool ok = std::any_of(known.begin(), known.end(),
                                  [&](const char* k) { return key == k; });
      if (!ok) fail(kv.first, where.empty() ? key : where + "." + key, "unknown field");
    }
  }

  double number(const YAML::Node& n, const std::string& field, double lo, double hi) const {
    double v = 0;
    try {
      v = n.as<double>();
    } catch (const YAML::Exception&) {
      fail(n, field, "must be a number");
    }
    if (!std::isfinite(v) || v < lo || v > hi) {
      std::ostringstream why;
      why << "must be in [" << lo << ", " << hi << "], got " << n.as<std::string>();
      fail(n, field, why.str());
    }
    return v;
  }

  std::uint64_t integer(const YAML::Node& n, const std::string& field, double lo,
                        double hi) const {
    const double v = number(n, field, lo, hi);
    if (v != std::floor(v)) fail(n, field, "must be an integer");
    return static_cast<std::uint64_t>(v);
  }

  bool boolean(const YAML::Node& n, const std::string& field) const {
    try {
      return n.as<bool>();
    } catch (const YAML::Exception&) {
      fail(n, field, "must be true or false");
    }
  }

  std::uint64_t seconds(const YAML::Node& n, const std::string& field, double hi = 1e7) const {
    return static_cast<std::uint64_t>(std::llround(number(n, field, 0, hi) * kNsPerS));
  }
  std::uint64_t millis(const YAML::Node& n, const std::string& field, double hi = 1e9) const {
    return static_cast<std::uint64_t>(std::llround(number(n, field, 0, hi) * kNsPerMs));
  }

 private:
  std::string origin_;
};

void load_engine(const Reader& r, const YAML::Node& n, EngineConfig& c) {
  r.only(n, "engine",
         {"preset", "probe_interval_ms", "probe_timeout_ms", "indirect_checks",
          "awareness_max_multiplier", "suspicion_mult", "suspicion_max_timeout_mult",
          "gossip_interval_ms", "gossip_nodes", "gossip_to_the_dead_s", "retransmit_mult",
          "max_broadcasts", "max_packet_bytes", "push_pull_interval_s", "max_concurrent_syncs",
          "sync_answer_rate", "sync_answer_burst", "sync_timeout_s", "max_sync_bytes",
          "tombstone_ttl_s", "max_members", "admit_rate", "admit_burst", "max_events",
          "max_outbox", "helper_established_s", "join_answer_rate", "join_answer_burst",
          "join_retry_min_ms", "join_retry_max_s", "max_graveyard", "max_pending_admissions",
          "young_member_s", "sync_bytes_per_sec", "storm_newcomer_failures", "storm_window_s",
          "probation_s", "surge_min_arrivals", "surge_arrival_pct", "surge_window_s",
          "sync_digest", "probe_ring"});
  if (n["preset"]) {
    const std::string p = n["preset"].as<std::string>();
    if (p == "lan")
      c = EngineConfig::lan();
    else if (p == "wan")
      c = EngineConfig::wan();
    else if (p == "local")
      c = EngineConfig::local();
    else
      r.fail(n["preset"], "engine.preset", "must be lan, wan or local");
  }
  const auto u32 = [&](const char* key, std::uint32_t& out, double lo, double hi) {
    if (n[key]) out = static_cast<std::uint32_t>(r.integer(n[key], std::string("engine.") + key, lo, hi));
  };
  const auto ms = [&](const char* key, std::uint64_t& out) {
    if (n[key]) out = r.millis(n[key], std::string("engine.") + key);
  };
  const auto sec = [&](const char* key, std::uint64_t& out) {
    if (n[key]) out = r.seconds(n[key], std::string("engine.") + key);
  };
  ms("probe_interval_ms", c.probe_interval_ns);
  ms("probe_timeout_ms", c.probe_timeout_ns);
  u32("indirect_checks", c.indirect_checks, 0, 64);
  u32("awareness_max_multiplier", c.awareness_max_multiplier, 1, 64);
  u32("suspicion_mult", c.suspicion_mult, 1, 100);
  u32("suspicion_max_timeout_mult", c.suspicion_max_timeout_mult, 1, 100);
  ms("gossip_interval_ms", c.gossip_interval_ns);
  u32("gossip_nodes", c.gossip_nodes, 0, 64);
  sec("gossip_to_the_dead_s", c.gossip_to_the_dead_ns);
  u32("retransmit_mult", c.retransmit_mult, 1, 100);
  u32("max_broadcasts", c.max_broadcasts, 1, 1e7);
  u32("max_packet_bytes", c.max_packet_bytes, 128, 65000);
  sec("push_pull_interval_s", c.push_pull_interval_ns);
  u32("max_concurrent_syncs", c.max_concurrent_syncs, 0, 1e4);
  u32("sync_answer_rate", c.sync_answer_rate, 0, 1e6);
  u32("sync_answer_burst", c.sync_answer_burst, 0, 1e6);
  sec("sync_timeout_s", c.sync_timeout_ns);
  u32("max_sync_bytes", c.max_sync_bytes, 128, 1e9);
  sec("tombstone_ttl_s", c.tombstone_ttl_ns);
  u32("max_members", c.max_members, 1, 1e8);
  u32("admit_rate", c.admit_rate, 0, 1e7);
  u32("admit_burst", c.admit_burst, 0, 1e7);
  u32("max_events", c.max_events, 1, 1e8);
  u32("max_outbox", c.max_outbox, 1, 1e8);
  sec("helper_established_s", c.helper_established_ns);
  sec("young_member_s", c.young_member_ns);
  u32("storm_newcomer_failures", c.storm_newcomer_failures, 0, 1e6);
  sec("storm_window_s", c.storm_window_ns);
  sec("probation_s", c.probation_ns);
  u32("surge_min_arrivals", c.surge_min_arrivals, 0, 1e6);
  u32("surge_arrival_pct", c.surge_arrival_pct, 0, 1e4);
  sec("surge_window_s", c.surge_window_ns);
  u32("sync_bytes_per_sec", c.sync_bytes_per_sec, 0, 1e9);
  if (n["sync_digest"]) c.sync_digest = r.boolean(n["sync_digest"], "engine.sync_digest");
  if (n["probe_ring"]) c.probe_ring = r.boolean(n["probe_ring"], "engine.probe_ring");
  u32("join_answer_rate", c.join_answer_rate, 0, 1e6);
  u32("join_answer_burst", c.join_answer_burst, 0, 1e6);
  ms("join_retry_min_ms", c.join_retry_min_ns);
  sec("join_retry_max_s", c.join_retry_max_ns);
  u32("max_graveyard", c.max_graveyard, 0, 1e8);
  u32("max_pending_admissions", c.max_pending_admissions, 0, 1e8);
}

void load_network(const Reader& r, const YAML::Node& n, NetworkSpec& net) {
  r.only(n, "network",
         {"latency_base_ms", "latency_jitter_ms", "loss", "egress_bytes_per_s",
          "egress_burst_bytes", "egress_queue_bytes", "members_per_link",
          "link_capacity_bytes_per_s"});
  if (n["latency_base_ms"]) net.latency_base_ns = r.millis(n["latency_base_ms"], "network.latency_base_ms", 1e5);
  if (n["latency_jitter_ms"]) net.latency_jitter_ns = r.millis(n["latency_jitter_ms"], "network.latency_jitter_ms", 1e5);
  if (n["loss"]) net.loss = r.number(n["loss"], "network.loss", 0, 0.99);
  if (n["egress_bytes_per_s"]) net.egress_bytes_per_s = r.integer(n["egress_bytes_per_s"], "network.egress_bytes_per_s", 0, 1e12);
  if (n["egress_burst_bytes"]) net.egress_burst_bytes = r.integer(n["egress_burst_bytes"], "network.egress_burst_bytes", 1024, 1e9);
  if (n["egress_queue_bytes"]) net.egress_queue_bytes = r.integer(n["egress_queue_bytes"], "network.egress_queue_bytes", 1500, 1e10);
  if (n["members_per_link"]) net.members_per_link = static_cast<std::uint32_t>(r.integer(n["members_per_link"], "network.members_per_link", 0, 1e6));
  if (n["link_capacity_bytes_per_s"]) net.link_capacity_bytes_per_s = r.integer(n["link_capacity_bytes_per_s"], "network.link_capacity_bytes_per_s", 0, 1e13);
  if ((net.members_per_link == 0) != (net.link_capacity_bytes_per_s == 0))
    r.fail(n, "network.members_per_link", "needs link_capacity_bytes_per_s too (and vice versa)");
}

Scenario parse_scenario(const std::string& yaml, const std::string& origin) {
  const Reader r(origin);
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(origin + ":" + std::to_string(e.mark.line + 1) + ": <yaml>: " + e.msg);
  }
  r.only(root, "",
         {"name", "seed", "duration_s", "sample_interval_s", "measure_from_s", "engine", "members",
          "network", "failures", "phantoms", "partitions", "stalls", "expect"});
  Scenario s;
  if (!root["name"]) r.fail(root, "name", "required");
  if (!root["name"].IsScalar()) r.fail(root["name"], "name", "must be a string");
  s.name = root["name"].as<std::string>();
  if (root["seed"]) s.seed = r.integer(root["seed"], "seed", 0, 9e15);
  if (!root["duration_s"]) r.fail(root, "duration_s", "required");
  s.duration_ns = r.seconds(root["duration_s"], "duration_s");
  if (s.duration_ns == 0) r.fail(root["duration_s"], "duration_s", "must be > 0");
  if (root["sample_interval_s"]) s.sample_interval_ns = r.seconds(root["sample_interval_s"], "sample_interval_s");
  if (s.sample_interval_ns < 1'000'000) r.fail(root["sample_interval_s"], "sample_interval_s", "must be >= 0.001");
  if (root["measure_from_s"]) s.measure_from_ns = r.seconds(root["measure_from_s"], "measure_from_s");
  if (s.measure_from_ns >= s.duration_ns) r.fail(root["measure_from_s"], "measure_from_s", "must be below duration_s");
  if (root["engine"]) load_engine(r, root["engine"], s.engine);
  if (root["network"]) load_network(r, root["network"], s.network);

  if (!root["members"]) r.fail(root, "members", "required");
  {
    const YAML::Node m = root["members"];
    r.only(m, "members", {"count", "join_over_s", "seeds", "seed_mode"});
    if (!m["count"]) r.fail(m, "members.count", "required");
    s.members = static_cast<std::uint32_t>(r.integer(m["count"], "members.count", 1, 1e6));
    if (m["join_over_s"]) s.join_over_ns = r.seconds(m["join_over_s"], "members.join_over_s");
    if (m["seeds"]) s.seeds = static_cast<std::uint32_t>(r.integer(m["seeds"], "members.seeds", 1, 16));
    if (const YAML::Node sm = m["seed_mode"]) {
      const std::string v = sm.IsScalar() ? sm.as<std::string>() : "";
      if (v == "random")
        s.seed_mode = SeedMode::kRandom;
      else if (v == "shared")
        s.seed_mode = SeedMode::kShared;
      else
        r.fail(sm, "members.seed_mode", "must be random or shared");
    }
  }
  if (const YAML::Node f = root["failures"]) {
    if (!f.IsSequence()) r.fail(f, "failures", "must be a list");
    for (const YAML::Node& e : f) {
      r.only(e, "failures[]", {"at_s", "count", "leave", "restart_after_s"});
      FailureSpec spec;
      if (!e["at_s"]) r.fail(e, "failures[].at_s", "required");
      spec.at_ns = r.seconds(e["at_s"], "failures[].at_s");
      if (!e["count"]) r.fail(e, "failures[].count", "required");
      spec.count = static_cast<std::uint32_t>(r.integer(e["count"], "failures[].count", 0, 1e6));
      if (e["leave"]) spec.leave = r.boolean(e["leave"], "failures[].leave");
      if (e["restart_after_s"])
        spec.restart_after_ns = r.seconds(e["restart_after_s"], "failures[].restart_after_s");
      if (spec.at_ns >= s.duration_ns) r.fail(e["at_s"], "failures[].at_s", "must be below duration_s");
      s.failures.push_back(spec);
    }
  }
  if (const YAML::Node p = root["phantoms"]) {
    r.only(p, "phantoms", {"count", "start_s", "over_s", "min_life_s", "max_life_s"});
    if (p["count"]) s.phantoms.count = static_cast<std::uint32_t>(r.integer(p["count"], "phantoms.count", 0, 1e7));
    if (p["start_s"]) s.phantoms.start_ns = r.seconds(p["start_s"], "phantoms.start_s");
    if (p["over_s"]) s.phantoms.over_ns = r.seconds(p["over_s"], "phantoms.over_s");
    if (p["min_life_s"]) s.phantoms.min_life_ns = r.seconds(p["min_life_s"], "phantoms.min_life_s");
    if (p["max_life_s"]) s.phantoms.max_life_ns = r.seconds(p["max_life_s"], "phantoms.max_life_s");
    if (s.phantoms.max_life_ns < s.phantoms.min_life_ns)
      r.fail(p["max_life_s"], "phantoms.max_life_s", "must be >= min_life_s");
  }
  if (const YAML::Node p = root["partitions"]) {
    if (!p.IsSequence()) r.fail(p, "partitions", "must be a list");
    for (const YAML::Node& e : p) {
      r.only(e, "partitions[]", {"start_s", "end_s", "fraction"});
      PartitionSpec spec;
      if (!e["start_s"] || !e["end_s"]) r.fail(e, "partitions[].start_s", "start_s and end_s required");
      spec.start_ns = r.seconds(e["start_s"], "partitions[].start_s");
      spec.end_ns = r.seconds(e["end_s"], "partitions[].end_s");
      if (spec.end_ns <= spec.start_ns) r.fail(e["end_s"], "partitions[].end_s", "must be after start_s");
      if (e["fraction"]) spec.fraction = r.number(e["fraction"], "partitions[].fraction", 0.001, 0.999);
      s.partitions.push_back(spec);
    }
  }
  if (const YAML::Node st = root["stalls"]) {
    r.only(st, "stalls", {"fraction", "duration_ms", "period_ms", "start_s", "end_s"});
    if (st["fraction"]) s.stalls.fraction = r.number(st["fraction"], "stalls.fraction", 0, 1);
    if (st["duration_ms"]) s.stalls.duration_ns = r.millis(st["duration_ms"], "stalls.duration_ms");
    if (st["period_ms"]) s.stalls.period_ns = r.millis(st["period_ms"], "stalls.period_ms");
    if (st["start_s"]) s.stalls.start_ns = r.seconds(st["start_s"], "stalls.start_s");
    if (st["end_s"]) s.stalls.end_ns = r.seconds(st["end_s"], "stalls.end_s");
    if (s.stalls.fraction > 0 &&
        (s.stalls.duration_ns == 0 || s.stalls.period_ns <= s.stalls.duration_ns))
      r.fail(st, "stalls.period_ms", "needs duration_ms > 0 and period_ms > duration_ms");
  }
  if (const YAML::Node e = root["expect"]) {
    r.only(e, "expect",
           {"converged", "no_resurrection", "no_urgent_drop", "budget_respected",
            "all_failures_detected", "max_false_positives", "join_converged_within_s",
            "view_excess_max_fraction", "recovered_within_s", "restarts_alive_within_s",
            "detection_all_within_s", "egress_bytes_per_member_max"});
    if (e["converged"]) s.expect.converged = r.boolean(e["converged"], "expect.converged");
    if (e["no_resurrection"]) s.expect.no_resurrection = r.boolean(e["no_resurrection"], "expect.no_resurrection");
    if (e["no_urgent_drop"]) s.expect.no_urgent_drop = r.boolean(e["no_urgent_drop"], "expect.no_urgent_drop");
    if (e["budget_respected"]) s.expect.budget_respected = r.boolean(e["budget_respected"], "expect.budget_respected");
    if (e["all_failures_detected"]) s.expect.all_failures_detected = r.boolean(e["all_failures_detected"], "expect.all_failures_detected");
    if (e["max_false_positives"])
      s.expect.max_false_positives = static_cast<std::int64_t>(r.integer(e["max_false_positives"], "expect.max_false_positives", 0, 1e12));
    const auto bound = [&](const char* key, double& out, double hi) {
      if (e[key]) out = r.number(e[key], std::string("expect.") + key, 0, hi);
    };
    bound("join_converged_within_s", s.expect.join_converged_within_s, 1e7);
    bound("view_excess_max_fraction", s.expect.view_excess_max_fraction, 1e6);
    bound("recovered_within_s", s.expect.recovered_within_s, 1e7);
    bound("restarts_alive_within_s", s.expect.restarts_alive_within_s, 1e7);
    bound("detection_all_within_s", s.expect.detection_all_within_s, 1e7);
    bound("egress_bytes_per_member_max", s.expect.egress_bytes_per_member_max, 1e12);
  }
  // The engine's own checks need an identity; give a placeholder one.
  cp::engine::EngineConfig probe = s.engine;
  probe.name = "x";
  probe.addr.ip = {10, 0, 0, 1};
  if (const std::string why = probe.validate(); !why.empty())
    r.fail(root["engine"] ? root["engine"] : root, "engine." + why.substr(0, why.find(':')),
           why.substr(why.find(':') + 2));
  return s;
}

}  // namespace

Scenario load_scenario_string(const std::string& yaml, const std::string& origin) {
  // Whatever yaml-cpp throws on a shape the checks above did not foresee
  // (found by fuzz_scenario: a null `name:`) is still the file's fault.
  try {
    return parse_scenario(yaml, origin);
  } catch (const ScenarioError&) {
    throw;
  } catch (const YAML::Exception& e) {
    throw ScenarioError(origin + ":" + std::to_string(e.mark.line + 1) + ": <yaml>: " + e.msg);
  } catch (const std::exception& e) {
    throw ScenarioError(origin + ":0: <scenario>: " + e.what());
  }
}

Scenario load_scenario_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ScenarioError(path + ":0: <file>: cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return load_scenario_string(ss.str(), path);
}

void scale_scenario(Scenario& s, double factor) {
  const auto scale = [factor](std::uint32_t n) {
    return static_cast<std::uint32_t>(std::llround(static_cast<double>(n) * factor));
  };
  s.members = std::max<std::uint32_t>(1, scale(s.members));
  s.phantoms.count = scale(s.phantoms.count);
  for (FailureSpec& f : s.failures) f.count = std::min(s.members, scale(f.count));
}

}  // namespace gw::sim
