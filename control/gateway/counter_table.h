// Every exported counter, described once. A counter's description (its key
// in the stats JSON, its Prometheus family with name, type and help, which
// carries the unit, and its labels) lives in the tables of counter_table.cc,
// and one walk over a snapshot of the counter structs drives both exporters:
// the stats JSON (stats_json.h) and the Prometheus and telemetry families
// (metrics.h). Neither parses the other's output, so a counter cannot be in
// one and missing from the other.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "control/api/server.h"
#include "control/engine/engine.h"
#include "control/gateway/control_api.h"
#include "control/gateway/process_stats.h"
#include "control/host/egress_shaper.h"
#include "control/host/engine_host.h"
#include "control/host/events/event_runner.h"
#include "control/host/events/hosts_file.h"
#include "control/host/keyring_state.h"
#include "control/host/message_stats.h"
#include "control/host/unknown_keys.h"
#include "dataplane/api/counters.h"
#include "dataplane/tx_path.h"

namespace gw::cp {

struct WorkerStats {
  unsigned lcore = 0;
  unsigned queue = 0;
  dp::WorkerCounters counters;
  dp::TxCounters tx;
  // Names of the classifier's rules, in counter order (null: classifier off).
  const std::vector<std::string>* unkeyed_rules = nullptr;
};

// The composition root's own counters (control/gateway/gateway.cc reads
// them). Each section is a struct; its counters' names and families are the
// field tables in counter_table.cc, as for every other struct here.
struct SnapshotGauges {
  std::uint64_t version = 0;   // of the snapshot the workers read
  std::uint64_t retained = 0;  // snapshots kept until every worker moved past them
};
struct PortGauges {
  std::uint64_t link_up = 0;  // 1 or 0
  std::uint64_t link_down_events = 0;
};
// The NIC's own counters (rte_eth_stats): what it dropped before any worker saw it.
struct NicCounters {
  std::uint64_t rx_packets = 0;
  std::uint64_t tx_packets = 0;
  std::uint64_t rx_missed = 0;
  std::uint64_t rx_errors = 0;
  std::uint64_t rx_nombuf = 0;
  std::uint64_t tx_errors = 0;
};
struct TelemetryCounters {
  std::uint64_t refused = 0;
};
struct ControlApiSection {
  cp::api::ServerCounterValues server;
  ControlApiCounters api;
};
// A section is absent when its part is not configured. The key commands'
// section comes from the membership snapshot's host counters.
struct GatewaySections {
  SnapshotGauges snapshots;
  std::optional<cp::events::EventCounters> event_handler;
  std::optional<cp::events::HostsFileCounters> hosts_file;
  std::optional<TelemetryCounters> telemetry;
  ProcessGauges process;
  PortGauges port;
  std::optional<NicCounters> nic;
  std::optional<cp::KeyringPersister::Counters> keyring_state;
  std::optional<ControlApiSection> control_api;
  // Sources heard under key ids our keyring lacks (cp::UnknownKeyWatch).
  cp::UnknownKeyWatch::Senders unknown_key_senders;
};

// What the stats document says about membership, copied from the EngineHost
// on the control lcore.
struct MembershipSnapshot {
  struct Member {
    std::string name;
    std::string address;  // ip_text
    std::uint16_t port = 0;
    cp::engine::MemberStatus status = cp::engine::MemberStatus::kAlive;
    std::uint64_t incarnation = 0;
    std::vector<cp::engine::Tag> tags;
  };
  std::string node;
  std::uint64_t incarnation = 0;
  std::uint64_t live_members = 0;
  std::uint64_t health_score = 0;
  cp::ProbeRtt probe_rtt;
  std::array<std::uint64_t, 4> by_state{};  // by MemberStatus
  bool has_members = false;                 // `members` filled (the member list is in the JSON)
  std::vector<Member> members;
  std::array<std::uint64_t, 4> events{};  // by EventKind
  std::vector<cp::engine::MemberEvent> recent_events;
  cp::engine::Counters engine;
  cp::EngineHostCounters host;
  std::array<cp::ShaperClassCounters, crypto::kClassCount> shaper{};
};

// Every counter the gateway exports, at one moment.
struct CounterSnapshot {
  std::vector<WorkerStats> workers;
  unsigned control_lcore = 0;
  cp::ControlCounters control;
  dp::TxQueueCounters tx_queue;
  std::optional<MembershipSnapshot> membership;  // none: membership disabled
  std::optional<GatewaySections> gateway;        // none: not a running gateway (tests, tools)
};

// Control lcore (or after the workers stopped). `host` may be null.
CounterSnapshot counter_snapshot(std::vector<WorkerStats> workers, unsigned control_lcore,
                                 const cp::ControlCounters& control, const dp::TxQueueCounters& tx_queue,
                                 const cp::EngineHost* host, bool include_members,
                                 std::optional<GatewaySections> gateway = std::nullopt);

// A Prometheus family: the help text ends with the unit in parentheses.
struct Family {
  std::string_view name;  // gossipgw_...
  std::string_view type;  // counter | gauge | histogram | untyped
  std::string_view help;
  // A gauge of maxima (deepest queue seen): its series do not add up, their
  // total is the largest (DPDK telemetry's /gossipgw/totals).
  bool maximum = false;
};

// Where one counter goes in Prometheus.
struct Series {
  const Family* family = nullptr;
  std::string labels;  // `a="x",b="y"` (empty: none)
  double value = 0;
  std::string_view suffix;  // _bucket, _sum, _count of a histogram
};

// The walk calls these in the stats document's order.
class CounterVisitor {
 public:
  virtual ~CounterVisitor() = default;
  // An object under `key` (an array element when inside an array: key empty).
  virtual void open(std::string_view key) = 0;
  virtual void open_array(std::string_view key) = 0;
  virtual void close() = 0;
  // In the JSON only: names, roles, lcore and queue ids (labels in
  // Prometheus), the member list, and the sums of series exported per lcore
  // (totals, classes, unkeyed, arp; the control lcore's class_drop_mismatch).
  virtual void text(std::string_view key, std::string_view value) = 0;
  virtual void number(std::string_view key, std::uint64_t value) = 0;
  // A counter: `value` in the JSON, `series` in Prometheus.
  virtual void counter(std::string_view key, std::uint64_t value, const Series& series) = 0;
};

void walk_counters(const CounterSnapshot& s, CounterVisitor& v);

}  // namespace gw::cp
