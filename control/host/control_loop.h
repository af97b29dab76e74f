// The control lcore's loop: drain the workers' rings, urgent class first, each
// class with a per-pass budget so none starves; hand what arrives to the
// membership engine (or only count it); run the engine's timers; and stop in
// order: leave first, then the workers, then drain what they left.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>

#include "base/clock.h"
#include "config/config.h"
#include "control/host/engine_host.h"
#include "control/host/message_stats.h"
#include "dataplane/api/handoff.h"

namespace gw::cp {

struct ControlLoopOptions {
  // Payloads taken per class per pass, highest class first: urgent, probe,
  // gossip, bulk. Urgent gets the most so leave/dead are never starved.
  std::array<std::uint32_t, crypto::kClassCount> class_budget = {256, 128, 64, 16};
  // Microseconds to sleep after an empty pass (0: busy poll).
  std::uint32_t idle_backoff_us = config::DataplaneConfig{}.idle_backoff_us;
  // Testing aid: start draining only once every input has gone idle, so ring
  // overflow is reproducible (each class ring keeps exactly its capacity).
  bool defer_until_inputs_idle = false;
  // Longest a graceful stop waits for the engine's leave broadcast.
  std::uint64_t leave_timeout_ns = std::uint64_t{config::MembershipConfig{}.leave_timeout_ms} * 1'000'000ULL;
};

// How the loop learns it should stop, and how it stops the workers.
struct StopControl {
  const std::atomic<bool>* requested = nullptr;  // set by SIGINT/SIGTERM
  std::function<bool()> inputs_idle;             // every worker idle past --idle-exit-ms
  std::atomic<bool>* workers_stop = nullptr;     // the loop sets it once leave is done
};

// Where a stop stands (for `gossipctl leave`, which waits for the leave).
enum class StopPhase : std::uint8_t {
  kRunning,
  kLeaving,        // the leave is going out
  kLeft,           // it went out (or there was no engine): the workers are being stopped
  kLeaveTimedOut,  // the leave timeout passed first: stopping anyway
};

class ControlLoop {
 public:
  // `host` may be null: messages are then only counted.
  ControlLoop(dp::HandoffSource& source, ControlLoopOptions options, EngineHost* host)
      : source_(source), options_(options), host_(host) {}

  // Control lcore only. Runs until a stop was requested (signal or idle
  // inputs), the leave went out (or timed out), every worker stopped and every
  // ring is empty: nothing a worker accepted is left uncounted.
  void run(const StopControl& stop);

  // Control lcore only. One pass over all rings; returns payloads processed.
  std::size_t poll_once(std::uint64_t now_ns);

  const ControlCounters& counters() const noexcept { return counters_; }
  // Control lcore (the housekeeping callback reads it).
  StopPhase stop_phase() const noexcept { return phase_; }

  // Runs once per pass on the control lcore, after the rings and the engine:
  // the control API, counter publication, snapshots. Must not block.
  void set_housekeeping(std::function<void(std::uint64_t now_ns)> f) { housekeeping_ = std::move(f); }

 private:
  dp::HandoffSource& source_;
  ControlLoopOptions options_;
  EngineHost* host_;
  ControlCounters counters_;
  StopPhase phase_ = StopPhase::kRunning;
  std::function<void(std::uint64_t)> housekeeping_;
};

}  // namespace gw::cp
