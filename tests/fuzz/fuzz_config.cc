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
    if (c.mode == gw::config::Mode::kMemberlist) {
      // mode: memberlist: no native section survives, the filter's ranges hold.
      const auto& m = c.memberlist;
      bool distinct = true;
      for (std::size_t i = 0; i < m.ports.size(); ++i) {
        for (std::size_t j = i + 1; j < m.ports.size(); ++j) distinct = distinct && m.ports[i] != m.ports[j];
        distinct = distinct && m.ports[i] != 0;
      }
      const bool ok = c.cluster.keys.empty() && c.cluster.name.empty() && !m.ports.empty() && m.ports.size() <= 4 &&
                      distinct && m.agent_port_id != c.dataplane.port_id && m.label.size() <= 255 &&
                      m.per_source_pps >= 1 && m.per_source_burst >= 1 && m.sources >= 64 &&
                      m.egress_bytes_per_sec <= 0xffffffffULL && m.egress_burst_bytes >= 9216 &&
                      m.egress_burst_bytes <= 0xffffffffULL && m.max_probe_messages >= 1 && m.agent_udp_port != 0 &&
                      m.allow_cidrs.size() <= 1024 && m.allow_plaintext_cidrs.size() <= 1024;
      if (!ok) std::abort();
      return 0;
    }
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
