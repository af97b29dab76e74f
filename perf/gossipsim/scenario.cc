// YAML -> Scenario, read with the gateway config loader's strict reader
// (config/strict_yaml.h). Every field is checked by name; unknown or duplicate
// fields and bad values stop the load with the field path and its line so a
// typo never silently falls back to a default.
#include "perf/gossipsim/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

namespace gw::sim {
namespace {

using config::strict::Field;
using config::strict::Map;
using cp::engine::EngineConfig;
constexpr double kNsPerS = 1e9;
constexpr double kNsPerMs = 1e6;

// The strict reader plus the scenario's units: `_s` and `_ms` fields are
// non-negative numbers (fractions allowed) turned into nanoseconds. Each
// set_* leaves `out` at its default when the field is absent.
class Reader : public config::strict::Reader {
 public:
  using config::strict::Reader::Reader;

  std::uint64_t seconds(const Field& f, double hi = 1e7) const {
    return static_cast<std::uint64_t>(std::llround(read_number(f, 0, hi) * kNsPerS));
  }
  std::uint64_t millis(const Field& f, double hi = 1e9) const {
    return static_cast<std::uint64_t>(std::llround(read_number(f, 0, hi) * kNsPerMs));
  }

  template <typename T>
  void set_uint(const Map& m, std::string_view name, T& out, std::uint64_t lo, std::uint64_t hi) const {
    if (const std::optional<Field> f = m.find(name)) out = read_uint<T>(*f, lo, hi);
  }
  void set_number(const Map& m, std::string_view name, double& out, double lo, double hi) const {
    if (const std::optional<Field> f = m.find(name)) out = read_number(*f, lo, hi);
  }
  void set_bool(const Map& m, std::string_view name, bool& out) const {
    if (const std::optional<Field> f = m.find(name)) out = read_bool(*f);
  }
  void set_seconds(const Map& m, std::string_view name, std::uint64_t& out, double hi = 1e7) const {
    if (const std::optional<Field> f = m.find(name)) out = seconds(*f, hi);
  }
  void set_millis(const Map& m, std::string_view name, std::uint64_t& out, double hi = 1e9) const {
    if (const std::optional<Field> f = m.find(name)) out = millis(*f, hi);
  }

  // The line of the first of `names` present in `m`, else the map's own.
  static int line_of_any(const Map& m, std::initializer_list<std::string_view> names) {
    for (std::string_view name : names) {
      if (const std::optional<Field> f = m.find(name)) return f->line;
    }
    return m.line();
  }
};

void load_engine(const Reader& r, const Field& field, EngineConfig& c) {
  const Map m(r, field,
              {"preset",
               "probe_interval_ms",
               "probe_timeout_ms",
               "indirect_checks",
               "fallback_ping",
               "awareness_max_multiplier",
               "suspicion_mult",
               "suspicion_max_timeout_mult",
               "gossip_interval_ms",
               "gossip_nodes",
               "gossip_to_the_dead_s",
               "retransmit_mult",
               "suspicion_retransmit_mult",
               "suspicion_told_probers",
               "max_broadcasts",
               "max_packet_bytes",
               "push_pull_interval_s",
               "max_concurrent_syncs",
               "sync_answer_rate",
               "sync_answer_burst",
               "sync_timeout_s",
               "reconnect_interval_s",
               "reconnect_timeout_s",
               "max_sync_bytes",
               "tombstone_ttl_s",
               "max_members",
               "admit_rate",
               "admit_burst",
               "max_events",
               "max_outbox",
               "helper_established_s",
               "join_answer_rate",
               "join_answer_burst",
               "join_retry_min_ms",
               "join_retry_max_s",
               "max_graveyard",
               "max_pending_admissions",
               "young_member_s",
               "sync_bytes_per_sec",
               "storm_newcomer_failures",
               "storm_window_s",
               "probation_s",
               "surge_min_arrivals",
               "surge_arrival_pct",
               "surge_window_s",
               "sync_digest",
               "probe_ring"},
              false);
  // The preset first: the other fields override it.
  if (const std::optional<Field> f = m.find("preset")) {
    const std::string p = r.read_string(*f);
    if (const std::optional<EngineConfig> preset = EngineConfig::preset(p)) {
      c = *preset;
    } else {
      r.fail(f->path, f->line, "must be lan, wan or local, got " + config::strict::quote(p));
    }
  }
  r.set_millis(m, "probe_interval_ms", c.probe_interval_ns);
  r.set_millis(m, "probe_timeout_ms", c.probe_timeout_ns);
  r.set_uint(m, "indirect_checks", c.indirect_checks, 0, 64);
  r.set_uint(m, "awareness_max_multiplier", c.awareness_max_multiplier, 1, 64);
  r.set_uint(m, "suspicion_mult", c.suspicion_mult, 1, 100);
  r.set_uint(m, "suspicion_max_timeout_mult", c.suspicion_max_timeout_mult, 1, 100);
  r.set_millis(m, "gossip_interval_ms", c.gossip_interval_ns);
  r.set_uint(m, "gossip_nodes", c.gossip_nodes, 0, 64);
  r.set_seconds(m, "gossip_to_the_dead_s", c.gossip_to_the_dead_ns);
  r.set_uint(m, "retransmit_mult", c.retransmit_mult, 1, 100);
  r.set_uint(m, "suspicion_retransmit_mult", c.suspicion_retransmit_mult, 1, 100);
  r.set_uint(m, "suspicion_told_probers", c.suspicion_told_probers, 1, 64);
  r.set_uint(m, "max_broadcasts", c.max_broadcasts, 1, 10'000'000);
  r.set_uint(m, "max_packet_bytes", c.max_packet_bytes, 128, 65000);
  r.set_seconds(m, "push_pull_interval_s", c.push_pull_interval_ns);
  r.set_uint(m, "max_concurrent_syncs", c.max_concurrent_syncs, 0, 10'000);
  r.set_uint(m, "sync_answer_rate", c.sync_answer_rate, 0, 1'000'000);
  r.set_uint(m, "sync_answer_burst", c.sync_answer_burst, 0, 1'000'000);
  r.set_seconds(m, "sync_timeout_s", c.sync_timeout_ns);
  r.set_seconds(m, "reconnect_interval_s", c.reconnect_interval_ns);
  r.set_seconds(m, "reconnect_timeout_s", c.reconnect_timeout_ns);
  r.set_uint(m, "max_sync_bytes", c.max_sync_bytes, 128, 1'000'000'000);
  r.set_seconds(m, "tombstone_ttl_s", c.tombstone_ttl_ns);
  r.set_uint(m, "max_members", c.max_members, 1, 100'000'000);
  r.set_uint(m, "admit_rate", c.admit_rate, 0, 10'000'000);
  r.set_uint(m, "admit_burst", c.admit_burst, 0, 10'000'000);
  r.set_uint(m, "max_events", c.max_events, 1, 100'000'000);
  r.set_uint(m, "max_outbox", c.max_outbox, 1, 100'000'000);
  r.set_seconds(m, "helper_established_s", c.helper_established_ns);
  r.set_seconds(m, "young_member_s", c.young_member_ns);
  r.set_uint(m, "storm_newcomer_failures", c.storm_newcomer_failures, 0, 1'000'000);
  r.set_seconds(m, "storm_window_s", c.storm_window_ns);
  r.set_seconds(m, "probation_s", c.probation_ns);
  r.set_uint(m, "surge_min_arrivals", c.surge_min_arrivals, 0, 1'000'000);
  r.set_uint(m, "surge_arrival_pct", c.surge_arrival_pct, 0, 10'000);
  r.set_seconds(m, "surge_window_s", c.surge_window_ns);
  r.set_uint(m, "sync_bytes_per_sec", c.sync_bytes_per_sec, 0, 1'000'000'000);
  r.set_bool(m, "sync_digest", c.sync_digest);
  r.set_bool(m, "probe_ring", c.probe_ring);
  r.set_bool(m, "fallback_ping", c.fallback_ping);
  r.set_uint(m, "join_answer_rate", c.join_answer_rate, 0, 1'000'000);
  r.set_uint(m, "join_answer_burst", c.join_answer_burst, 0, 1'000'000);
  r.set_millis(m, "join_retry_min_ms", c.join_retry_min_ns);
  r.set_seconds(m, "join_retry_max_s", c.join_retry_max_ns);
  r.set_uint(m, "max_graveyard", c.max_graveyard, 0, 100'000'000);
  r.set_uint(m, "max_pending_admissions", c.max_pending_admissions, 0, 100'000'000);
}

void load_network(const Reader& r, const Field& field, NetworkSpec& net) {
  const Map m(r, field,
              {"latency_base_ms", "latency_jitter_ms", "loss", "egress_bytes_per_s", "egress_burst_bytes",
               "egress_queue_bytes", "egress_max_age_ms", "members_per_link", "link_capacity_bytes_per_s"},
              false);
  r.set_millis(m, "latency_base_ms", net.latency_base_ns, 1e5);
  r.set_millis(m, "latency_jitter_ms", net.latency_jitter_ns, 1e5);
  r.set_number(m, "loss", net.loss, 0, 0.99);
  r.set_uint(m, "egress_bytes_per_s", net.egress_bytes_per_s, 0, 1'000'000'000'000ULL);
  r.set_uint(m, "egress_burst_bytes", net.egress_burst_bytes, 1024, 1'000'000'000ULL);
  r.set_uint(m, "egress_queue_bytes", net.egress_queue_bytes, 1500, 10'000'000'000ULL);
  r.set_millis(m, "egress_max_age_ms", net.egress_max_age_ns, 600'000);
  r.set_uint(m, "members_per_link", net.members_per_link, 0, 1'000'000);
  r.set_uint(m, "link_capacity_bytes_per_s", net.link_capacity_bytes_per_s, 0, 10'000'000'000'000ULL);
  if ((net.members_per_link == 0) != (net.link_capacity_bytes_per_s == 0)) {
    r.fail(config::strict::join(m.path(), "members_per_link"),
           Reader::line_of_any(m, {"members_per_link", "link_capacity_bytes_per_s"}),
           "needs link_capacity_bytes_per_s too (and vice versa)");
  }
}

void load_members(const Reader& r, const Field& field, Scenario& s) {
  const Map m(r, field, {"count", "join_over_s", "seeds", "seed_mode"}, false);
  s.members = r.read_uint<std::uint32_t>(m.require("count"), 1, 1'000'000);
  r.set_seconds(m, "join_over_s", s.join_over_ns);
  r.set_uint(m, "seeds", s.seeds, 1, 16);
  if (const std::optional<Field> f = m.find("seed_mode")) {
    const std::string v = r.read_string(*f);
    if (v == "random") {
      s.seed_mode = SeedMode::kRandom;
    } else if (v == "shared") {
      s.seed_mode = SeedMode::kShared;
    } else {
      r.fail(f->path, f->line, "must be random or shared, got " + config::strict::quote(v));
    }
  }
}

void load_failures(const Reader& r, const Field& list, Scenario& s) {
  if (!list.value.IsSequence()) {
    r.fail(list.path, list.line, "expected a list, got " + config::strict::describe(list.value));
  }
  for (std::size_t i = 0; i < list.value.size(); ++i) {
    const Map m(r, config::strict::element(list, i), {"at_s", "count", "leave", "restart_after_s"}, false);
    FailureSpec spec;
    const Field at = m.require("at_s");
    spec.at_ns = r.seconds(at);
    spec.count = r.read_uint<std::uint32_t>(m.require("count"), 0, 1'000'000);
    r.set_bool(m, "leave", spec.leave);
    if (const std::optional<Field> f = m.find("restart_after_s")) spec.restart_after_ns = r.seconds(*f);
    if (spec.at_ns >= s.duration_ns) r.fail(at.path, at.line, "must be below duration_s");
    s.failures.push_back(spec);
  }
}

void load_phantoms(const Reader& r, const Field& field, PhantomSpec& p) {
  const Map m(r, field, {"count", "start_s", "over_s", "min_life_s", "max_life_s"}, false);
  r.set_uint(m, "count", p.count, 0, 10'000'000);
  r.set_seconds(m, "start_s", p.start_ns);
  r.set_seconds(m, "over_s", p.over_ns);
  r.set_seconds(m, "min_life_s", p.min_life_ns);
  r.set_seconds(m, "max_life_s", p.max_life_ns);
  if (p.max_life_ns < p.min_life_ns) {
    r.fail(config::strict::join(m.path(), "max_life_s"), Reader::line_of_any(m, {"max_life_s"}),
           "must be >= min_life_s");
  }
}

void load_partitions(const Reader& r, const Field& list, Scenario& s) {
  if (!list.value.IsSequence()) {
    r.fail(list.path, list.line, "expected a list, got " + config::strict::describe(list.value));
  }
  for (std::size_t i = 0; i < list.value.size(); ++i) {
    const Map m(r, config::strict::element(list, i), {"start_s", "end_s", "fraction", "direction"}, false);
    PartitionSpec spec;
    spec.start_ns = r.seconds(m.require("start_s"));
    const Field end = m.require("end_s");
    spec.end_ns = r.seconds(end);
    if (spec.end_ns <= spec.start_ns) r.fail(end.path, end.line, "must be after start_s");
    r.set_number(m, "fraction", spec.fraction, 0.001, 0.999);
    if (const std::optional<Field> f = m.find("direction")) {
      const std::string v = r.read_string(*f);
      if (v == "both") {
        spec.direction = PartitionDirection::kBoth;
      } else if (v == "one_way") {
        spec.direction = PartitionDirection::kOneWay;
      } else {
        r.fail(f->path, f->line, "must be both or one_way, got " + config::strict::quote(v));
      }
    }
    s.partitions.push_back(spec);
  }
}

void load_stalls(const Reader& r, const Field& field, StallSpec& st) {
  const Map m(r, field, {"fraction", "duration_ms", "period_ms", "start_s", "end_s"}, false);
  r.set_number(m, "fraction", st.fraction, 0, 1);
  r.set_millis(m, "duration_ms", st.duration_ns);
  r.set_millis(m, "period_ms", st.period_ns);
  r.set_seconds(m, "start_s", st.start_ns);
  r.set_seconds(m, "end_s", st.end_ns);
  if (st.fraction > 0 && (st.duration_ns == 0 || st.period_ns <= st.duration_ns)) {
    r.fail(config::strict::join(m.path(), "period_ms"), Reader::line_of_any(m, {"period_ms"}),
           "needs duration_ms > 0 and period_ms > duration_ms");
  }
}

void load_clocks(const Reader& r, const Field& field, ClockSpec& c) {
  const Map m(r, field, {"offset_max_s", "drift_max_ppm"}, false);
  // A monotonic clock a host has run for up to about 3 years.
  r.set_seconds(m, "offset_max_s", c.offset_max_ns, 1e8);
  // Quartz is within 100 ppm; 10,000 is a broken clock, still a valid test.
  r.set_number(m, "drift_max_ppm", c.drift_max_ppm, 0, 10'000);
}

void load_expect(const Reader& r, const Field& field, ExpectSpec& e) {
  const Map m(r, field,
              {"converged", "no_resurrection", "no_urgent_drop", "budget_respected", "all_failures_detected",
               "max_false_positives", "join_converged_within_s", "view_excess_max_fraction", "recovered_within_s",
               "restarts_alive_within_s", "detection_all_within_s", "healed_within_s", "egress_bytes_per_member_max"},
              false);
  r.set_bool(m, "converged", e.converged);
  r.set_bool(m, "no_resurrection", e.no_resurrection);
  r.set_bool(m, "no_urgent_drop", e.no_urgent_drop);
  r.set_bool(m, "budget_respected", e.budget_respected);
  r.set_bool(m, "all_failures_detected", e.all_failures_detected);
  if (const std::optional<Field> f = m.find("max_false_positives")) {
    e.max_false_positives = static_cast<std::int64_t>(r.read_uint<std::uint64_t>(*f, 0, 1'000'000'000'000ULL));
  }
  r.set_number(m, "join_converged_within_s", e.join_converged_within_s, 0, 1e7);
  r.set_number(m, "view_excess_max_fraction", e.view_excess_max_fraction, 0, 1e6);
  r.set_number(m, "recovered_within_s", e.recovered_within_s, 0, 1e7);
  r.set_number(m, "restarts_alive_within_s", e.restarts_alive_within_s, 0, 1e7);
  r.set_number(m, "detection_all_within_s", e.detection_all_within_s, 0, 1e7);
  r.set_number(m, "healed_within_s", e.healed_within_s, 0, 1e7);
  r.set_number(m, "egress_bytes_per_member_max", e.egress_bytes_per_member_max, 0, 1e12);
}

Scenario parse_scenario(const std::string& yaml, const std::string& origin) {
  const Reader r(origin);
  const YAML::Node root = r.load_document(yaml);
  if (!root.IsMap()) {
    r.fail("", config::strict::line_of(root),
           "top level must be a map of fields, got " + config::strict::describe(root));
  }
  const Map top(r, root, "", config::strict::line_of(root),
                {"name", "seed", "duration_s", "sample_interval_s", "measure_from_s", "engine", "members", "network",
                 "failures", "phantoms", "partitions", "stalls", "clocks", "expect"},
                false);
  Scenario s;
  s.name = r.read_string(top.require("name"));
  r.set_uint(top, "seed", s.seed, 0, 9'000'000'000'000'000ULL);
  const Field duration = top.require("duration_s");
  s.duration_ns = r.seconds(duration);
  if (s.duration_ns == 0) r.fail(duration.path, duration.line, "must be > 0");
  if (const std::optional<Field> f = top.find("sample_interval_s")) {
    s.sample_interval_ns = r.seconds(*f);
    if (s.sample_interval_ns < 1'000'000) r.fail(f->path, f->line, "must be >= 0.001");
  }
  if (const std::optional<Field> f = top.find("measure_from_s")) {
    s.measure_from_ns = r.seconds(*f);
    if (s.measure_from_ns >= s.duration_ns) r.fail(f->path, f->line, "must be below duration_s");
  }
  const std::optional<Field> engine = top.find("engine");
  if (engine) load_engine(r, *engine, s.engine);
  if (const std::optional<Field> f = top.find("network")) load_network(r, *f, s.network);
  load_members(r, top.require("members"), s);
  if (const std::optional<Field> f = top.find("failures")) load_failures(r, *f, s);
  if (const std::optional<Field> f = top.find("phantoms")) load_phantoms(r, *f, s.phantoms);
  if (const std::optional<Field> f = top.find("partitions")) load_partitions(r, *f, s);
  if (const std::optional<Field> f = top.find("stalls")) load_stalls(r, *f, s.stalls);
  if (const std::optional<Field> f = top.find("clocks")) load_clocks(r, *f, s.clocks);
  if (const std::optional<Field> f = top.find("expect")) load_expect(r, *f, s.expect);

  // The engine's own checks need an identity; give a placeholder one. Its
  // reasons start with the EngineConfig member at fault ("probe_timeout_ns: ...").
  cp::engine::EngineConfig probe = s.engine;
  probe.name = "x";
  probe.addr.ip = {10, 0, 0, 1};
  if (const std::string why = probe.validate(); !why.empty()) {
    const int line = engine ? engine->line : top.line();
    const std::size_t colon = why.find(':');
    if (colon == std::string::npos) r.fail("engine", line, why);
    r.fail("engine." + why.substr(0, colon), line, why.substr(std::min(why.size(), colon + 2)));
  }
  return s;
}

}  // namespace

Scenario load_scenario_string(const std::string& yaml, const std::string& origin) {
  // Whatever yaml-cpp throws on a shape the checks did not foresee is still
  // the file's fault (fuzz_scenario found a null `name:` once).
  return config::strict::guarded<ScenarioError>(origin, [&] { return parse_scenario(yaml, origin); });
}

Scenario load_scenario_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ScenarioError(path, "", 0, "cannot open scenario file");
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
