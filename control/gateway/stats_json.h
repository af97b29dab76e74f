// Counters out: every verdict, class and message counter, totals and per
// lcore, as one JSON document (written at exit by --stats-json).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "control/host/message_stats.h"
#include "dataplane/api/counters.h"
#include "dataplane/tx_path.h"

namespace gw::cp {
class EngineHost;
namespace engine {
struct Counters;
}
}

namespace gw::dp {

struct WorkerStats {
  unsigned lcore = 0;
  unsigned queue = 0;
  WorkerCounters counters;
  TxCounters tx;
  // Names of the classifier's rules, in counter order (null: classifier off).
  const std::vector<std::string>* unkeyed_rules = nullptr;
};

// More sections from the composition root (control API, snapshots, event
// handlers): section name -> counter name -> value.
using ExtraSections = std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::uint64_t>>>>;

// The JSON text (stable key order, documented in README.md).
// `host` may be null (membership disabled).
std::string stats_json(const std::vector<WorkerStats>& workers, unsigned control_lcore,
                       const cp::ControlCounters& control, const TxQueueCounters& tx_queue,
                       const cp::EngineHost* host, bool compact = false, bool include_members = true,
                       const ExtraSections& extra = {});

// `membership.engine_counters`: the engine's counters under their flat names
// (docs/metrics.md maps each to its Prometheus series). Control lcore.
std::string engine_counters_json(const cp::engine::Counters& c);

// Dotted-quad or RFC 5952-ish hex groups for a 4- or 16-byte address.
std::string ip_text(std::span<const std::uint8_t> ip);

// Writes `text` to `path` atomically (temporary file + rename); false on error.
bool write_file_atomically(const std::string& path, const std::string& text);

}  // namespace gw::dp
