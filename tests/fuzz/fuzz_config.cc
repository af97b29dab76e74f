// Fuzz target: the YAML config loader. Only ConfigError may come out, and an
// accepted config satisfies the documented ranges.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const gw::config::Config c = gw::config::parse_config(text, "fuzz.yaml", "/tmp");
    int primaries = 0;
    for (const auto& k : c.cluster.keys) primaries += k.primary ? 1 : 0;
    const bool ok = !c.cluster.name.empty() && !c.node.address.empty() && c.node.port != 0 &&
                    c.cluster.keys.size() >= 1 && c.cluster.keys.size() <= 8 && primaries == 1 && c.rings.size >= 64 &&
                    (c.rings.size & (c.rings.size - 1)) == 0 && !c.lcores.workers.empty() && c.dataplane.burst >= 1 &&
                    c.dataplane.burst <= 512;
    if (!ok) std::abort();
  } catch (const gw::config::ConfigError&) {
    // The expected outcome for nearly every input.
  }
  return 0;
}
