#include "control/gateway/engine_config.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "base/clock.h"
#include "control/version.h"

namespace gw::cp {

engine::Address engine_address(const dp::LocalEndpoint& ep) {
  engine::Address a;
  if (ep.ipv6) {
    a.ip.assign(ep.ipv6_addr.begin(), ep.ipv6_addr.end());
  } else {
    a.ip.assign(ep.ipv4.begin(), ep.ipv4.end());
  }
  a.port = ep.port;
  return a;
}

std::string gateway_build() {
  return (std::string(GW_VERSION) + "+" + GW_COMMIT).substr(0, engine::kMaxBuildBytes);
}

engine::EngineConfig engine_config(const config::Config& cfg, const dp::LocalEndpoint& local) {
  const std::optional<engine::EngineConfig> preset = engine::EngineConfig::preset(cfg.membership.preset);
  if (!preset) throw std::invalid_argument("membership.preset: unknown preset '" + cfg.membership.preset + "'");
  engine::EngineConfig e = *preset;
  e.name = cfg.node.name;
  e.addr = engine_address(local);
  e.build = gateway_build();
  for (const auto& [k, v] : cfg.membership.tags) e.tags.push_back({k, v});
  e.allowed_name_prefixes = cfg.membership.allowed_name_prefixes;
  for (const auto& [k, v] : cfg.membership.required_tags) e.required_tags.push_back({k, v});
  e.admit_rate = cfg.membership.admit_rate;
  e.admit_burst = cfg.membership.admit_burst;
  e.reconnect_timeout_ns = cfg.membership.reconnect_timeout_s * 1'000'000'000ULL;
  // The shaper's budget (engine_plan): the engine sizes what it sends to it.
  e.egress_bytes_per_sec = cfg.membership.egress_bytes_per_sec;
  // Microseconds since the epoch: a restarted member comes back with a
  // higher incarnation than any it used before, so its tombstone cannot hold
  // it; and incarnations above the Unix time (plus a slack for clock skew) are
  // refused, so that no key holder can push a member where it cannot refute
  // (docs/membership.md, "Incarnations and the clock"). The engine's clock is
  // base::monotonic_ns (EngineHost).
  const std::uint64_t unix_ns = base::unix_time_ns();
  e.initial_incarnation = unix_ns / 1000;
  e.unix_clock_offset_ns = unix_ns - std::min(unix_ns - 1, base::monotonic_ns());
  if (const std::string why = e.validate(); !why.empty()) throw std::invalid_argument("membership: " + why);
  return e;
}

engine::EngineConfig engine_config(const config::Config& cfg) {
  dp::LocalEndpoint local;
  if (!dp::parse_endpoint(cfg.node.address.c_str(), cfg.node.port, &local)) {
    throw std::invalid_argument("node.address: '" + cfg.node.address + "' is not an IP address");
  }
  return engine_config(cfg, local);
}

}  // namespace gw::cp
