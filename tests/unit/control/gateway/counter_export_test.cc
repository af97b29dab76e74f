// The counter export as a whole, on a snapshot in which every counter has its
// own value: the stats JSON (pretty with members, as --stats-json writes it;
// compact without, as the control API and the metrics publisher take it) and
// the Prometheus text must stay byte for byte as recorded in
// counter_export_golden/ (metric names, types, help, labels, key order and
// values). Any change to a name, a help text or the document's layout shows
// up here; when one is meant, regenerate the files:
//
//   GW_REGENERATE_GOLDEN=1 build/tests/unit/control/gateway/control_gateway_counter_export_test
//
// and review the diff like code.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "control/gateway/metrics.h"
#include "control/gateway/stats_json.h"
#include "control/host/engine_host.h"

#ifndef GW_COUNTER_GOLDEN_DIR
#error "GW_COUNTER_GOLDEN_DIR: the directory of the golden files"
#endif

namespace gw::cp {
namespace {

// Every 64-bit word of `c` gets the next value: distinct values let a test
// find each counter again.
template <class T>
void fill(T& c, std::uint64_t& next) {
  static_assert(sizeof(T) % sizeof(std::uint64_t) == 0);
  auto* words = reinterpret_cast<std::uint64_t*>(&c);
  for (std::size_t i = 0; i < sizeof(T) / sizeof(std::uint64_t); ++i) words[i] = next++;
}

struct NullSink : dp::DatagramSink {
  bool send(const dp::Endpoint&, crypto::PriorityClass, const std::uint8_t*, std::size_t) noexcept override {
    return true;
  }
};

cp::engine::Address addr(std::uint8_t i) { return cp::engine::Address{{10, 0, 0, i}, 7946}; }

// Two workers, the control lcore, the tx queue, a membership host with one
// other member, and every section the composition root adds.
struct Fixture {
  Fixture() {
    std::uint64_t next = 1;
    for (unsigned i = 0; i < 2; ++i) {
      WorkerStats w;
      w.lcore = 1 + i;
      w.queue = i;
      fill(w.counters, next);
      fill(w.tx, next);
      w.unkeyed_rules = &rules;
      workers.push_back(w);
    }
    fill(control, next);
    fill(tx_queue, next);

    cp::EngineHost::Options o;
    o.engine = cp::engine::EngineConfig::lan();
    o.engine.name = "gw0";
    o.engine.addr = addr(100);
    o.keys = &keys;
    o.rng_seed = 7;
    host = std::make_unique<cp::EngineHost>(o, sink, 1'000'000'000ULL);
    host->engine().handle(addr(1), {cp::engine::Alive{3, "n1", addr(1), {{"role", "db"}}, 1}}, 1'000'000'000ULL);
    // The host's own counters are not settable from outside; the host object
    // is not const, so writing through its const references is defined.
    fill(const_cast<cp::EngineHostCounters&>(host->counters()), next);
    fill(const_cast<cp::ProbeRtt&>(host->probe_rtt()), next);
    fill(const_cast<std::array<std::uint64_t, 4>&>(host->event_counts()), next);
    fill(const_cast<std::array<cp::ShaperClassCounters, crypto::kClassCount>&>(host->shaper().counters()), next);
    auto& recent = const_cast<std::deque<cp::engine::MemberEvent>&>(host->recent_events());
    recent.push_back({cp::engine::EventKind::kJoin, "n1", addr(1), 3, {}});
    recent.push_back({cp::engine::EventKind::kFailed, "n2", addr(2), 5, {}});

    // In the order the stats document lists them, each counter the next value.
    GatewaySections& g = gateway.emplace();
    fill(g.snapshots, next);
    fill(g.event_handler.emplace(), next);
    fill(g.hosts_file.emplace(), next);
    fill(g.telemetry.emplace(), next);
    fill(g.process, next);
    g.port.link_up = 1;
    g.port.link_down_events = next++;
    fill(g.nic.emplace(), next);
    fill(g.keyring_state.emplace(), next);
    fill(g.unknown_key_senders, next);
    auto& kc = const_cast<cp::EngineHostCounters&>(host->counters());
    for (std::uint64_t* c :
         {&kc.key_commands_sent, &kc.key_commands_applied, &kc.key_commands_refused, &kc.key_commands_repeated,
          &kc.key_commands_not_member, &kc.key_commands_stale, &kc.key_results_received, &kc.key_results_unsolicited}) {
      *c = next++;
    }
    ControlApiSection& api = g.control_api.emplace();
    for (std::uint64_t* c : {&api.server.connections, &api.api.requests, &api.api.bad_requests, &api.api.failed,
                             &api.api.key_changes, &api.api.cluster_key_changes, &api.server.rejected_too_large,
                             &api.server.rejected_read, &api.server.evicted, &api.server.timed_out}) {
      *c = next++;
    }
  }

  std::string json(bool compact, bool include_members) const {
    return stats_json(workers, 9, control, tx_queue, host.get(), compact, include_members, gateway);
  }
  std::string prometheus() const {
    return prometheus_text(
        metric_families(counter_snapshot(workers, 9, control, tx_queue, host.get(), false, gateway)));
  }

  std::vector<std::string> rules = {"memberlist", "serf"};
  std::vector<WorkerStats> workers;
  cp::ControlCounters control;
  dp::TxQueueCounters tx_queue;
  crypto::Keyring keys;
  NullSink sink;
  std::unique_ptr<cp::EngineHost> host;
  std::optional<GatewaySections> gateway;
};

void check_golden(const std::string& name, const std::string& text) {
  const std::string path = std::string(GW_COUNTER_GOLDEN_DIR) + "/" + name;
  if (std::getenv("GW_REGENERATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    GTEST_SKIP() << "regenerated " << path;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing " << path;
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(text, want.str()) << name << " changed (see the comment at the top of this file)";
}

TEST(CounterExport, StatsJsonAsRecorded) { check_golden("stats.json", Fixture().json(false, true)); }

TEST(CounterExport, CompactStatsJsonAsRecorded) {
  check_golden("stats_compact.json", Fixture().json(true, false) + "\n");
}

TEST(CounterExport, PrometheusTextAsRecorded) { check_golden("metrics.prom", Fixture().prometheus()); }

}  // namespace
}  // namespace gw::cp
