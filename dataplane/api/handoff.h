// The contract between dataplane workers and the control lcore: opened gossip
// payloads, by priority class, through single-producer/single-consumer rings.
// No DPDK types appear here, so control/ includes only this.
#pragma once

#include <cstddef>
#include <cstdint>

#include "crypto/wire_header.h"

namespace gw::dp {

// One opened datagram: `data` points at the plaintext protobuf Compound inside
// a packet buffer that stays valid until release().
struct Handoff {
  const std::uint8_t* data = nullptr;
  std::uint32_t len = 0;
  void* token = nullptr;  // the packet buffer; opaque to the control plane
};

// The control lcore's view of all worker rings.
class HandoffSource {
 public:
  virtual ~HandoffSource() = default;
  // Control lcore only. Number of workers feeding this source.
  virtual std::size_t worker_count() const noexcept = 0;
  // Control lcore only. Dequeues up to `max` payloads of class `cls` from
  // worker `worker`; returns how many were written to `out`.
  virtual std::size_t dequeue(std::size_t worker, crypto::PriorityClass cls, Handoff* out,
                              std::size_t max) noexcept = 0;
  // Control lcore only. Returns the buffers of `n` handoffs to their pool.
  virtual void release(Handoff* items, std::size_t n) noexcept = 0;
  // Control lcore only. True once every worker has stopped producing.
  virtual bool producers_done() const noexcept = 0;
};

}  // namespace gw::dp
