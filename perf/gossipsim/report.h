// gossipsim outputs: result JSON, time-series CSV and an SVG chart.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "perf/gossipsim/simulator.h"

namespace gw::sim {

// `with_perf` adds the wall-clock and allocator figures, which differ run to run.
nlohmann::json to_json(const Results& r, bool with_perf);
std::string to_csv(const Results& r);
// Two stacked line charts over time: view size (min/mean/max vs expected) and
// egress bytes/s per member. Plain SVG, no plotting dependency.
std::string to_svg(const Results& r);

}  // namespace gw::sim
