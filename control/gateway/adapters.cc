#include "control/gateway/adapters.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "base/clock.h"
#include "config/keys.h"

namespace gw::cp {

// Every configured seed is asked every join round, beside the addresses
// joined by hand: the loader's bound leaves them room in what the engine asks.
static_assert(config::MembershipConfig::kMaxSeeds + EngineHost::kMaxManualSeeds <= engine::Engine::kMaxSeeds,
              "membership.seeds allows more seeds than a join round asks");

EngineHost::Options engine_plan(const config::Config& cfg, engine::EngineConfig engine, const dp::LadderConfig& ladder,
                                dp::SnapshotExchange& snapshots) {
  EngineHost::Options o;
  o.engine = std::move(engine);
  o.shaper.bytes_per_sec = cfg.membership.egress_bytes_per_sec;
  o.shaper.burst_bytes = cfg.membership.egress_burst_bytes;
  o.shaper.queue_bytes = cfg.membership.egress_queue_bytes;
  o.shaper.max_age_ns = std::uint64_t{cfg.membership.egress_max_age_ms} * 1'000'000ULL;
  o.seeds = cfg.membership.seeds;  // parsed by the loader (base/endpoint.h)
  o.cluster_id = ladder.cluster_id;
  o.snapshots = &snapshots;
  o.suite = config::resolve_suite(cfg);
  o.rng_seed = base::monotonic_ns() ^ (std::uint64_t{base::unix_seconds()} << 20);
  o.started_unix_ns = base::unix_time_ns();
  o.operator_key = config::load_operator_key(cfg);  // checked at start-up: cannot throw here
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
