// Counters out: every verdict, class and message counter, totals and per
// lcore, as one JSON document (written at exit by --stats-json).
#pragma once

#include <string>
#include <vector>

#include "control/host/message_stats.h"
#include "dataplane/api/counters.h"
#include "dataplane/tx_path.h"

namespace gw::cp {
class EngineHost;
}

namespace gw::dp {

struct WorkerStats {
  unsigned lcore = 0;
  unsigned queue = 0;
  WorkerCounters counters;
  TxCounters tx;
};

// The JSON text (stable key order, documented in README.md).
// `host` may be null (membership disabled).
std::string stats_json(const std::vector<WorkerStats>& workers, unsigned control_lcore,
                       const cp::ControlCounters& control, const TxQueueCounters& tx_queue,
                       const cp::EngineHost* host);

// Writes `text` to `path` atomically (temporary file + rename); false on error.
bool write_file_atomically(const std::string& path, const std::string& text);

}  // namespace gw::dp
