// The DPDK side of dataplane/api/handoff.h: rte_rings of mbufs, one per
// worker and priority class, single producer (the worker) and single consumer
// (the control lcore).
#pragma once

#include <rte_ring.h>

#include <array>
#include <atomic>
#include <vector>

#include "crypto/wire_header.h"
#include "dataplane/api/handoff.h"

namespace gw::dp {

struct WorkerContext;

class HandoffRings final : public HandoffSource {
 public:
  // Creates `workers` x 4 rings of exactly `size` entries; throws SetupError.
  HandoffRings(std::size_t workers, std::uint32_t size, int socket);
  ~HandoffRings() override;
  HandoffRings(const HandoffRings&) = delete;
  HandoffRings& operator=(const HandoffRings&) = delete;

  rte_ring* ring(std::size_t worker, crypto::PriorityClass cls) const noexcept {
    return rings_[worker][static_cast<std::size_t>(cls)];
  }
  // Main lcore, before launch: the workers whose `done` flags end the stream.
  void watch(std::vector<const std::atomic<bool>*> done_flags) { done_ = std::move(done_flags); }

  std::size_t worker_count() const noexcept override { return rings_.size(); }
  std::size_t dequeue(std::size_t worker, crypto::PriorityClass cls, Handoff* out,
                      std::size_t max) noexcept override;
  std::size_t depth(std::size_t worker, crypto::PriorityClass cls) const noexcept override {
    return rte_ring_count(ring(worker, cls));
  }
  void release(Handoff* items, std::size_t n) noexcept override;
  bool producers_done() const noexcept override;

 private:
  std::vector<std::array<rte_ring*, crypto::kClassCount>> rings_;
  std::vector<const std::atomic<bool>*> done_;
};

}  // namespace gw::dp
