// Runs the configured event handler for member events (docs/events.md).
//
// Usage, on the control lcore (the lead wires this into the control loop):
//
//   events::EventRunner runner(config.events, config.node.name, config.cluster.name, non_lcore_cpus);
//   for (const engine::MemberEvent& e : engine.take_events()) {
//     const engine::Member* m = engine.member(e.node);   // nullptr once expired
//     runner.submit(e, m != nullptr ? std::span(m, 1) : std::span<const engine::Member>());
//   }
//   ...                                 // counters() for stats, any thread
//   runner.stop();                      // on shutdown; the destructor does it too
//
// submit() only formats and enqueues (a mutex held for a push, never across a
// system call) and never waits for a handler: spawning, feeding stdin,
// collecting output, timeouts and reaping all happen on the runner's own
// std::thread. With an empty `handler` the runner starts no thread, and
// submit() returns false and counts nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "control/engine/engine.h"
#include "control/engine/member_table.h"

namespace gw::cp::events {

struct EventCounters {
  std::uint64_t submitted = 0;           // submit() calls accepted into the queue
  std::uint64_t coalesced = 0;           // events merged into another event's invocation
  std::uint64_t dropped_queue_full = 0;  // submit() calls refused: queue at events.queue
  std::uint64_t dropped_stopped = 0;     // refused after stop(), or queued and never run
  std::uint64_t started = 0;             // handler processes spawned
  std::uint64_t succeeded = 0;           // exited 0
  std::uint64_t failed_exit = 0;         // exited non-zero, or died of a signal we did not send
  std::uint64_t timed_out = 0;           // ran past events.timeout_ms and was killed
  std::uint64_t spawn_errors = 0;        // pipe or posix_spawn failed (e.g. not executable)
};

class EventRunner {
 public:
  // Bytes of stdout and of stderr kept per invocation for the log; more is
  // read and discarded so a chatty handler never blocks on a full pipe.
  static constexpr std::size_t kMaxOutputBytes = 4096;
  // After SIGTERM on timeout, how long before SIGKILL.
  static constexpr std::uint32_t kKillGraceMs = 1000;
  // Most events merged into one invocation, so a burst cannot build an
  // unbounded stdin.
  static constexpr std::size_t kMaxBatchEvents = 1024;

  // `node` and `cluster` become GOSSIPGW_NODE and GOSSIPGW_CLUSTER. The
  // process environment is copied here (call from the thread that owns the
  // environment, before any handler can run).
  //
  // `cpus`: the CPUs the runner thread and the handlers it spawns may run on.
  // Empty: those of the constructing thread, which after rte_eal_init() is
  // the main lcore's single CPU; so pass the non-lcore CPUs (DPDK's control
  // thread set) there, or handlers compete with a busy-polling lcore.
  EventRunner(config::EventsConfig config, std::string node, std::string cluster, std::vector<int> cpus = {});
  ~EventRunner();
  EventRunner(const EventRunner&) = delete;
  EventRunner& operator=(const EventRunner&) = delete;

  // Control lcore. Queues `event` for the handler; never blocks on a handler.
  // `affected` are the member records to report (their state, address, tags);
  // empty: the event's own fields, with the state its kind implies. False
  // when the event was dropped (queue full, stopped, or no handler).
  bool submit(const engine::MemberEvent& event, std::span<const engine::Member> affected = {});

  // Any thread. A consistent-enough snapshot (each counter read atomically).
  EventCounters counters() const;
  // Any thread but the runner's. Blocks until `pred` holds for the counters
  // or `limit` passes (woken by every counter change, never by polling);
  // true if it holds. For callers that must know handlers have finished.
  bool wait_for(const std::function<bool(const EventCounters&)>& pred, std::chrono::milliseconds limit) const;
  // Any thread. Events waiting, and handlers running now.
  std::size_t queued() const;
  std::size_t running() const { return running_count_.load(std::memory_order_relaxed); }

  // Any thread but the runner's. Starts no new handler, drops what is still
  // queued (dropped_stopped), waits for running handlers (each at most its
  // timeout plus kKillGraceMs) and joins the thread. Idempotent.
  void stop();

 private:
  struct Queued {
    engine::EventKind kind = engine::EventKind::kJoin;
    std::uint64_t enqueued_ns = 0;  // steady clock
    std::vector<std::string> names;
    std::vector<std::string> lines;  // one per name, newline included
  };
  struct Invocation;

  void run();
  bool take_batch(Queued& out, std::uint64_t now_ns);  // with mu_ held
  void start(Queued batch, std::vector<Invocation>& running);
  // Counts and wakes wait_for(): taking progress_mu_ between the change and
  // the notify means a waiter that just checked cannot miss it.
  void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) {
    c.fetch_add(n, std::memory_order_relaxed);
    { std::lock_guard<std::mutex> lock(progress_mu_); }
    progress_cv_.notify_all();
  }

  const config::EventsConfig config_;
  const std::string node_;
  const std::string cluster_;
  std::vector<std::string> env_;  // KEY=VALUE, ours last
  std::vector<std::string> argv_;
  std::vector<int> cpus_;

  mutable std::mutex mu_;
  std::deque<Queued> queue_;  // guarded by mu_; one entry per accepted submit()
  bool stopping_ = false;     // guarded by mu_
  int wake_fd_ = -1;          // eventfd: submit() and stop() wake the thread
  std::atomic<std::size_t> running_count_{0};
  mutable std::mutex progress_mu_;  // wait_for() and bump() only
  mutable std::condition_variable progress_cv_;
  std::thread thread_;

  std::atomic<std::uint64_t> submitted_{0};
  std::atomic<std::uint64_t> coalesced_{0};
  std::atomic<std::uint64_t> dropped_queue_full_{0};
  std::atomic<std::uint64_t> dropped_stopped_{0};
  std::atomic<std::uint64_t> started_{0};
  std::atomic<std::uint64_t> succeeded_{0};
  std::atomic<std::uint64_t> failed_exit_{0};
  std::atomic<std::uint64_t> timed_out_{0};
  std::atomic<std::uint64_t> spawn_errors_{0};
};

}  // namespace gw::cp::events
