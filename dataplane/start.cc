#include "dataplane/start.h"

#include <rte_cycles.h>

#include <exception>
#include <string>

#include "base/clock.h"
#include "dataplane/guard.h"
#include "dataplane/hash.h"
#include "dataplane/setup.h"

namespace gw::dp {

PortPlan port_plan(const config::Config& cfg) {
  PortPlan plan;
  plan.port_id = cfg.dataplane.port_id;
  plan.queues = static_cast<std::uint16_t>(cfg.lcores.workers.size());
  plan.rx_descriptors = cfg.dataplane.rx_descriptors;
  plan.tx_descriptors = cfg.dataplane.tx_descriptors;
  plan.mbufs_per_queue = cfg.dataplane.mbufs;
  return plan;
}

std::unique_ptr<WorkerContext> make_worker(const config::Config& cfg, std::size_t q, const WorkerWiring& wiring) {
  auto w = std::make_unique<WorkerContext>();
  w->lcore = cfg.lcores.workers[q];
  w->port = wiring.port->port_id;
  w->queue = static_cast<std::uint16_t>(q);
  w->burst = cfg.dataplane.burst;
  w->idle_backoff_us = cfg.dataplane.idle_backoff_us;
  w->idle_exit_tsc = wiring.idle_exit_tsc;
  w->ladder = wiring.ladder;
  w->snapshots = wiring.snapshots;
  w->worker_index = q;
  w->ladder.keys = &wiring.snapshots->current().keys;
  for (std::size_t c = 0; c < crypto::kClassCount; ++c) {
    w->rings[c] = wiring.rings->ring(q, static_cast<crypto::PriorityClass>(c));
  }
  w->stop = wiring.stop;
  w->link_down = wiring.link_down;
  w->tx.src_mac = wiring.port->mac;  // every worker answers ARP (dataplane/arp.h)
  w->tx.local = wiring.ladder.local;
  if (q == 0) w->tx.ring = wiring.tx_ring;
  w->tx.neighbors.set_hash_seed(random_table_seed());
  setup_neighbors(w->tx.neighbors, cfg);  // validated by the loader: does not throw
  try {
    setup_guard(w->guard, cfg, wiring.classifier, random_table_seed());
  } catch (const std::exception& e) {
    throw SetupError("worker " + std::to_string(q) + ": cannot allocate its guard tables: " + e.what());
  }
  w->guard.clock.tsc_hz = rte_get_tsc_hz();
  w->guard.clock.tsc0 = rte_rdtsc();
  w->guard.clock.unix_ns0 =
      wiring.freeze_clock_s != 0 ? std::uint64_t{wiring.freeze_clock_s} * 1'000'000'000ULL : base::unix_time_ns();
  w->guard.clock.frozen = wiring.freeze_clock_s != 0;
  if (wiring.wall_clock != nullptr && wiring.freeze_clock_s == 0) {
    // One reference for every worker, so one published step fits them all.
    w->guard.clock.tsc_hz = wiring.wall_clock->tsc_hz();
    w->guard.clock.tsc0 = wiring.wall_clock->tsc0();
    w->guard.clock.unix_ns0 = wiring.wall_clock->unix_ns0();
    w->guard.clock.step = wiring.wall_clock->step();
  }
  return w;
}

}  // namespace gw::dp
