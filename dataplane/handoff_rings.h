// The dataplane side of dataplane/api/handoff.h: one PayloadRing per worker
// and priority class, single producer (the worker) and single consumer (the
// control lcore). Workers copy accepted plaintexts into the rings and keep
// their packet buffers (payload_ring.h says why).
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <vector>

#include "crypto/wire_header.h"
#include "dataplane/api/handoff.h"
#include "dataplane/payload_ring.h"
#include "dataplane/replay.h"

namespace gw::dp {

class HandoffRings final : public HandoffSource {
 public:
  // Creates `workers` x 4 rings that each hold `size` payloads of up to
  // `max_payload` bytes; throws SetupError naming rings.size when the memory
  // is not there.
  HandoffRings(std::size_t workers, std::uint32_t size, std::uint32_t max_payload);

  PayloadRing* ring(std::size_t worker, crypto::PriorityClass cls) const noexcept {
    return rings_[worker][static_cast<std::size_t>(cls)].get();
  }
  // Main lcore, before launch: the workers whose `done` flags end the stream.
  void watch(std::vector<const std::atomic<bool>*> done_flags) { done_ = std::move(done_flags); }
  // Bytes reserved for all rings.
  std::size_t bytes() const noexcept;
  // Main lcore, before launch: turns on the once-only check over all workers
  // (a replay table of `senders` windows per class, limits.replay_senders,
  // aged by `window_s`). Without it every payload is Once::kFirst. Allocates.
  // `per_source`: limits.replay_senders_per_source (per class here too).
  void check_once(std::size_t senders, std::uint32_t window_s, std::uint64_t seed, std::uint32_t per_source = 0);
  // Control lcore: one ageing step of the once-only table at Unix time `now_s`.
  void age_once(std::uint32_t now_s) noexcept {
    if (once_) once_->age(now_s, 64);
  }

  std::size_t worker_count() const noexcept override { return rings_.size(); }
  std::size_t dequeue(std::size_t worker, crypto::PriorityClass cls, Handoff* out, std::size_t max) noexcept override {
    const std::size_t n = ring(worker, cls)->pop(out, max);
    for (std::size_t i = 0; i < n; ++i) out[i].cls = cls;
    if (once_) {
      for (std::size_t i = 0; i < n; ++i) check(out[i], cls);
    }
    return n;
  }
  std::size_t depth(std::size_t worker, crypto::PriorityClass cls) const noexcept override {
    return ring(worker, cls)->depth();
  }
  // Items must be released in the order they were dequeued from each ring.
  void release(Handoff* items, std::size_t n) noexcept override;
  bool producers_done() const noexcept override;

 private:
  // The authoritative commit: a worker's window saw only what reached that
  // worker; this one sees every accepted payload, whichever worker it came
  // through. One window per sender and class: the control lcore drains the
  // classes in priority order, so across classes a sender's counters arrive
  // far out of order, within a class (one FIFO ring per worker) in order. A
  // datagram's class is in its authenticated header, so every copy of it
  // meets the same window. (A lane whose key id collides with another key's
  // shares its window: that can refuse a datagram, never accept one twice.)
  void check(Handoff& h, crypto::PriorityClass cls) noexcept {
    const ReplayKey k{h.key_id ^ (static_cast<std::uint32_t>(cls) * 0x9E3779B9u), h.stamp.epoch};
    const SourceAddress src = SourceAddress::of(h.from);
    switch (once_->check(k, h.stamp.counter, h.stamp.timestamp, &src)) {
      case ReplayCheck::kFresh:
        (void)once_->commit(k, h.stamp.counter, h.stamp.timestamp, &src);
        break;
      case ReplayCheck::kReplay:
        h.once = Once::kReplay;
        break;
      case ReplayCheck::kNoRoom:
        h.once = Once::kTableFull;
        break;
    }
  }

  std::vector<std::array<std::unique_ptr<PayloadRing>, crypto::kClassCount>> rings_;
  std::vector<const std::atomic<bool>*> done_;
  std::unique_ptr<ReplayTable> once_;
};

}  // namespace gw::dp
