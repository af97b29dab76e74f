// A single-producer, single-consumer ring of fixed-size slots that carries
// opened payloads from one worker to the control lcore by copy.
//
// Why copies and not packet buffers: a buffer handed to the control lcore is
// freed there, into that lcore's mempool cache, and the worker's driver then
// refills from the shared pool with buffers whose lines sit in the other
// core's cache. On the valid-traffic benchmark (one worker, 128 B and 512 B
// frames) copying the plaintext into a slot and freeing the buffer on the
// worker made the gateway 5-8 % faster (perf/RESULTS.md). The copy is at most
// limits.max_payload_bytes, beside an AEAD open of hundreds of ns.
//
// Each slot holds a PayloadSlot header and then the payload. The producer
// pushes any number of payloads and makes them visible with one publish()
// per burst; the consumer pops, reads, and releases the oldest popped slots,
// in order. Indices are free-running 32-bit counters (capacity <= 2^20), and
// each side keeps its own cached copy of the other's index so the shared
// ones are read only when the cached copy says full or empty.
//
// Pure: no DPDK, no locks, no allocation after construction.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dataplane/api/handoff.h"

namespace gw::dp {

// What precedes each payload in its slot.
struct PayloadSlot {
  Endpoint from;
  std::uint32_t key_id = 0;
  std::uint32_t len = 0;
};

class PayloadRing {
 public:
  // Payload bytes start here within a slot (after PayloadSlot; 16-aligned,
  // as the streaming stores need).
  static constexpr std::size_t kDataOffset = 32;
  static_assert(sizeof(PayloadSlot) <= kDataOffset);
  // push() writes the slot header as two 16-byte vectors in this layout.
  static_assert(kDataOffset == 32 && offsetof(PayloadSlot, from) == 0 && offsetof(Endpoint, ip) == 0 &&
                offsetof(Endpoint, ip_len) == 16 && offsetof(Endpoint, port) == 18 && sizeof(Endpoint) == 20 &&
                offsetof(PayloadSlot, key_id) == 20 && offsetof(PayloadSlot, len) == 24);
  static constexpr std::uint32_t kMaxCapacity = 1U << 20;
  // Bytes past the payload that push() may read.
  static constexpr std::size_t kReadPast = 15;

  // `capacity` slots (a power of two, 1..kMaxCapacity), each holding up to
  // `max_payload` bytes (>= 1). Reserves and touches all the memory now, so
  // the hot path never page-faults. Throws std::invalid_argument for bad
  // sizes and std::bad_alloc when the memory is not there.
  PayloadRing(std::uint32_t capacity, std::uint32_t max_payload);
  ~PayloadRing();
  PayloadRing(const PayloadRing&) = delete;
  PayloadRing& operator=(const PayloadRing&) = delete;

  std::uint32_t capacity() const noexcept { return mask_ + 1; }
  std::uint32_t max_payload() const noexcept { return max_payload_; }
  // Bytes reserved for the slots.
  std::size_t bytes() const noexcept { return bytes_; }

  // Producer. Copies `len` bytes into the next free slot. False, with
  // nothing written, when the ring is full or `len` exceeds max_payload().
  // Not visible to the consumer until publish(). `data` must stay readable
  // kReadPast bytes past `len` (the copy moves whole 16-byte pieces; in a
  // frame, the AEAD tag follows the plaintext); the slot's bytes past `len`
  // are unspecified.
  bool push(const std::uint8_t* data, std::uint32_t len, const Endpoint& from, std::uint32_t key_id) noexcept {
    if (len > max_payload_) return false;
    if (prod_.head - prod_.tail_seen > mask_) {
      prod_.tail_seen = tail_.load(std::memory_order_acquire);
      if (prod_.head - prod_.tail_seen > mask_) return false;
    }
    std::uint8_t* s = slot(prod_.head);
#if defined(__x86_64__)
    // Streaming stores: the consumer's core read this slot last, and a normal
    // store would first have to fetch the line back from it (measured: the
    // worker stalled on those misses). 16 bytes at a time (slots are 64-byte
    // aligned, the payload 16-byte), the last piece padded with zeros.
    // The PayloadSlot is assembled in registers: built in memory and loaded
    // back as two vectors, it stalled on store forwarding.
    std::uint32_t ends = 0;  // Endpoint's ip_len, padding byte and port
    std::memcpy(&ends, reinterpret_cast<const std::uint8_t*>(&from) + offsetof(Endpoint, ip_len), sizeof ends);
    auto* out = reinterpret_cast<__m128i*>(s);
    _mm_stream_si128(out, _mm_loadu_si128(reinterpret_cast<const __m128i*>(from.ip.data())));
    _mm_stream_si128(out + 1, _mm_set_epi32(0, static_cast<int>(len), static_cast<int>(key_id), static_cast<int>(ends)));
    out += kDataOffset / 16;
    // Whole 16-byte pieces, the last one running past `len` (kReadPast).
    const std::uint32_t pieces = (len + 15) / 16;
    for (std::uint32_t i = 0; i < pieces; ++i) {
      _mm_stream_si128(out + i, _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + std::size_t{i} * 16)));
    }
    // Zeros to the end of the last cache line: a write-combining buffer
    // that holds a partial line is written back as a partial write.
    for (std::size_t i = kDataOffset / 16 + pieces; i % 4 != 0; ++i) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(s) + i, _mm_setzero_si128());
    }
#else
    PayloadSlot h;
    h.from = from;
    h.key_id = key_id;
    h.len = len;
    std::memcpy(s, &h, sizeof h);
    std::memcpy(s + kDataOffset, data, len);
#endif
    ++prod_.head;
    return true;
  }
  // Producer. Makes every payload pushed so far visible: one release store.
  void publish() noexcept {
#if defined(__x86_64__)
    _mm_sfence();  // streaming stores are not ordered by the release store
#endif
    head_.store(prod_.head, std::memory_order_release);
  }

  // Consumer. Up to `max` published payloads, oldest first; each Handoff
  // points into its slot, valid until release(). The token is this ring.
  std::size_t pop(Handoff* out, std::size_t max) noexcept {
    std::uint32_t ready = cons_.head_seen - cons_.next;
    if (ready < max) {
      cons_.head_seen = head_.load(std::memory_order_acquire);
      ready = cons_.head_seen - cons_.next;
    }
    const std::size_t n = ready < max ? ready : max;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint8_t* s = slot(cons_.next + static_cast<std::uint32_t>(i));
      PayloadSlot h;
      std::memcpy(&h, s, sizeof h);
      out[i].data = s + kDataOffset;
      out[i].len = h.len;
      out[i].from = h.from;
      out[i].key_id = h.key_id;
      out[i].token = this;
    }
    cons_.next += static_cast<std::uint32_t>(n);
    return n;
  }
  // Consumer. Frees the `n` oldest popped slots for the producer.
  void release(std::size_t n) noexcept {
    cons_.tail += static_cast<std::uint32_t>(n);
    tail_.store(cons_.tail, std::memory_order_release);
  }
  // Consumer. Published payloads not yet released (popped ones included).
  std::size_t depth() const noexcept { return head_.load(std::memory_order_acquire) - cons_.tail; }

 private:
  std::uint8_t* slot(std::uint32_t index) const noexcept {
    return base_ + static_cast<std::size_t>(index & mask_) * stride_;
  }

  // Fixed at construction; read by both sides.
  std::uint8_t* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t stride_ = 0;
  std::uint32_t mask_ = 0;
  std::uint32_t max_payload_ = 0;
  // Shared indices, each on its own cache line, written by one side.
  alignas(64) std::atomic<std::uint32_t> head_{0};  // producer: pushed and published
  alignas(64) std::atomic<std::uint32_t> tail_{0};  // consumer: released
  // Each side's private state.
  alignas(64) struct {
    std::uint32_t head = 0;       // next slot to fill
    std::uint32_t tail_seen = 0;  // last tail_ read
  } prod_;
  alignas(64) struct {
    std::uint32_t next = 0;       // next slot to pop
    std::uint32_t tail = 0;       // next slot to release
    std::uint32_t head_seen = 0;  // last head_ read
  } cons_;
};

}  // namespace gw::dp
