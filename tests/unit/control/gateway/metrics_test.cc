// Counter export: the stats JSON and the Prometheus families come from one
// walk over the counter descriptions (control/gateway/counter_table.cc), so
// every counter of the JSON is in Prometheus and nothing else is; the text is
// valid exposition format and telemetry names split back into their labels.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "control/engine/engine.h"
#include "control/gateway/counter_table.h"
#include "control/gateway/metrics.h"
#include "control/gateway/stats_json.h"
#include "control/host/engine_host.h"

namespace gw::cp {
namespace {

using Json = nlohmann::ordered_json;

// Every 64-bit word of `c` gets the next value.
template <class T>
void fill(T& c, std::uint64_t& next) {
  static_assert(sizeof(T) % sizeof(std::uint64_t) == 0);
  auto* words = reinterpret_cast<std::uint64_t*>(&c);
  for (std::size_t i = 0; i < sizeof(T) / sizeof(std::uint64_t); ++i) words[i] = next++;
}

const std::vector<std::string> kRules = {"memberlist", "serf"};

// Every counter struct with distinct values, two workers, membership with a
// member list, and sections known to the tables and one that is not.
CounterSnapshot full_snapshot() {
  CounterSnapshot s;
  std::uint64_t next = 1;
  for (unsigned i = 0; i < 2; ++i) {
    WorkerStats w;
    w.lcore = 1 + i;
    w.queue = i;
    fill(w.counters, next);
    fill(w.tx, next);
    w.unkeyed_rules = &kRules;
    s.workers.push_back(w);
  }
  s.control_lcore = 0;
  fill(s.control, next);
  fill(s.tx_queue, next);
  MembershipSnapshot& m = s.membership.emplace();
  m.node = "gw\"1";
  m.incarnation = next++;
  m.live_members = next++;
  m.health_score = next++;
  fill(m.probe_rtt, next);
  fill(m.by_state, next);
  m.has_members = true;
  m.members.push_back({"n1", "10.0.0.1", 7946, cp::engine::MemberStatus::kSuspect, 4, {{"role", "db"}}});
  fill(m.events, next);
  m.recent_events.push_back({cp::engine::EventKind::kJoin, "n1", {}, 3, {}});
  fill(m.engine, next);
  fill(m.host, next);
  fill(m.shaper, next);
  GatewaySections& g = s.gateway.emplace();
  fill(g.snapshots, next);
  fill(g.event_handler.emplace(), next);
  fill(g.hosts_file.emplace(), next);
  fill(g.telemetry.emplace(), next);
  fill(g.process, next);
  fill(g.port, next);
  fill(g.nic.emplace(), next);
  fill(g.keyring_state.emplace(), next);
  ControlApiSection& api = g.control_api.emplace();
  fill(api.server, next);
  api.server.requests = 0;  // exported once, as the commands' requests
  fill(api.api, next);
  fill(g.unknown_key_senders, next);
  return s;
}

// The JSON's numbers that are not counters of their own: lcore and queue ids
// (labels), the member list and recent events, and the sums of per-lcore
// series (totals, classes, unkeyed, arp; the control lcore's
// class_drop_mismatch, a sum of class_drop_mismatch_by_class).
void exported_values(const Json& j, const std::string& path, std::multiset<double>& out) {
  if (j.is_number()) {
    const std::string key = path.substr(path.rfind('.') + 1);
    if (key == "lcore" || key == "queue" || key == "class_drop_mismatch") return;
    // Prometheus has the histogram's sum and the process's CPU time in seconds.
    out.insert(key == "sum_us" || key == "cpu_us" ? j.get<double>() * 1e-6 : j.get<double>());
    return;
  }
  if (j.is_array()) {
    for (const Json& e : j) exported_values(e, path, out);
    return;
  }
  if (!j.is_object()) return;
  for (const auto& [k, v] : j.items()) {
    if (path.empty() && (k == "totals" || k == "classes" || k == "unkeyed" || k == "arp")) continue;
    if (k == "members" || k == "recent_events") continue;
    exported_values(v, path + "." + k, out);
  }
}

// The property the exporters used to keep by parsing the JSON ("unknown
// numeric fields still appear"), now by construction: with every counter
// distinct, the JSON's counters and Prometheus's samples are the same values.
TEST(Metrics, EveryJsonCounterIsInPrometheusAndNothingElse) {
  const CounterSnapshot s = full_snapshot();
  std::multiset<double> json_values;
  exported_values(Json::parse(stats_json(s)), "", json_values);
  std::multiset<double> prom_values;
  for (const MetricFamily& f : metric_families(s)) {
    for (const MetricSample& x : f.samples) prom_values.insert(x.value);
  }
  std::vector<double> only_json;
  std::vector<double> only_prom;
  std::set_difference(json_values.begin(), json_values.end(), prom_values.begin(), prom_values.end(),
                      std::back_inserter(only_json));
  std::set_difference(prom_values.begin(), prom_values.end(), json_values.begin(), json_values.end(),
                      std::back_inserter(only_prom));
  EXPECT_TRUE(only_json.empty()) << only_json.size() << " JSON counters not in Prometheus, first " << only_json[0];
  EXPECT_TRUE(only_prom.empty()) << only_prom.size() << " Prometheus samples not in the JSON, first " << only_prom[0];
  EXPECT_GT(json_values.size(), 250u);
}

TEST(Metrics, EveryFamilyOnceInValidFormat) {
  const auto families = metric_families(full_snapshot());
  std::size_t samples = 0;
  std::set<std::string> names;
  for (const auto& f : families) {
    EXPECT_TRUE(names.insert(f.name).second) << "family twice: " << f.name;
    samples += f.samples.size();
  }
  const std::string text = prometheus_text(families);
  const std::regex help(R"(^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* \S.*$)");
  const std::regex type(R"(^# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram|untyped)$)");
  const std::regex sample(
      R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*\})? -?[0-9.e+]+$)");
  std::istringstream in(text);
  std::string line;
  std::size_t sample_lines = 0;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP", 0) == 0) {
      EXPECT_TRUE(std::regex_match(line, help)) << line;
    } else if (line.rfind("# TYPE", 0) == 0) {
      EXPECT_TRUE(std::regex_match(line, type)) << line;
    } else {
      EXPECT_TRUE(std::regex_match(line, sample)) << line;
      ++sample_lines;
    }
  }
  EXPECT_EQ(sample_lines, samples);
}

TEST(Metrics, NamesAndLabels) {
  const CounterSnapshot s = full_snapshot();
  const std::string text = prometheus_text(metric_families(s));
  const auto has = [&text](const std::string& series, std::uint64_t v) {
    return text.find(series + " " + std::to_string(v) + "\n") != std::string::npos;
  };
  const dp::WorkerCounters& w = s.workers[0].counters;
  EXPECT_TRUE(has(R"(gossipgw_verdict_packets_total{lcore="1",queue="0",verdict="drop_unkeyed"})",
                  w.get(dp::Verdict::kUnkeyed)))
      << text;
  EXPECT_TRUE(has(R"(gossipgw_rx_packets_total{lcore="1",queue="0"})", w.rx_total));
  EXPECT_TRUE(has(R"(gossipgw_accepted_packets_total{lcore="1",queue="0",class="gossip"})", w.accepted_by_class[2]));
  EXPECT_TRUE(has(R"(gossipgw_table_evictions_total{lcore="1",queue="0",table="ratelimit"})", w.ratelimit_table_evict));
  EXPECT_TRUE(has(R"(gossipgw_unkeyed_packets_total{lcore="1",queue="0",rule="serf"})", w.unkeyed_by_rule[1]));
  EXPECT_TRUE(has(R"(gossipgw_unkeyed_packets_total{lcore="1",queue="0",rule="unmatched"})",
                  w.unkeyed_by_rule[dp::kUnkeyedRuleSlots]));
  EXPECT_TRUE(has(R"(gossipgw_messages_total{lcore="0",type="ping"})", s.control.msgs[0]));
  EXPECT_TRUE(has(R"(gossipgw_message_decode_errors_total{lcore="0"})", s.control.msg_decode_error));
  EXPECT_TRUE(has(R"(gossipgw_handoff_dropped_total{lcore="0",reason="replay_table_full"})",
                  s.control.once_refused[static_cast<std::size_t>(dp::Once::kTableFull)]));
  EXPECT_TRUE(has(R"(gossipgw_tx_queue_datagrams_total{result="drop_ring_full"})", s.tx_queue.drop_ring_full));
  const MembershipSnapshot& m = *s.membership;
  EXPECT_TRUE(has(R"(gossipgw_members{state="dead"})", m.by_state[2]));
  EXPECT_TRUE(has(R"(gossipgw_member_events_total{kind="failed"})", m.events[2]));
  EXPECT_TRUE(has(R"(gossipgw_engine_member_changes_total{change="suspected"})", m.engine.suspicions));
  EXPECT_TRUE(has(R"(gossipgw_engine_messages_total{direction="in",type="ping"})", m.engine.msg_in[0]));
  EXPECT_TRUE(has(R"(gossipgw_engine_messages_total{direction="out",type="ack"})", m.engine.msg_out[1]));
  EXPECT_TRUE(has(R"(gossipgw_egress_queue_depth_max{class="urgent"})", m.shaper[0].depth_max));
  EXPECT_TRUE(has(R"(gossipgw_seal_dropped_total{reason="no_primary"})", m.host.drop_no_primary));
  const GatewaySections& g = *s.gateway;
  EXPECT_TRUE(has(R"(gossipgw_control_api_total{counter="requests"})", g.control_api->api.requests));
  EXPECT_TRUE(has(R"(gossipgw_control_api_total{counter="evicted"})", g.control_api->server.evicted));
  EXPECT_TRUE(has("gossipgw_snapshot_version", g.snapshots.version));
  EXPECT_TRUE(has("gossipgw_nic_rx_missed_total", g.nic->rx_missed));
  EXPECT_TRUE(has(R"(gossipgw_key_commands_total{result="not_member"})", m.host.key_commands_not_member));
  EXPECT_TRUE(has(R"(gossipgw_hosts_file_total{result="skipped_members"})", g.hosts_file->skipped_members));
  for (const char* expected :
       {"# TYPE gossipgw_egress_queue_depth gauge\n", "# TYPE gossipgw_verdict_packets_total counter\n",
        "# TYPE gossipgw_port_link_up gauge\n"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected;
  }
}

TEST(Metrics, EmptyFamiliesGiveNoText) { EXPECT_EQ(prometheus_text({}), ""); }

TEST(Metrics, PublisherKeepsLatest) {
  MetricsPublisher p;
  EXPECT_EQ(p.latest().text, nullptr);
  p.publish(full_snapshot(), 1000);
  CounterSnapshot small;
  small.tx_queue.queued = 77;
  p.publish(small, 2000);
  const auto v = p.latest();
  EXPECT_EQ(v.publications, 2u);
  EXPECT_EQ(v.published_unix_ms, 2000u);
  EXPECT_NE(v.text->find("gossipgw_tx_queue_datagrams_total{result=\"queued\"} 77"), std::string::npos);
  EXPECT_EQ(v.text->find("gossipgw_rx_packets_total"), std::string::npos);
}

}  // namespace
}  // namespace gw::cp

namespace gw::cp {
namespace {

// DPDK telemetry accepts only [A-Za-z0-9_/] in names (issue 18: 54 of 201
// labelled series were refused): every series gets a valid, distinct name
// that splits back into its family and labels.
TEST(TelemetryNames, EverySeriesHasAValidDistinctNameThatSplitsBack) {
  const std::vector<MetricFamily> fams = metric_families(full_snapshot());
  const std::regex valid("^[A-Za-z0-9_/]{1,127}$");
  std::set<std::string> names;
  std::size_t series = 0;
  std::size_t labelled = 0;
  for (const MetricFamily& f : fams) {
    for (const MetricSample& s : f.samples) {
      ++series;
      const std::string n = telemetry_name(f, s);
      EXPECT_TRUE(std::regex_match(n, valid)) << f.name << "{" << s.labels << "} -> " << n;
      EXPECT_TRUE(names.insert(n).second) << "duplicate " << n;
      // Back: family, then name/value pairs, as in the Prometheus labels.
      std::vector<std::string> parts;
      std::stringstream in(n);
      for (std::string p; std::getline(in, p, '/');) parts.push_back(p);
      ASSERT_FALSE(parts.empty());
      EXPECT_EQ(parts[0], f.name + s.suffix);
      ASSERT_EQ(parts.size() % 2, 1u) << n;
      std::string labels;
      for (std::size_t i = 1; i + 1 < parts.size(); i += 2) {
        labels += (labels.empty() ? "" : ",") + parts[i] + "=\"" + parts[i + 1] + "\"";
      }
      // Telemetry names have no '.' or '+': a histogram bound becomes '_'.
      if (s.suffix != "_bucket") {
        EXPECT_EQ(labels, s.labels) << n;
      }
      if (!s.labels.empty()) ++labelled;
    }
  }
  EXPECT_GT(labelled, 10u);
  EXPECT_EQ(names.size(), series);
}

TEST(TelemetryNames, TooLongIsEmptyNotTruncated) {
  MetricFamily f{std::string(120, 'a'), "counter", "h", {}};
  const MetricSample s{"lcore=\"1\",queue=\"0\"", 1, ""};
  EXPECT_EQ(telemetry_name(f, s), "");
  EXPECT_EQ(telemetry_name(MetricFamily{"gossipgw_x", "counter", "h", {}}, MetricSample{"", 1, ""}), "gossipgw_x");
}

}  // namespace
}  // namespace gw::cp

namespace gw::cp {
namespace {

// What an operator alerts on (issue 18): the NIC's own drops, one family per
// counter, the process start time, and the build.
TEST(Metrics, NicCountersProcessStartAndBuildInfo) {
  MetricsPublisher p;
  p.set_build_info("0.1.0", "abc123");
  CounterSnapshot s;
  GatewaySections& g = s.gateway.emplace();
  g.process.start_time_unix = 1800000000;
  g.process.cpu_us = 2'500'000;
  g.process.resident_memory_bytes = 123456789;
  g.process.virtual_memory_bytes = 987654321;
  g.process.open_fds = 42;
  g.process.max_fds = 1024;
  g.nic = NicCounters{10, 4, 3, 0, 2, 1};
  p.publish(s, 1000);
  const std::string& text = *p.latest().text;
  for (const char* expected : {
           // Issue 52 item 10: the process's own, under the standard names.
           "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1800000000\n",
           "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 2.5\n",
           "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes 123456789\n",
           "process_virtual_memory_bytes 987654321\n",
           "# TYPE process_open_fds gauge\nprocess_open_fds 42\n",
           "process_max_fds 1024\n",
           "# TYPE gossipgw_nic_rx_missed_total counter\ngossipgw_nic_rx_missed_total 3\n",
           "gossipgw_nic_rx_nombuf_total 2\n",
           "gossipgw_nic_tx_errors_total 1\n",
           "gossipgw_nic_rx_errors_total 0\n",
           "gossipgw_nic_rx_packets_total 10\n",
           "gossipgw_nic_tx_packets_total 4\n",
           "# TYPE gossipgw_build_info gauge\ngossipgw_build_info{version=\"0.1.0\",commit=\"abc123\"} 1\n",
       }) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
}

}  // namespace
}  // namespace gw::cp

namespace gw::cp {
namespace {

TEST(Metrics, ProbeRttIsAPrometheusHistogram) {
  CounterSnapshot s;
  MembershipSnapshot& m = s.membership.emplace();
  m.probe_rtt.buckets[0] = 1;   // <= 500 us
  m.probe_rtt.buckets[1] = 2;   // <= 1 ms
  m.probe_rtt.buckets[10] = 1;  // <= 1 s
  m.probe_rtt.buckets[11] = 1;  // more
  m.probe_rtt.sum_us = 2500000;
  m.probe_rtt.count = 5;
  m.probe_rtt.unmatched = 2;
  const std::string text = prometheus_text(metric_families(s));
  for (const char* expected : {
           "# TYPE gossipgw_probe_rtt_seconds histogram\n",
           "gossipgw_probe_rtt_seconds_bucket{le=\"0.0005\"} 1\n",
           "gossipgw_probe_rtt_seconds_bucket{le=\"0.001\"} 3\n",
           "gossipgw_probe_rtt_seconds_bucket{le=\"1\"} 4\n",
           "gossipgw_probe_rtt_seconds_bucket{le=\"+Inf\"} 5\n",
           "gossipgw_probe_rtt_seconds_sum 2.5\n",
           "gossipgw_probe_rtt_seconds_count 5\n",
           "gossipgw_probe_unmatched_total 2\n",
       }) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
  // One HELP and one TYPE for the family, not one per sample name.
  EXPECT_EQ(text.find("# TYPE gossipgw_probe_rtt_seconds histogram"),
            text.rfind("# TYPE gossipgw_probe_rtt_seconds histogram"));
}

TEST(ProbeRtt, BucketsByUpperBound) {
  cp::ProbeRtt r;
  r.add(500);      // <= 0.5 ms
  r.add(501);      // <= 1 ms
  r.add(2000000);  // > 1 s
  EXPECT_EQ(r.buckets[0], 1u);
  EXPECT_EQ(r.buckets[1], 1u);
  EXPECT_EQ(r.buckets.back(), 1u);
  EXPECT_EQ(r.count, 3u);
  EXPECT_EQ(r.sum_us, 2001001u);
}

}  // namespace
}  // namespace gw::cp

namespace gw::cp {
namespace {

// Issue 18: the engine's counters as labelled families a Prometheus operator
// can sum: every engine counter lands in a mapped family (none untyped, none
// under its raw name), families that mix unlike counters are split, and the
// dimension of each family is a label.
TEST(Metrics, EngineCountersAreLabelledFamilies) {
  CounterSnapshot s;
  MembershipSnapshot& m = s.membership.emplace();
  std::uint64_t next = 1000;
  fill(m.engine, next);
  const cp::engine::Counters& c = m.engine;
  const Json ec = Json::parse(stats_json(s))["membership"]["engine_counters"];
  EXPECT_EQ(ec.size(), sizeof(c) / sizeof(std::uint64_t)) << "a Counters field is missing from the stats JSON";
  const auto fams = metric_families(s);
  std::size_t samples = 0;
  std::set<std::string> engine_families;
  for (const MetricFamily& f : fams) {
    if (f.name.rfind("gossipgw_engine_", 0) != 0) continue;
    EXPECT_EQ(f.type, "counter") << f.name;
    EXPECT_EQ(f.name.compare(f.name.size() - 6, 6, "_total"), 0) << f.name;
    engine_families.insert(f.name);
    samples += f.samples.size();
  }
  EXPECT_EQ(samples, ec.size());
  // Fewer families than counters: the ones of one meaning share a family.
  EXPECT_LT(engine_families.size(), ec.size() / 2);

  const std::string text = prometheus_text(fams);
  const auto has = [&text](const std::string& series, std::uint64_t v) {
    return text.find(series + " " + std::to_string(v) + "\n") != std::string::npos;
  };
  EXPECT_TRUE(has("gossipgw_engine_probe_outcomes_total{outcome=\"failed\"}", c.probe_failed)) << text;
  EXPECT_TRUE(has("gossipgw_engine_probe_outcomes_total{outcome=\"ack_direct\"}", c.probe_ack_direct));
  EXPECT_TRUE(has("gossipgw_engine_probe_outcomes_total{outcome=\"abandoned_stall\"}", c.probe_abandoned_stall));
  EXPECT_TRUE(has("gossipgw_engine_sync_requests_total{outcome=\"refused_rate\"}", c.sync_drop_rate));
  EXPECT_TRUE(has("gossipgw_engine_sync_requests_total{outcome=\"refused_join_rate\"}", c.join_drop_rate));
  EXPECT_TRUE(has("gossipgw_engine_admission_refused_total{reason=\"table_full\"}", c.admission_drop_table_full));
  EXPECT_TRUE(
      has("gossipgw_engine_messages_ignored_total{type=\"alive\",reason=\"tombstone\"}", c.alive_drop_tombstone));
  EXPECT_TRUE(
      has("gossipgw_engine_messages_ignored_total{type=\"ack\",reason=\"unsolicited\"}", c.ack_drop_unsolicited));
  EXPECT_TRUE(has("gossipgw_engine_member_changes_total{change=\"failed\"}", c.deaths));
  EXPECT_TRUE(has("gossipgw_engine_datagrams_total{direction=\"out\"}", c.packets_out));
  EXPECT_TRUE(has("gossipgw_engine_probation_ended_total{outcome=\"forgotten\"}", c.probation_forgotten));
  EXPECT_TRUE(has("gossipgw_engine_join_retries_total", c.join_retries));  // docs/alerts.yml uses it
  EXPECT_TRUE(has("gossipgw_engine_messages_total{direction=\"in\",type=\"ping\"}", c.msg_in[0]));
  // The old one-family-per-counter names are gone.
  EXPECT_EQ(text.find("gossipgw_engine_probe_failed_total"), std::string::npos);
  EXPECT_EQ(text.find("gossipgw_engine_messages_in_total"), std::string::npos);
}

// Issue 52 item 10: DPDK telemetry's /gossipgw/totals adds up what adds up;
// a gauge of maxima (deepest ring seen) gives its largest series.
TEST(Metrics, TotalsAddCountersButTakeTheLargestOfMaxima) {
  CounterSnapshot s = full_snapshot();
  s.control.ring_depth_max = {5, 90, 7, 40};
  s.membership->shaper[0].depth_max = 3;
  s.membership->shaper[1].depth_max = 11;
  s.membership->shaper[2].depth_max = 2;
  s.membership->shaper[3].depth_max = 1;
  std::map<std::string, double> totals;
  for (const auto& [name, v] : family_totals(metric_families(s))) totals[name] = v;
  EXPECT_EQ(totals["gossipgw_ring_depth_max"], 90);
  EXPECT_EQ(totals["gossipgw_egress_queue_depth_max"], 11);
  EXPECT_EQ(totals["gossipgw_rx_packets_total"],
            static_cast<double>(s.workers[0].counters.rx_total + s.workers[1].counters.rx_total));
  EXPECT_EQ(totals["gossipgw_probe_rtt_seconds"], static_cast<double>(s.membership->probe_rtt.count));
}

TEST(Metrics, UnknownKeySendersByKind) {
  CounterSnapshot s;
  GatewaySections& g = s.gateway.emplace();
  g.unknown_key_senders = {2, 1, 0};
  const std::string text = prometheus_text(metric_families(s));
  EXPECT_NE(text.find("# TYPE gossipgw_unknown_key_senders gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gossipgw_unknown_key_senders{kind=\"member\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gossipgw_unknown_key_senders{kind=\"seed\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gossipgw_unknown_key_senders{kind=\"other\"} 0\n"), std::string::npos) << text;
}

// Issue 52 item 10: a Prometheus port that cannot be bound says why.
TEST(PrometheusServer, APortInUseSaysSoAndWhatToDo) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::uint16_t port = ntohs(a.sin_port);
  MetricsPublisher p;
  std::string err;
  try {
    PrometheusServer server(p, "127.0.0.1", port);
  } catch (const std::runtime_error& e) {
    err = e.what();
  }
  ::close(fd);
  EXPECT_NE(err.find("cannot listen on 127.0.0.1:" + std::to_string(port) + ": Address already in use"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("choose another metrics.prometheus_port"), std::string::npos) << err;
  EXPECT_NE(bind_failure("192.0.2.77", 9464).find("no interface of this host has the address 192.0.2.77"),
            std::string::npos);
  EXPECT_NE(bind_failure("nonsense", 9464).find("not an IPv4 or IPv6 address"), std::string::npos);
}

// The process's own resources, read from /proc/self.
TEST(ProcessGauges, ReadFromProcSelf) {
  ProcessGauges g;
  ASSERT_TRUE(read_process_gauges(g));
  EXPECT_GT(g.resident_memory_bytes, 1024u * 1024u);
  EXPECT_GE(g.virtual_memory_bytes, g.resident_memory_bytes);
  EXPECT_GT(g.max_fds, 0u);
  const std::uint64_t fds = g.open_fds;
  EXPECT_GE(fds, 3u);  // stdin, stdout, stderr at least
  const int extra = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(extra, 0);
  ASSERT_TRUE(read_process_gauges(g));
  EXPECT_EQ(g.open_fds, fds + 1);
  ::close(extra);
  // CPU time only grows: spend some.
  const std::uint64_t cpu = g.cpu_us;
  volatile std::uint64_t x = 0;
  for (std::uint64_t i = 0; i < 300'000'000ULL && g.cpu_us < cpu + 20'000; ++i) {
    x = x + i;
    if (i % 10'000'000 == 0) (void)read_process_gauges(g);
  }
  EXPECT_GE(g.cpu_us, cpu + 20'000);
  ProcessGauges none;
  EXPECT_FALSE(read_process_gauges(none, "/nonexistent"));
}

}  // namespace
}  // namespace gw::cp
