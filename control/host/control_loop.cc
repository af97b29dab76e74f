#include "control/host/control_loop.h"

#include <google/protobuf/arena.h>

#include <chrono>
#include <thread>

namespace gw::cp {

namespace {
constexpr std::size_t kChunk = 64;
}  // namespace

std::size_t ControlLoop::poll_once() {
  std::array<dp::Handoff, kChunk> items;
  google::protobuf::Arena arena;
  std::size_t total = 0;
  for (std::size_t c = 0; c < crypto::kClassCount; ++c) {
    const auto cls = static_cast<crypto::PriorityClass>(c);
    for (std::size_t w = 0; w < source_.worker_count(); ++w) {
      std::size_t budget = options_.class_budget[c];
      while (budget > 0) {
        const std::size_t got = source_.dequeue(w, cls, items.data(), std::min(budget, kChunk));
        if (got == 0) break;
        for (std::size_t i = 0; i < got; ++i) count_messages(items[i].data, items[i].len, arena, counters_);
        source_.release(items.data(), got);
        counters_.handoffs_by_class[c] += got;
        budget -= got;
        total += got;
      }
    }
  }
  return total;
}

void ControlLoop::run() {
  while (options_.defer_until_producers_done && !source_.producers_done()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (;;) {
    // Read "done" before the pass: if the producers had finished and the pass
    // then found nothing, nothing can arrive later.
    const bool done = source_.producers_done();
    if (poll_once() != 0) continue;
    if (done) return;
    if (options_.idle_backoff_us != 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(options_.idle_backoff_us));
    }
  }
}

}  // namespace gw::cp
