// The contract between dataplane workers and the control lcore: opened gossip
// payloads, by priority class, through single-producer/single-consumer rings.
// No DPDK types appear here, so control/ includes only this.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "crypto/wire_header.h"

namespace gw::dp {

// A UDP endpoint as the control plane sees it. `ip_len` is 4 or 16.
struct Endpoint {
  std::array<std::uint8_t, 16> ip{};
  std::uint8_t ip_len = 0;
  std::uint16_t port = 0;
};

// Which datagram an opened payload was: its sender's nonce (key id aside)
// and header timestamp, for the control lcore's once-only check.
struct ReplayStamp {
  std::uint64_t epoch = 0;
  std::uint32_t counter = 0;
  std::uint32_t timestamp = 0;
};

// The control lcore's once-only check (issue 17): every worker keeps its own
// replay windows, so a copy of a datagram that reached another worker (RSS
// spreads a spoofed source port anywhere) is caught here. The consumer
// skips refused payloads (and still releases them).
enum class Once : std::uint8_t {
  kFirst,      // not seen on any worker before: serve it
  kReplay,     // already accepted by another worker (or older than its window)
  kTableFull,  // a new sender while limits.replay_senders windows are live
};

// One opened datagram: `data` points at the plaintext protobuf Compound, in a
// ring slot that stays valid until release(). `from` is the sender's
// address as the worker saw it; the payload, not the address, is authenticated.
struct Handoff {
  const std::uint8_t* data = nullptr;
  std::uint32_t len = 0;
  Endpoint from;
  std::uint32_t key_id = 0;  // the key id that opened it (authenticated)
  ReplayStamp stamp;         // authenticated (the header is the AEAD's associated data)
  Once once = Once::kFirst;  // set by the source's once-only check
  // The header's priority class (authenticated): the ring it came through.
  crypto::PriorityClass cls = crypto::PriorityClass::kBulk;
  void* token = nullptr;  // the ring it came from; opaque to the control plane
};

// The control lcore's view of all worker rings.
class HandoffSource {
 public:
  virtual ~HandoffSource() = default;
  // Control lcore only. Number of workers feeding this source.
  virtual std::size_t worker_count() const noexcept = 0;
  // Control lcore only. Dequeues up to `max` payloads of class `cls` from
  // worker `worker`; returns how many were written to `out`. Each has its
  // `once` verdict; the caller serves only Once::kFirst and releases all.
  virtual std::size_t dequeue(std::size_t worker, crypto::PriorityClass cls, Handoff* out,
                              std::size_t max) noexcept = 0;
  // Control lcore only. Payloads waiting in worker `worker`'s ring of class `cls`.
  virtual std::size_t depth(std::size_t worker, crypto::PriorityClass cls) const noexcept = 0;
  // Control lcore only. Gives the slots of `n` handoffs back to the workers;
  // items of one ring must be released in the order they were dequeued.
  virtual void release(Handoff* items, std::size_t n) noexcept = 0;
  // Control lcore only. True once every worker has stopped producing.
  virtual bool producers_done() const noexcept = 0;
};

// The control plane's way out: sealed datagrams to send. The dataplane adds
// Ethernet, IP and UDP headers and transmits them from a worker's queue.
class DatagramSink {
 public:
  virtual ~DatagramSink() = default;
  // Control lcore only. Queues one sealed datagram (gossipgw header included)
  // for `to`. Returns false, and counts the drop, when no buffer or ring slot
  // is free or the datagram is too large for one frame; never blocks.
  virtual bool send(const Endpoint& to, crypto::PriorityClass cls, const std::uint8_t* datagram,
                    std::size_t len) noexcept = 0;
};

}  // namespace gw::dp
