// The control half of the composition root: the config turned into what each
// control-lcore consumer takes, one adapter per consumer. (The dataplane's
// are in dataplane/setup.h and dataplane/start.h.)
#pragma once

#include "config/config.h"
#include "control/engine/config.h"
#include "control/gateway/engine_config.h"
#include "control/host/control_loop.h"
#include "control/host/engine_host.h"
#include "dataplane/api/snapshot.h"
#include "dataplane/ladder.h"

namespace gw::cp {

// engine_config(): control/gateway/engine_config.h.

// The engine host: `engine`, the seeds, the egress shaper, and the keys of
// `snapshots` (so a rotation reaches the workers and the host at once).
EngineHost::Options engine_plan(const config::Config& cfg, engine::EngineConfig engine, const dp::LadderConfig& ladder,
                                dp::SnapshotExchange& snapshots);

// The control loop: its idle back-off (dataplane.idle_backoff_us) and the
// leave's bound (membership.leave_timeout_ms).
ControlLoopOptions loop_plan(const config::Config& cfg, bool defer_until_inputs_idle);

}  // namespace gw::cp
