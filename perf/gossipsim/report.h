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

}  // namespace gw::sim
