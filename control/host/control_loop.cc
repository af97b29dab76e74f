#include "control/host/control_loop.h"

#include <chrono>
#include <thread>

namespace gw::cp {

namespace {
constexpr std::size_t kChunk = 64;
}  // namespace

std::size_t ControlLoop::poll_once(std::uint64_t now_ns) {
  std::array<dp::Handoff, kChunk> items;
  std::size_t total = 0;
  for (std::size_t c = 0; c < crypto::kClassCount; ++c) {
    const auto cls = static_cast<crypto::PriorityClass>(c);
    for (std::size_t w = 0; w < source_.worker_count(); ++w) {
      const std::uint64_t depth = source_.depth(w, cls);
      if (depth > counters_.ring_depth_max[c]) counters_.ring_depth_max[c] = depth;
      std::size_t budget = options_.class_budget[c];
      while (budget > 0) {
        const std::size_t got = source_.dequeue(w, cls, items.data(), std::min(budget, kChunk));
        if (got == 0) break;
        for (std::size_t i = 0; i < got; ++i) {
          // Refused by the once-only check (issue 17): another worker
          // already served this datagram, or no window was free for it.
          if (items[i].once != dp::Once::kFirst) {
            ++counters_.once_refused[static_cast<std::size_t>(items[i].once)];
            continue;
          }
          if (host_ != nullptr) {
            host_->on_payload(items[i], now_ns, counters_);
          } else {
            count_messages(items[i].data, items[i].len, counters_);
          }
        }
        source_.release(items.data(), got);
        counters_.handoffs_by_class[c] += got;
        budget -= got;
        total += got;
      }
    }
  }
  return total;
}

void ControlLoop::run(const StopControl& stop) {
  while (options_.defer_until_inputs_idle && !stop.inputs_idle() && !stop.requested->load(std::memory_order_relaxed)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (host_ != nullptr) host_->start(base::monotonic_ns(), base::unix_seconds());

  bool stopping = false;
  std::uint64_t stop_deadline = 0;
  for (;;) {
    // Read "done" before the pass: if the producers had finished and the pass
    // then found nothing, nothing can arrive later.
    const bool done = source_.producers_done();
    const std::uint64_t now = base::monotonic_ns();
    const std::size_t n = poll_once(now);
    if (host_ != nullptr) host_->poll(now, base::unix_seconds());
    if (housekeeping_) housekeeping_(now);

    if (!stopping && (stop.requested->load(std::memory_order_relaxed) || stop.inputs_idle())) {
      // Leave before the workers stop: they carry the leave out.
      stopping = true;
      phase_ = StopPhase::kLeaving;
      stop_deadline = now + options_.leave_timeout_ns;
      if (host_ != nullptr) host_->begin_leave(now, base::unix_seconds());
    }
    if (stopping && !stop.workers_stop->load(std::memory_order_relaxed) &&
        (host_ == nullptr || host_->leave_done() || now >= stop_deadline)) {
      phase_ = host_ == nullptr || host_->leave_done() ? StopPhase::kLeft : StopPhase::kLeaveTimedOut;
      stop.workers_stop->store(true, std::memory_order_release);
    }

    if (n != 0) continue;
    if (done) return;
    if (options_.idle_backoff_us != 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(options_.idle_backoff_us));
    }
  }
}

}  // namespace gw::cp
