// Counter export: every numeric counter of the stats document appears exactly
// once in the Prometheus text, under a valid name with HELP and TYPE lines,
// and counters nobody mapped yet still appear (under their path).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "control/host/engine_host.h"
#include "control/engine/engine.h"
#include "control/gateway/metrics.h"
#include "control/gateway/stats_json.h"

namespace gw::dp {
namespace {

using Json = nlohmann::ordered_json;

const char* kDoc = R"({
  "totals": {"rx_total": 10, "accepted": 7},
  "classes": {"urgent": 1},
  "lcores": [
    {"lcore": 1, "role": "worker", "queue": 0,
     "counters": {"rx_total": 10, "accepted": 7, "drop_unkeyed": 3, "replay_table_evict": 2,
                  "classifier": {"memberlist": 2}},
     "unkeyed": {"serf": 1, "unmatched": 2},
     "accepted_by_class": {"urgent": 1, "probe": 2, "gossip": 4, "bulk": 0},
     "tx": {"tx_packets": 5, "tx_bytes": 500, "tx_drop_nic": 0, "tx_broadcast_unknown_mac": 1, "tx_new": 9},
     "rx_bursts": 4, "idle_polls": 100, "replay_evictions": 6},
    {"lcore": 0, "role": "control",
     "counters": {"msg_ping": 3, "msg_decode_error": 1, "msg_unknown": 0},
     "handoffs_by_class": {"urgent": 1}, "ring_depth_max": {"urgent": 2}}
  ],
  "tx_queue": {"queued": 5, "drop_no_buffer": 0},
  "membership": {
    "node": "gw\"1", "incarnation": 17, "live_members": 3, "health_score": 0,
    "members_by_state": {"alive": 3, "suspect": 0, "dead": 1, "left": 0},
    "events": {"join": 3, "leave": 0, "failed": 1, "update": 0},
    "recent_events": [{"event": "join", "node": "x", "incarnation": 1}],
    "engine_counters": {"in_ping": 3, "out_ack": 3, "broadcast_drop_bulk": 0, "suspicions": 1},
    "sealed": 9, "drop_encode": 0, "drop_no_primary": 0,
    "shaper": {"urgent": {"sent": 2, "sent_bytes": 200, "deferred": 0, "dropped": 0, "refused": 0, "depth": 0, "depth_max": 1}}
  },
  "control_api": {"requests": 4},
  "snapshots": {"version": 3, "retained": 1},
  "unkeyed": {"serf": 1, "unmatched": 2}
})";

// Numeric leaves, except the top-level sums (totals, classes, unkeyed) and
// recent_events: what must be exported.
std::size_t numeric_leaves(const Json& j, const std::string& key = "", bool top = true) {
  if (key == "recent_events") return 0;
  if (j.is_number()) return (key == "lcore" || key == "queue") ? 0 : 1;
  std::size_t n = 0;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (top && (k == "totals" || k == "classes" || k == "unkeyed")) continue;
      n += numeric_leaves(v, k, false);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) n += numeric_leaves(v, key, false);
  }
  return n;
}

TEST(Metrics, EveryCounterExportedOnceInValidFormat) {
  const auto families = metric_families(kDoc);
  std::size_t samples = 0;
  std::set<std::string> names;
  for (const auto& f : families) {
    EXPECT_TRUE(names.insert(f.name).second) << "family twice: " << f.name;
    samples += f.samples.size();
  }
  EXPECT_EQ(samples, numeric_leaves(Json::parse(kDoc)));

  const std::string text = prometheus_text(families);
  const std::regex help(R"(^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* \S.*$)");
  const std::regex type(R"(^# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|untyped)$)");
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
  const std::string text = prometheus_text(metric_families(kDoc));
  for (const char* expected : {
           "gossipgw_verdict_packets_total{lcore=\"1\",queue=\"0\",verdict=\"drop_unkeyed\"} 3\n",
           "gossipgw_rx_packets_total{lcore=\"1\",queue=\"0\"} 10\n",
           "gossipgw_accepted_packets_total{lcore=\"1\",queue=\"0\",class=\"gossip\"} 4\n",
           "gossipgw_messages_total{lcore=\"0\",type=\"ping\"} 3\n",
           "gossipgw_message_decode_errors_total{lcore=\"0\"} 1\n",
           "gossipgw_members{state=\"dead\"} 1\n",
           "gossipgw_member_events_total{kind=\"failed\"} 1\n",
           "gossipgw_engine_member_changes_total{change=\"suspected\"} 1\n",
           "gossipgw_engine_messages_total{direction=\"in\",type=\"ping\"} 3\n",
           "gossipgw_engine_messages_total{direction=\"out\",type=\"ack\"} 3\n",
           "gossipgw_egress_queue_depth_max{class=\"urgent\"} 1\n",
           "# TYPE gossipgw_egress_queue_depth gauge\n",
           "# TYPE gossipgw_verdict_packets_total counter\n",
           // Not mapped by name: exported under their path.
           "gossipgw_worker_classifier_memberlist{lcore=\"1\",queue=\"0\"} 2\n",
           "gossipgw_worker_replay_evictions{lcore=\"1\",queue=\"0\"} 6\n",
           "gossipgw_worker_tx_tx_new{lcore=\"1\",queue=\"0\"} 9\n",
           "gossipgw_control_api_total{counter=\"requests\"} 4\n",
           "gossipgw_table_evictions_total{lcore=\"1\",queue=\"0\",table=\"replay\"} 2\n",
           "gossipgw_unkeyed_packets_total{lcore=\"1\",queue=\"0\",rule=\"serf\"} 1\n",
           "gossipgw_snapshot_version 3\n",
       }) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected;
  }
}

TEST(Metrics, BadDocumentGivesNothing) {
  EXPECT_TRUE(metric_families("not json").empty());
  EXPECT_TRUE(metric_families("[1,2,3]").empty());
  EXPECT_EQ(prometheus_text({}), "");
}

TEST(Metrics, PublisherKeepsLatest) {
  MetricsPublisher p;
  EXPECT_EQ(p.latest().text, nullptr);
  p.publish(kDoc, 1000);
  p.publish(R"({"tx_queue": {"queued": 77}})", 2000);
  const auto v = p.latest();
  EXPECT_EQ(v.publications, 2u);
  EXPECT_EQ(v.published_unix_ms, 2000u);
  EXPECT_NE(v.text->find("gossipgw_tx_queue_datagrams_total{result=\"queued\"} 77"), std::string::npos);
  EXPECT_EQ(v.text->find("gossipgw_rx_packets_total"), std::string::npos);
}

}  // namespace
}  // namespace gw::dp

namespace gw::dp {
namespace {

// DPDK telemetry accepts only [A-Za-z0-9_/] in names (issue 18: 54 of 201
// labelled series were refused): every series gets a valid, distinct name
// that splits back into its family and labels.
TEST(TelemetryNames, EverySeriesHasAValidDistinctNameThatSplitsBack) {
  const std::vector<MetricFamily> fams = metric_families(kDoc);
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
      EXPECT_EQ(parts[0], f.name);
      ASSERT_EQ(parts.size() % 2, 1u) << n;
      std::string labels;
      for (std::size_t i = 1; i + 1 < parts.size(); i += 2) {
        labels += (labels.empty() ? "" : ",") + parts[i] + "=\"" + parts[i + 1] + "\"";
      }
      EXPECT_EQ(labels, s.labels) << n;
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
}  // namespace gw::dp

namespace gw::dp {
namespace {

// What an operator alerts on (issue 18): the NIC's own drops, one family per
// counter, the process start time, and the build.
TEST(Metrics, NicCountersProcessStartAndBuildInfo) {
  MetricsPublisher p;
  p.set_build_info("0.1.0", "abc123");
  p.publish(R"({"process": {"start_time_unix": 1800000000},
                "nic": {"rx_packets": 10, "tx_packets": 4, "rx_missed": 3, "rx_errors": 0, "rx_nombuf": 2,
                        "tx_errors": 1}})",
            1000);
  const std::string& text = *p.latest().text;
  for (const char* expected : {
           "# TYPE gossipgw_process_start_time_seconds gauge\ngossipgw_process_start_time_seconds 1800000000\n",
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
}  // namespace gw::dp

namespace gw::dp {
namespace {

TEST(Metrics, ProbeRttIsAPrometheusHistogram) {
  const std::string text = prometheus_text(metric_families(R"({"membership": {"probe_rtt":
      {"le_us": {"500": 1, "1000": 3, "1000000": 4, "+Inf": 5}, "sum_us": 2500000, "count": 5, "unmatched": 2}}})"));
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
}  // namespace gw::dp

namespace gw::dp {
namespace {

// Issue 18: the engine's counters as labelled families a Prometheus operator
// can sum: every engine counter lands in a mapped family (none untyped, none
// under its raw name), families that mix unlike counters are split, and the
// dimension of each family is a label.
TEST(Metrics, EngineCountersAreLabelledFamilies) {
  // Distinct values so that every counter can be found again.
  cp::engine::Counters c;
  std::uint64_t next = 1;
  auto* words = reinterpret_cast<std::uint64_t*>(&c);
  static_assert(sizeof(c) % sizeof(std::uint64_t) == 0);
  for (std::size_t i = 0; i < sizeof(c) / sizeof(std::uint64_t); ++i) words[i] = next++;
  const Json ec = Json::parse(engine_counters_json(c));
  EXPECT_EQ(ec.size(), sizeof(c) / sizeof(std::uint64_t)) << "a Counters field is missing from the stats JSON";
  Json doc;
  doc["membership"]["engine_counters"] = ec;
  const auto fams = metric_families(doc.dump());
  std::size_t samples = 0;
  std::set<std::string> engine_families;
  for (const MetricFamily& f : fams) {
    EXPECT_EQ(f.type, "counter") << f.name;
    EXPECT_EQ(f.name.rfind("gossipgw_engine_", 0), 0u) << f.name;
    EXPECT_EQ(f.name.compare(f.name.size() - 6, 6, "_total"), 0) << f.name;
    EXPECT_EQ(f.help.find("Membership engine counter"), std::string::npos) << "unmapped: " << f.name;
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
  EXPECT_TRUE(has("gossipgw_engine_messages_ignored_total{type=\"alive\",reason=\"tombstone\"}",
                  c.alive_drop_tombstone));
  EXPECT_TRUE(has("gossipgw_engine_messages_ignored_total{type=\"ack\",reason=\"unsolicited\"}",
                  c.ack_drop_unsolicited));
  EXPECT_TRUE(has("gossipgw_engine_member_changes_total{change=\"failed\"}", c.deaths));
  EXPECT_TRUE(has("gossipgw_engine_datagrams_total{direction=\"out\"}", c.packets_out));
  EXPECT_TRUE(has("gossipgw_engine_probation_ended_total{outcome=\"forgotten\"}", c.probation_forgotten));
  EXPECT_TRUE(has("gossipgw_engine_join_retries_total", c.join_retries));  // docs/alerts.yml uses it
  EXPECT_TRUE(has("gossipgw_engine_messages_total{direction=\"in\",type=\"ping\"}", c.msg_in[0]));
  // The old one-family-per-counter names are gone.
  EXPECT_EQ(text.find("gossipgw_engine_probe_failed_total"), std::string::npos);
  EXPECT_EQ(text.find("gossipgw_engine_messages_in_total"), std::string::npos);
}

}  // namespace
}  // namespace gw::dp
