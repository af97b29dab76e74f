// Replay protection, step 6 of the ladder: a sliding window over each
// sender's nonce counter, in a bounded per-lcore table.
//
// A nonce is an 8-byte random per-boot epoch and a 4-byte counter (nonce.h),
// so (key id, epoch) names one sender's sequence and the counter orders it.
// Each window remembers the highest counter seen and which of the last
// kReplayWindow counters below it were seen (RFC 6479: a ring of 64-bit
// blocks with one spare block, so advancing clears whole words).
//
// Two phases per packet, so forged packets cannot poison a window:
//   find() + is_fresh()  before the AEAD: read-only;
//   commit()             only after the AEAD opened the payload.
// Only authenticated packets ever insert, so an outsider cannot fill the
// table. It holds exactly limits.replay_senders windows and never evicts a
// live one: at capacity a new sender is refused (drop_replay_table_full)
// until windows age out, which they do once their newest datagram is older
// than the timestamp window (every datagram they saw is then refused as
// stale anyway, so forgetting them reopens nothing). Slots are twice the
// capacity, so linear probing stays short at full load.
//
// Tables are per lcore and catch a replay early, before the AEAD; the
// authoritative once-only check for the whole gateway is the control
// lcore's (control/host/replay_guard.h): a copy sent from another address
// may hash to another worker.
//
// Pure: no DPDK, no allocation after construction, no locks; one table per lcore.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "crypto/wire_header.h"
#include "dataplane/hash.h"
#include "dataplane/huge_area.h"

namespace gw::dp {

// Packets a window tracks below the highest counter seen.
inline constexpr std::uint32_t kReplayWindow = 1024;

struct ReplayKey {
  std::uint32_t key_id = 0;
  std::uint64_t epoch = 0;
  friend bool operator==(const ReplayKey&, const ReplayKey&) = default;
};

// Splits a nonce into its window key (with `key_id`) and its counter.
inline ReplayKey replay_key(std::uint32_t key_id, const crypto::Nonce& n, std::uint32_t* counter) noexcept {
  *counter = crypto::detail::wire_be32(n.data() + 8);
  return ReplayKey{key_id, crypto::detail::wire_be64(n.data())};
}

// One sender's window.
class ReplayWindow {
 public:
  static constexpr std::size_t kBlocks = kReplayWindow / 64 + 1;

  // A fresh window whose first packet is `counter`.
  void reset(std::uint32_t counter) noexcept {
    // A copy, not fill(0): GCC turns the fill into `rep stos`, whose start-up
    // cost on AMD cores was half of commit()'s time in a flood of new senders.
    static constexpr std::array<std::uint64_t, kBlocks> kClear{};
    std::memcpy(bits_.data(), kClear.data(), sizeof bits_);
    top_ = counter;
    set(counter);
  }
  // False if `counter` was seen or is older than the window.
  bool is_fresh(std::uint32_t counter) const noexcept {
    if (counter > top_) return true;
    if (top_ - counter >= kReplayWindow) return false;
    return (bits_[block(counter)] & bit(counter)) == 0;
  }
  // Records `counter` (which is_fresh() accepted) and slides the window.
  void commit(std::uint32_t counter) noexcept {
    if (counter > top_) {
      const std::uint64_t from = top_ / 64;
      const std::uint64_t to = counter / 64;
      const std::uint64_t clear = to - from < kBlocks ? to - from : kBlocks;
      for (std::uint64_t i = 1; i <= clear; ++i) bits_[(from + i) % kBlocks] = 0;
      top_ = counter;
    }
    set(counter);
  }
  std::uint32_t top() const noexcept { return top_; }

 private:
  static std::size_t block(std::uint32_t c) noexcept { return (c / 64) % kBlocks; }
  static std::uint64_t bit(std::uint32_t c) noexcept { return std::uint64_t{1} << (c % 64); }
  void set(std::uint32_t c) noexcept { bits_[block(c)] |= bit(c); }

  std::array<std::uint64_t, kBlocks> bits_{};
  std::uint32_t top_ = 0;
};

class ReplayTable {
 public:
  // At most `capacity` windows (exactly: a new sender past it is refused,
  // never let in by evicting a live one). `window_s` is the ladder's
  // timestamp window (limits.replay_window_s): a window whose newest
  // datagram is that old can go, since every datagram it saw is now stale.
  // `seed` keys the slot hash (random per lcore in the gateway).
  explicit ReplayTable(std::size_t capacity, std::uint64_t seed = 0, std::uint32_t window_s = 30);

  struct Entry {
    ReplayKey key;
    ReplayWindow window;
  };

  // Read-only lookup; null if this sender has no window (then any counter is
  // fresh). Inline: every packet past the header MAC looks itself up. Linear
  // probing over a compact tag array at most half full: a hit reads one or
  // two tags, a miss stops at the first empty slot.
  const Entry* find(const ReplayKey& k) const noexcept {
    for (std::size_t i = home(k);; i = (i + 1) & mask_) {
      const Tag& t = tags_[i];
      if (t.max_ts == 0) return nullptr;
      if (t.epoch == k.epoch && t.key_id == k.key_id) return &entries_[i];
    }
  }
  static bool is_fresh(const Entry* e, std::uint32_t counter) noexcept {
    return e == nullptr || e->window.is_fresh(counter);
  }
  // No room for a new sender: `capacity` windows are live.
  bool full() const noexcept { return size_ >= capacity_; }
  // After the AEAD: records `counter` (of a datagram stamped `timestamp`)
  // for `k`, creating its window if needed. False, and nothing recorded,
  // when `k` is new and the table is full (the caller refuses the packet).
  bool commit(const ReplayKey& k, std::uint32_t counter, std::uint32_t timestamp = 1) noexcept;
  // One ageing step (between bursts): looks at `steps` slots and frees the
  // windows whose newest datagram is stale at `now_s`.
  void age(std::uint32_t now_s, std::size_t steps) noexcept;

  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t size() const noexcept { return size_; }
  std::uint64_t expired() const noexcept { return expired_; }

 private:
  struct Tag {
    std::uint64_t epoch = 0;
    std::uint32_t key_id = 0;
    std::uint32_t max_ts = 0;  // newest timestamp committed (at least 1); 0: empty slot
  };
  std::size_t home(const ReplayKey& k) const noexcept {
    return static_cast<std::size_t>(mix64(k.epoch ^ seed_ ^ (std::uint64_t{k.key_id} << 32 | k.key_id))) & mask_;
  }
  void erase(std::size_t i) noexcept;

  std::size_t capacity_ = 0;
  std::size_t mask_ = 0;
  std::uint64_t seed_ = 0;
  std::uint32_t window_s_ = 30;
  std::size_t size_ = 0;
  std::size_t cursor_ = 0;  // ageing position
  std::uint64_t expired_ = 0;
  HugeArray<Tag> tags_;       // probed on every lookup: 4 per cache line
  HugeArray<Entry> entries_;  // the windows, same index; huge pages
};

// Headers whose AEAD failed on this lcore (issue 17): their nonces, so the
// same header on another tampered payload is refused before the AEAD instead
// of costing one each time. Only headers that passed the header MAC, the
// replay pre-check and the receiver check get here, so every entry is a real
// nonce of a key holder's datagram for us that we have not accepted; an
// outsider cannot invent one. 4-way sets, least recently used forgotten
// first (a header that keeps coming back stays); forgetting only makes a
// header tryable again (one more AEAD), never lets a packet in. Remembering the nonce and not the
// window keeps a forged copy from moving the sender's window (replay.h top).
// The price, stated in docs/ladder.md: an attacker who sees a datagram for
// us before we do (on its path, where it could drop it anyway) can spend its
// nonce first.
class FailedHeaders {
 public:
  static constexpr std::size_t kWays = 4;
  static constexpr std::size_t kSets = 1024;
  static constexpr std::size_t kSlots = kWays * kSets;

  explicit FailedHeaders(std::uint64_t seed = 0) : seed_(seed) {}

  // True if this nonce failed here before; a hit keeps it (most recently
  // used), so a header an attacker keeps re-sending stays remembered.
  bool contains(const ReplayKey& k, std::uint32_t counter) noexcept {
    Slot* set = &slots_[set_of(k, counter) * kWays];
    for (std::size_t i = 0; i < kWays; ++i) {
      if (set[i].used != 0 && set[i].key == k && set[i].counter == counter) {
        set[i].used = ++tick_;
        return true;
      }
    }
    return false;
  }
  // Remembers a failed nonce, forgetting the least recently used of its set.
  void add(const ReplayKey& k, std::uint32_t counter) noexcept {
    Slot* set = &slots_[set_of(k, counter) * kWays];
    Slot* victim = &set[0];
    for (std::size_t i = 0; i < kWays; ++i) {
      if (set[i].used == 0) {
        victim = &set[i];
        break;
      }
      if (set[i].used < victim->used) victim = &set[i];
    }
    victim->key = k;
    victim->counter = counter;
    victim->used = ++tick_;
  }

 private:
  struct Slot {
    ReplayKey key;
    std::uint32_t counter = 0;
    std::uint64_t used = 0;  // 0: empty; else use order
  };
  std::size_t set_of(const ReplayKey& k, std::uint32_t counter) const noexcept {
    return static_cast<std::size_t>(mix64(k.epoch ^ seed_ ^ (std::uint64_t{k.key_id} << 32 | counter))) & (kSets - 1);
  }
  std::uint64_t seed_ = 0;
  std::uint64_t tick_ = 0;
  std::array<Slot, kSlots> slots_{};
};

}  // namespace gw::dp
