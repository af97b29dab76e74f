// Counters out: every verdict, class and message counter, totals and per
// lcore, as one JSON document (written at exit by --stats-json).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "control/gateway/counter_table.h"

namespace gw::cp {

// The JSON text of a snapshot (stable key order, documented in README.md):
// pretty-printed with a final newline, or compact on one line.
std::string stats_json(const CounterSnapshot& snapshot, bool compact = false);

// The same from the counter structs. `host` may be null (membership disabled).
std::string stats_json(const std::vector<WorkerStats>& workers, unsigned control_lcore,
                       const cp::ControlCounters& control, const dp::TxQueueCounters& tx_queue,
                       const cp::EngineHost* host, bool compact = false, bool include_members = true,
                       const std::optional<GatewaySections>& gateway = std::nullopt);

// Writes `text` to `path` atomically (temporary file + rename); false on error.
bool write_file_atomically(const std::string& path, const std::string& text);

}  // namespace gw::cp
