// Counters out: every verdict, class and message counter, totals and per
// lcore, as one JSON document (written at exit by --stats-json).
#pragma once

#include <string>
#include <vector>

#include "control/host/message_stats.h"
#include "dataplane/api/counters.h"

namespace gw::dp {

struct WorkerStats {
  unsigned lcore = 0;
  unsigned queue = 0;
  WorkerCounters counters;
};

// The JSON text (stable key order, documented in README.md).
std::string stats_json(const std::vector<WorkerStats>& workers, unsigned control_lcore,
                       const cp::ControlCounters& control);

// Writes `text` to `path` atomically (temporary file + rename); false on error.
bool write_file_atomically(const std::string& path, const std::string& text);

}  // namespace gw::dp
