// A single-producer, single-consumer ring that carries opened payloads from
// one worker to the control lcore by copy.
//
// Why copies and not packet buffers: a buffer handed to the control lcore is
// freed there, into that lcore's mempool cache, and the worker's driver then
// refills from the shared pool with buffers whose lines sit in the other
// core's cache. On the valid-traffic benchmark (one worker, 128 B and 512 B
// frames) copying the plaintext into the ring and freeing the buffer on the
// worker made the gateway 5-8 % faster (perf/HISTORY.md, issue 5). The copy
// is at most limits.max_payload_bytes, beside an AEAD open of hundreds of ns.
//
// Each payload is a record of whole cache lines: a PayloadSlot header, then
// the payload. Records are packed one after another, so a 128-byte payload
// takes three lines, not room for the largest payload: the worker's stores
// walk through memory densely and cross a page every ~20 small payloads
// instead of every two or three (on the benchmark VM those page crossings
// cost more than the copy; perf/HISTORY.md, issue 5). A record that would run
// past the end of the memory starts again at line 0, behind a skip marker.
//
// The ring holds up to capacity() payloads of any sizes up to
// max_payload(); its memory is sized so that the count, not the space, is
// what fills it. The producer pushes any number of payloads and makes them
// visible with one publish() per burst; the consumer pops, reads, and
// releases the oldest popped payloads, in order. Counts are free-running
// 32-bit counters (capacity <= 2^20), and each side keeps its own cached
// copy of the other's count so the shared ones are read only when the
// cached copy says full or empty.
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
#include "dataplane/huge_area.h"

namespace gw::dp {

// What precedes each payload in its slot.
struct PayloadSlot {
  Endpoint from;
  std::uint32_t key_id = 0;
  std::uint32_t len = 0;
  ReplayStamp stamp;
};

class PayloadRing {
 public:
  // Payload bytes start here within a record (after PayloadSlot; 16-aligned,
  // as the streaming stores need).
  static constexpr std::size_t kDataOffset = 48;
  static_assert(sizeof(PayloadSlot) <= kDataOffset);
  // push() writes the record header as two 16-byte vectors in this layout.
  // push() writes the record header as three 16-byte vectors in this layout.
  static_assert(kDataOffset == 48 && offsetof(PayloadSlot, from) == 0 && offsetof(Endpoint, ip) == 0 &&
                offsetof(Endpoint, ip_len) == 16 && offsetof(Endpoint, port) == 18 && sizeof(Endpoint) == 20 &&
                offsetof(PayloadSlot, key_id) == 20 && offsetof(PayloadSlot, len) == 24 &&
                offsetof(PayloadSlot, stamp) == 32 && offsetof(ReplayStamp, counter) == 8 &&
                offsetof(ReplayStamp, timestamp) == 12 && sizeof(PayloadSlot) == 48);
  static constexpr std::uint32_t kMaxCapacity = 1U << 20;
  static constexpr std::uint32_t kMaxPayload = 1U << 16;
  // Bytes past the payload that push() may read.
  static constexpr std::size_t kReadPast = 15;
  static constexpr std::size_t kLine = 64;

  // Up to `capacity` payloads (a power of two, 1..kMaxCapacity) of up to
  // `max_payload` bytes each (1..kMaxPayload). Reserves and touches all the
  // memory now (bytes_for()), so the hot path never page-faults. Throws
  // std::invalid_argument for bad sizes and std::bad_alloc when the memory
  // is not there.
  PayloadRing(std::uint32_t capacity, std::uint32_t max_payload);
  ~PayloadRing();
  PayloadRing(const PayloadRing&) = delete;
  PayloadRing& operator=(const PayloadRing&) = delete;

  // The memory a ring of these sizes reserves: room for capacity + 2
  // records of the largest size, so that the live records (at most
  // capacity) and one skip at the end always fit with a new record.
  static std::size_t bytes_for(std::uint32_t capacity, std::uint32_t max_payload) noexcept {
    return (std::size_t{capacity} + 2) * record_lines(max_payload) * kLine;
  }

  std::uint32_t capacity() const noexcept { return mask_ + 1; }
  std::uint32_t max_payload() const noexcept { return max_payload_; }
  // Bytes reserved for the records.
  std::size_t bytes() const noexcept { return std::size_t{lines_} * kLine; }

  // Producer. Copies `len` bytes into the next record. False, with nothing
  // written, when capacity() payloads are pushed and not yet released or
  // `len` exceeds max_payload(). Not visible to the consumer until
  // publish(). `data` must stay readable kReadPast bytes past `len` (the
  // copy moves whole 16-byte pieces; in a frame, the AEAD tag follows the
  // plaintext); the record's bytes past `len` are unspecified.
  bool push(const std::uint8_t* data, std::uint32_t len, const Endpoint& from, std::uint32_t key_id,
            const ReplayStamp& stamp = {}) noexcept {
    if (len > max_payload_) return false;
    if (prod_.pushed - prod_.released_seen > mask_) {
      prod_.released_seen = released_.load(std::memory_order_acquire);
      if (prod_.pushed - prod_.released_seen > mask_) return false;
    }
    const std::uint32_t lines = record_lines(len);
    if (prod_.line + lines > lines_) {
      write_header(line_at(prod_.line), Endpoint{}, 0, kSkip, ReplayStamp{});  // the consumer goes on at line 0
      prod_.line = 0;
    }
    std::uint8_t* s = line_at(prod_.line);
#if defined(__x86_64__)
    // Streaming stores: the consumer's core read these lines last, and a
    // normal store would first have to fetch each line back from it
    // (measured: the worker stalled on those misses). 16 bytes at a time
    // (records are line-aligned, the payload 16-byte aligned), the last
    // piece padded with zeros to the end of its line.
    write_header(s, from, key_id, len, stamp);
    auto* out = reinterpret_cast<__m128i*>(s) + kDataOffset / 16;
    // Whole 16-byte pieces, the last one running past `len` (kReadPast).
    const std::uint32_t pieces = (len + 15) / 16;
    for (std::uint32_t i = 0; i < pieces; ++i) {
      _mm_stream_si128(out + i, _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + std::size_t{i} * 16)));
    }
    // Zeros to the end of the last cache line: a write-combining buffer
    // that holds a partial line is written back as a partial write.
    for (std::size_t i = kDataOffset / 16 + pieces; i % (kLine / 16) != 0; ++i) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(s) + i, _mm_setzero_si128());
    }
#else
    write_header(s, from, key_id, len, stamp);
    std::memcpy(s + kDataOffset, data, len);
#endif
    prod_.line += lines;
    if (prod_.line == lines_) prod_.line = 0;
    ++prod_.pushed;
    return true;
  }
  // Producer. Makes every payload pushed so far visible: one release store.
  void publish() noexcept {
#if defined(__x86_64__)
    _mm_sfence();  // streaming stores are not ordered by the release store
#endif
    published_.store(prod_.pushed, std::memory_order_release);
  }

  // Consumer. Up to `max` published payloads, oldest first; each Handoff
  // points into its record, valid until release(). The token is this ring.
  std::size_t pop(Handoff* out, std::size_t max) noexcept {
    std::uint32_t ready = cons_.published_seen - cons_.popped;
    if (ready < max) {
      cons_.published_seen = published_.load(std::memory_order_acquire);
      ready = cons_.published_seen - cons_.popped;
    }
    const std::size_t n = ready < max ? ready : max;
    for (std::size_t i = 0; i < n; ++i) {
      PayloadSlot h;
      std::memcpy(&h, line_at(cons_.line), sizeof h);
      if (h.len == kSkip) {
        cons_.line = 0;
        std::memcpy(&h, line_at(0), sizeof h);
      }
      out[i].data = line_at(cons_.line) + kDataOffset;
      out[i].len = h.len;
      out[i].from = h.from;
      out[i].key_id = h.key_id;
      out[i].stamp = h.stamp;
      out[i].once = Once::kFirst;
      out[i].token = this;
      cons_.line += record_lines(h.len);
      if (cons_.line == lines_) cons_.line = 0;
    }
    cons_.popped += static_cast<std::uint32_t>(n);
    return n;
  }
  // Consumer. Frees the `n` oldest popped payloads' records for the producer.
  void release(std::size_t n) noexcept {
    cons_.released += static_cast<std::uint32_t>(n);
    released_.store(cons_.released, std::memory_order_release);
  }
  // Consumer. Published payloads not yet released (popped ones included).
  std::size_t depth() const noexcept { return published_.load(std::memory_order_acquire) - cons_.released; }

 private:
  // Marks a skip record: the rest of the memory is unused this lap.
  static constexpr std::uint32_t kSkip = UINT32_MAX;

  static constexpr std::uint32_t record_lines(std::uint32_t len) noexcept {
    return static_cast<std::uint32_t>((kDataOffset + ((std::size_t{len} + 15) & ~std::size_t{15}) + kLine - 1) / kLine);
  }
  std::uint8_t* line_at(std::uint32_t line) const noexcept { return base_ + std::size_t{line} * kLine; }

  static void write_header(std::uint8_t* s, const Endpoint& from, std::uint32_t key_id, std::uint32_t len,
                           const ReplayStamp& stamp) noexcept {
#if defined(__x86_64__)
    // Assembled in registers: built in memory and loaded back as two
    // vectors, it stalled on store forwarding.
    std::uint32_t ends = 0;  // Endpoint's ip_len, padding byte and port
    std::memcpy(&ends, reinterpret_cast<const std::uint8_t*>(&from) + offsetof(Endpoint, ip_len), sizeof ends);
    auto* out = reinterpret_cast<__m128i*>(s);
    _mm_stream_si128(out, _mm_loadu_si128(reinterpret_cast<const __m128i*>(from.ip.data())));
    _mm_stream_si128(out + 1,
                     _mm_set_epi32(0, static_cast<int>(len), static_cast<int>(key_id), static_cast<int>(ends)));
    _mm_stream_si128(out + 2,
                     _mm_set_epi64x(static_cast<long long>((std::uint64_t{stamp.timestamp} << 32) | stamp.counter),
                                    static_cast<long long>(stamp.epoch)));
#else
    PayloadSlot h;
    h.from = from;
    h.key_id = key_id;
    h.len = len;
    h.stamp = stamp;
    std::memcpy(s, &h, sizeof h);
#endif
  }

  // Fixed at construction; read by both sides.
  HugeArea area_;
  std::uint8_t* base_ = nullptr;
  std::uint32_t lines_ = 0;  // memory in cache lines
  std::uint32_t mask_ = 0;   // capacity - 1
  std::uint32_t max_payload_ = 0;
  // Shared counts, each on its own cache line, written by one side.
  alignas(64) std::atomic<std::uint32_t> published_{0};  // producer: payloads pushed and published
  alignas(64) std::atomic<std::uint32_t> released_{0};   // consumer: payloads released
  // Each side's private state.
  alignas(64) struct {
    std::uint32_t line = 0;           // where the next record goes
    std::uint32_t pushed = 0;         // payloads pushed
    std::uint32_t released_seen = 0;  // last released_ read
  } prod_;
  alignas(64) struct {
    std::uint32_t line = 0;            // where the next record to pop starts
    std::uint32_t popped = 0;          // payloads popped
    std::uint32_t released = 0;        // payloads released
    std::uint32_t published_seen = 0;  // last published_ read
  } cons_;
};

}  // namespace gw::dp
