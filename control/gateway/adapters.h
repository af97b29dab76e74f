// The control half of the composition root: the config turned into what each
// control-lcore consumer takes, one adapter per consumer. (The dataplane's
// are in dataplane/setup.h and dataplane/start.h.)
#pragma once

#include "config/config.h"
#include "control/engine/config.h"
#include "control/host/control_loop.h"
#include "control/host/engine_host.h"
#include "dataplane/api/snapshot.h"
#include "dataplane/ladder.h"

namespace gw::cp {

// Our address as the engine and the dataplane's endpoints spell it.
dp::Endpoint endpoint_of(const dp::LocalEndpoint& local);

// membership.preset with node.* and membership.* over it, checked with
// EngineConfig::validate(): throws std::invalid_argument("membership: <field>:
// <why>") for a configuration the engine cannot run. Before EAL starts.
engine::EngineConfig engine_config(const config::Config& cfg, const dp::LocalEndpoint& local);

// The engine host: `engine`, the seeds, the egress shaper, and the keys of
// `snapshots` (so a rotation reaches the workers and the host at once).
EngineHost::Options engine_plan(const config::Config& cfg, engine::EngineConfig engine, const dp::LadderConfig& ladder,
                                dp::SnapshotExchange& snapshots);

// The control loop: its idle back-off (dataplane.idle_backoff_us) and the
// leave's bound (membership.leave_timeout_ms).
ControlLoopOptions loop_plan(const config::Config& cfg, bool defer_until_inputs_idle);

}  // namespace gw::cp
