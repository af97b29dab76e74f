// Fuzz target: gossipsim's scenario loader (YAML files operators and CI
// write). Only ScenarioError may come out; an accepted scenario has at least
// one member and a positive duration.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "perf/gossipsim/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const gw::sim::Scenario s = gw::sim::load_scenario_string(text, "fuzz.yaml");
    if (s.members == 0 || s.duration_ns == 0) std::abort();
  } catch (const gw::sim::ScenarioError&) {
  }
  return 0;
}
