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

  std::size_t worker_count() const noexcept override { return rings_.size(); }
  std::size_t dequeue(std::size_t worker, crypto::PriorityClass cls, Handoff* out,
                      std::size_t max) noexcept override {
    return ring(worker, cls)->pop(out, max);
  }
  std::size_t depth(std::size_t worker, crypto::PriorityClass cls) const noexcept override {
    return ring(worker, cls)->depth();
  }
  // Items must be released in the order they were dequeued from each ring.
  void release(Handoff* items, std::size_t n) noexcept override;
  bool producers_done() const noexcept override;

 private:
  std::vector<std::array<std::unique_ptr<PayloadRing>, crypto::kClassCount>> rings_;
  std::vector<const std::atomic<bool>*> done_;
};

}  // namespace gw::dp
