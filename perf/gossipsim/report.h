// gossipsim outputs: result JSON, time-series CSV and an SVG chart.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "perf/gossipsim/simulator.h"

namespace gw::sim {

// `with_perf` adds the wall-clock and allocator figures, which differ run to run.
nlohmann::json to_json(const Results& r, bool with_perf);
std::string to_csv(const Results& r);
// Four stacked charts (plain SVG, no plotting dependency): view size over time
// (min/median/max against the truly alive), egress wire bytes/s per member with
// the budget, suspicions and refutations per sample interval, and the CDF of
// per-observer detection times; crashes, restarts, partitions and the phantom
// storm marked.
std::string to_svg(const Results& r);
// The same charts one per document: {file name, SVG} for views.svg, egress.svg,
// suspicions.svg and detection.svg.
std::vector<std::pair<std::string, std::string>> to_svgs(const Results& r);

// scale-N runs side by side: charts against the member count N of egress per
// member (mean, p99, max, and without failure news), packets per member,
// detection times, false positives per member-hour, engine bytes per entry
// and the heap peak; `results` are result.json documents as gossipsim writes
// them (with their perf section), labelled by where they came from. Throws
// std::runtime_error naming the label and the field a document lacks.
std::string scaling_svg(const std::vector<std::pair<std::string, nlohmann::json>>& results);
// The same figures as CSV, one row per run in order of N.
std::string scaling_csv(const std::vector<std::pair<std::string, nlohmann::json>>& results);

// The memory law: the runs' heap peaks against N, fitted by least squares in
// log-log space (heap = a N^b) and with the exponent fixed at 2 (one full
// view per member: heap = c N^2), each with its residuals, and what each law
// says of the largest N whose heap fits in `budget_bytes` and of the heap at
// `target_n` members. Text, one finding a line. The free fit needs two runs
// of different N; with fewer it is left out.
std::string memory_law(const std::vector<std::pair<std::string, nlohmann::json>>& results, double budget_bytes,
                       double target_n);

}  // namespace gw::sim
