// Who sends us datagrams of our cluster under a key id our keyring lacks
// (drop_unknown_key): each worker keeps a small sample of distinct
// (key id, suite, source) for the control lcore, which says which keys it
// hears and from whom (a member that missed a key rotation is otherwise
// silently alone). The key id and the source are the header's and the
// frame's, before any MAC: a stranger can claim them.
//
// One producer (the worker, on its lcore) and one consumer (the control
// lcore). The worker never waits, allocates or logs: once kSlots distinct
// sightings are noted it only compares, until the control lcore has taken
// them and asked for a new sample.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "dataplane/api/handoff.h"

namespace gw::dp {

struct UnknownKeySighting {
  std::uint32_t key_id = 0;
  std::uint8_t suite = 0;  // crypto::Suite's wire value
  Endpoint from;           // as the frame says (not authenticated)

  friend bool operator==(const UnknownKeySighting& a, const UnknownKeySighting& b) noexcept {
    return a.key_id == b.key_id && a.suite == b.suite && a.from.ip_len == b.from.ip_len && a.from.port == b.from.port &&
           std::memcmp(a.from.ip.data(), b.from.ip.data(), a.from.ip.size()) == 0;
  }
};

class UnknownKeySample {
 public:
  static constexpr std::size_t kSlots = 8;

  // Worker lcore: whether note() would record anything (room left, or the
  // control lcore asked for a new sample). One load and a compare.
  bool wants() const noexcept { return count_ < kSlots || request_.load(std::memory_order_acquire) != generation_; }

  // Worker lcore: one datagram under an unknown key. Recorded if it is not
  // in the sample yet and there is room.
  void note(const UnknownKeySighting& s) noexcept {
    const std::uint32_t req = request_.load(std::memory_order_acquire);
    if (req != generation_) {
      // The control lcore took the last sample: start a new one. The slots
      // it read are overwritten only now (its release, our acquire).
      generation_ = req;
      count_ = 0;
    }
    if (count_ >= kSlots) return;
    for (std::uint32_t i = 0; i < count_; ++i) {
      if (slots_[i] == s) return;
    }
    slots_[count_++] = s;
    state_.store(generation_ << 8 | count_, std::memory_order_release);
  }

  // Control lcore: copies the sightings noted since the last take into `out`
  // (at most kSlots) and asks the worker for a new sample. Returns how many.
  std::size_t take(std::array<UnknownKeySighting, kSlots>& out) noexcept {
    const std::uint32_t st = state_.load(std::memory_order_acquire);
    const std::uint32_t req = request_.load(std::memory_order_relaxed);
    // The worker has not started the sample we asked for: nothing new.
    if (st >> 8 != (req & 0x00FF'FFFFu)) return 0;
    const std::size_t n = st & 0xFFu;
    for (std::size_t i = 0; i < n; ++i) out[i] = slots_[i];
    if (n != 0) request_.store((req + 1) & 0x00FF'FFFFu, std::memory_order_release);
    return n;
  }

 private:
  // The worker's side: the slots and its own view of the sample.
  std::array<UnknownKeySighting, kSlots> slots_{};
  std::uint32_t generation_ = 0;  // the request this sample answers
  std::uint32_t count_ = 0;
  // Published by the worker: generation << 8 | count.
  std::atomic<std::uint32_t> state_{0};
  // Written by the control lcore only (its own cache line: the worker reads
  // it on the unknown-key path, the control lcore writes it once a take).
  alignas(64) std::atomic<std::uint32_t> request_{0};
};

}  // namespace gw::dp
