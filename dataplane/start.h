// The dataplane half of the composition root: the config turned into the
// port's plan and one ready-to-launch context per worker. Main lcore, after
// EAL started and before any worker runs.
#pragma once

#include <rte_ring.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "config/config.h"
#include "dataplane/classifier.h"
#include "dataplane/handoff_rings.h"
#include "dataplane/ladder.h"
#include "dataplane/port.h"
#include "dataplane/worker.h"

namespace gw::dp {

// One rx and one tx queue per worker, descriptors and pool sizes from
// dataplane.*.
PortPlan port_plan(const config::Config& cfg);

// What every worker is wired to: made by the composition root, shared.
class WallClockFollower;

struct WorkerWiring {
  const PortState* port = nullptr;
  LadderConfig ladder;  // keys come from `snapshots`
  SnapshotExchange* snapshots = nullptr;
  HandoffRings* rings = nullptr;
  rte_ring* tx_ring = nullptr;             // worker 0 transmits what the control lcore queues
  const Classifier* classifier = nullptr;  // null: classifier.enabled is false
  const std::atomic<bool>* stop = nullptr;
  const std::atomic<bool>* link_down = nullptr;
  std::uint64_t idle_exit_tsc = 0;  // 0: never report idle
  // Test aid (--freeze-clock): the workers' clock stands at this Unix second.
  std::uint32_t freeze_clock_s = 0;
  // The workers' clocks count from its reference and follow its steps
  // (started by the composition root before make_worker); null: each worker
  // reads the wall clock once at start and never follows it.
  const WallClockFollower* wall_clock = nullptr;
};

// Worker `q` (lcore cfg.lcores.workers[q], rx and tx queue q). Throws
// SetupError when its guard tables cannot be allocated (limits.replay_senders
// and limits.sources ask for more memory than EAL was given).
std::unique_ptr<WorkerContext> make_worker(const config::Config& cfg, std::size_t q, const WorkerWiring& wiring);

}  // namespace gw::dp
