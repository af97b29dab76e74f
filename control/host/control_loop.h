// The control lcore's loop: drain the workers' rings, urgent class first, each
// class with a per-pass budget so none starves, and decode what arrives.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "control/host/message_stats.h"
#include "dataplane/api/handoff.h"

namespace gw::cp {

struct ControlLoopOptions {
  // Payloads taken per class per pass, highest class first: urgent, probe,
  // gossip, bulk. Urgent gets the most so leave/dead are never starved.
  std::array<std::uint32_t, crypto::kClassCount> class_budget = {256, 128, 64, 16};
  // Microseconds to sleep after an empty pass (0: busy poll).
  std::uint32_t idle_backoff_us = 0;
  // Testing aid: start draining only once every producer is done, so ring
  // overflow is reproducible (each class ring keeps exactly its capacity).
  bool defer_until_producers_done = false;
};

class ControlLoop {
 public:
  ControlLoop(dp::HandoffSource& source, ControlLoopOptions options)
      : source_(source), options_(options) {}

  // Control lcore only. Runs until every producer is done and every ring is
  // empty: nothing a worker accepted is left uncounted.
  void run();

  // Control lcore only. One pass over all rings; returns payloads processed.
  std::size_t poll_once();

  const ControlCounters& counters() const noexcept { return counters_; }

 private:
  dp::HandoffSource& source_;
  ControlLoopOptions options_;
  ControlCounters counters_;
};

}  // namespace gw::cp
