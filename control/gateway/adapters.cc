#include "control/gateway/adapters.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "config/keys.h"
#include "dataplane/guard.h"

namespace gw::cp {

dp::Endpoint endpoint_of(const dp::LocalEndpoint& local) {
  dp::Endpoint e;
  if (local.ipv6) {
    e.ip = local.ipv6_addr;
    e.ip_len = 16;
  } else {
    std::copy(local.ipv4.begin(), local.ipv4.end(), e.ip.begin());
    e.ip_len = 4;
  }
  e.port = local.port;
  return e;
}

engine::EngineConfig engine_config(const config::Config& cfg, const dp::LocalEndpoint& local) {
  const std::optional<engine::EngineConfig> preset = engine::EngineConfig::preset(cfg.membership.preset);
  if (!preset) throw std::invalid_argument("membership.preset: unknown preset '" + cfg.membership.preset + "'");
  engine::EngineConfig e = *preset;
  e.name = cfg.node.name;
  e.addr = to_engine_address(endpoint_of(local));
  for (const auto& [k, v] : cfg.membership.tags) e.tags.push_back({k, v});
  e.allowed_name_prefixes = cfg.membership.allowed_name_prefixes;
  for (const auto& [k, v] : cfg.membership.required_tags) e.required_tags.push_back({k, v});
  e.admit_rate = cfg.membership.admit_rate;
  e.admit_burst = cfg.membership.admit_burst;
  // Seconds since the epoch: a restarted member always comes back with a
  // higher incarnation than any it used before, so its tombstone cannot hold it.
  e.initial_incarnation = unix_seconds();
  if (const std::string why = e.validate(); !why.empty()) throw std::invalid_argument("membership: " + why);
  return e;
}

EngineHost::Options engine_plan(const config::Config& cfg, engine::EngineConfig engine, const dp::LadderConfig& ladder,
                                dp::SnapshotExchange& snapshots) {
  EngineHost::Options o;
  o.engine = std::move(engine);
  o.shaper.bytes_per_sec = cfg.membership.egress_bytes_per_sec;
  o.shaper.burst_bytes = cfg.membership.egress_burst_bytes;
  o.shaper.queue_bytes = cfg.membership.egress_queue_bytes;
  for (const auto& seed : cfg.membership.seeds) {
    dp::LocalEndpoint ep;
    if (dp::parse_endpoint(seed.ip.c_str(), seed.port, &ep)) o.seeds.push_back(to_engine_address(endpoint_of(ep)));
  }
  o.cluster_id = ladder.cluster_id;
  o.snapshots = &snapshots;
  o.suite = config::resolve_suite(cfg);
  o.rng_seed = monotonic_ns() ^ (std::uint64_t{unix_seconds()} << 20);
  o.started_unix_ns = dp::unix_time_ns();
  return o;
}

ControlLoopOptions loop_plan(const config::Config& cfg, bool defer_until_inputs_idle) {
  ControlLoopOptions o;
  o.idle_backoff_us = cfg.dataplane.idle_backoff_us;
  o.defer_until_inputs_idle = defer_until_inputs_idle;
  o.leave_timeout_ns = std::uint64_t{cfg.membership.leave_timeout_ms} * 1'000'000ULL;
  return o;
}

}  // namespace gw::cp
