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
//   check()   before the AEAD: read-only;
//   commit()  only after the AEAD opened the payload.
// Only authenticated packets ever insert, so an outsider cannot fill the
// table. It holds at most limits.replay_senders windows. Slots are twice the
// capacity, so linear probing stays short at full load.
//
// What a key holder can do to it, and the bounds (issue 51, docs/ladder.md
// "A key holder and the replay windows"). The epoch is sent in clear, so a
// key holder can seal a datagram under a live member's epoch with counter
// 2^32-1; under a counter-only window every later datagram of that member
// would be a replay. So a window also remembers the newest timestamp it
// committed (max_ts): a datagram that is not fresh by its counter but is
// stamped later than everything the window ever accepted cannot be a copy
// of anything it accepted, and *rebases* the window (counter window reset
// to it; datagrams stamped at or before the old max_ts refused from then
// on, floor_ts). A forged datagram so costs the member at most the seconds
// until the member's clock passes the forged timestamp (at most
// limits.replay_window_s + 1 s past our clock).
//
// Forgetting a window is safe only when nothing it accepted can come back:
// the table keeps a floor (floor_ts_) under which a sender without a window
// is refused, raised to the newest timestamp of every window it forgets.
// Windows are forgotten when stale (age()) and, when the table is full,
// the window with the oldest max_ts among a few (evicted), so a flood of
// new epochs cannot lock restarted members and joiners out: they are
// refused only while their timestamps are not past that floor. And no
// source address may open more than `per_source` windows (its share):
// past it, its new windows are refused (drop_replay_table_full).
// This also keeps (b) through clock steps (docs/ladder.md, "clock"): the
// floor only rises, so a wall clock stepped back reopens nothing.
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
#include <vector>

#include "crypto/wire_header.h"
#include "dataplane/api/snapshot.h"
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

// What the table says of a datagram (check() before the AEAD, commit() after).
enum class ReplayCheck : std::uint8_t {
  kFresh,   // never accepted: may go on (and commit)
  kReplay,  // seen, older than its window, or not past what the table forgot
  kNoRoom,  // a new sender and no room: its source's share is used, or nothing can be evicted
};

class ReplayTable {
 public:
  // At most `capacity` windows. `window_s` is the ladder's timestamp window
  // (limits.replay_window_s): a window whose newest datagram is that old
  // can go, since every datagram it saw is now stale. `seed` keys the slot
  // hash (random per lcore in the gateway). `per_source`: most windows one
  // source address may open (0: no limit).
  explicit ReplayTable(std::size_t capacity, std::uint64_t seed = 0, std::uint32_t window_s = 30,
                       std::uint32_t per_source = 0);

  struct Entry {
    ReplayKey key;
    ReplayWindow window;
    std::uint32_t floor_ts = 0;        // datagrams stamped before this are refused (set by a rebase)
    std::uint32_t src_slot = kNoSlot;  // the per-source count it holds (kNoSlot: none)
  };
  static constexpr std::uint32_t kNoSlot = UINT32_MAX;

  // Read-only lookup; null if this sender has no window. Inline: every
  // packet past the header MAC looks itself up. Linear probing over a
  // compact tag array at most half full: a hit reads one or two tags, a miss
  // stops at the first empty slot.
  const Entry* find(const ReplayKey& k) const noexcept {
    std::size_t end = 0;
    const std::size_t i = slot_of(k, &end);
    return i == kMissing ? nullptr : &entries_[i];
  }
  // Counter-only freshness (tests): null is fresh.
  static bool is_fresh(const Entry* e, std::uint32_t counter) noexcept {
    return e == nullptr || e->window.is_fresh(counter);
  }
  // Before the AEAD, changing nothing: whether a datagram of sender `k`
  // with `counter`, stamped `ts`, from `src` (null: not counted per source)
  // would be accepted by commit().
  // Inline: every packet past the header MAC asks.
  ReplayCheck check(const ReplayKey& k, std::uint32_t counter, std::uint32_t ts,
                    const SourceAddress* src = nullptr) const noexcept {
    const std::uint32_t t = ts == 0 ? 1 : ts;
    std::size_t end = 0;
    const std::size_t i = slot_of(k, &end);
    if (i == kMissing) return check_new(t, src);
    const Entry& e = entries_[i];
    if (t < e.floor_ts) return ReplayCheck::kReplay;
    if (e.window.is_fresh(counter)) return ReplayCheck::kFresh;
    // Stamped after everything this window accepted: not a copy of any of
    // it, whatever its counter (a rebase, see the top of this file).
    if (t > tags_[i].max_ts) return ReplayCheck::kFresh;
    return ReplayCheck::kReplay;
  }
  // No room for a new sender without evicting: `capacity` windows are live.
  bool full() const noexcept { return size_ >= capacity_; }
  // After the AEAD: records `counter` (of a datagram stamped `timestamp`,
  // from `src`) for `k`, creating, rebasing or evicting as check() said.
  // False, and nothing recorded, when check() would not say kFresh.
  bool commit(const ReplayKey& k, std::uint32_t counter, std::uint32_t timestamp = 1,
              const SourceAddress* src = nullptr) noexcept;
  // One ageing step (between bursts): looks at `steps` slots and frees the
  // windows whose newest datagram is stale at `now_s`.
  void age(std::uint32_t now_s, std::size_t steps) noexcept;

  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t size() const noexcept { return size_; }
  std::uint64_t expired() const noexcept { return expired_; }
  std::uint64_t evicted() const noexcept { return evicted_; }
  std::uint64_t rebased() const noexcept { return rebased_; }
  // Senders without a window are refused when stamped before this.
  std::uint32_t floor_ts() const noexcept { return floor_ts_; }
  // Windows `src` holds.
  std::uint32_t windows_of(const SourceAddress& src) const noexcept {
    return per_source_.empty() ? 0 : per_source_[source_slot(src)];
  }

 private:
  struct Tag {
    std::uint64_t epoch = 0;
    std::uint32_t key_id = 0;
    std::uint32_t max_ts = 0;  // newest timestamp committed (at least 1); 0: empty slot
  };
  static constexpr std::size_t kMissing = SIZE_MAX;
  // Slots a full table looks at for a window to evict (four cache lines of tags).
  static constexpr std::size_t kEvictScan = 16;

  std::size_t home(const ReplayKey& k) const noexcept {
    return static_cast<std::size_t>(keyed_hash(key_, k.epoch, k.key_id)) & mask_;
  }
  // The slot holding `k`, or kMissing and the empty slot its probe ended on in *end.
  std::size_t slot_of(const ReplayKey& k, std::size_t* end) const noexcept {
    for (std::size_t i = home(k);; i = (i + 1) & mask_) {
      const Tag& t = tags_[i];
      if (t.max_ts == 0) {
        *end = i;
        return kMissing;
      }
      if (t.epoch == k.epoch && t.key_id == k.key_id) return i;
    }
  }
  std::uint32_t source_slot(const SourceAddress& a) const noexcept;
  // The window to evict for a new sender stamped `ts` (oldest max_ts below
  // `ts` among kEvictScan slots from the ageing cursor), or kMissing.
  std::size_t victim(std::uint32_t ts) const noexcept;
  ReplayCheck check_new(std::uint32_t ts, const SourceAddress* src) const noexcept;
  void erase(std::size_t i) noexcept;
  void forget(std::size_t i) noexcept;  // erase, raising floor_ts_ to its max_ts + 1

  std::size_t capacity_ = 0;
  std::size_t mask_ = 0;
  crypto::SipKey key_;  // keys the slot hash (hash.h)
  std::uint32_t window_s_ = 30;
  std::uint32_t per_source_limit_ = 0;
  std::uint32_t floor_ts_ = 0;
  std::size_t size_ = 0;
  std::size_t cursor_ = 0;  // ageing position
  std::uint64_t expired_ = 0;
  std::uint64_t evicted_ = 0;
  std::uint64_t rebased_ = 0;
  HugeArray<Tag> tags_;                    // probed on every lookup: 4 per cache line
  HugeArray<Entry> entries_;               // the windows, same index; huge pages
  std::vector<std::uint16_t> per_source_;  // windows per source (keyed hash of the address); empty: no limit
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

  explicit FailedHeaders(std::uint64_t seed = 0) : key_(table_key(seed)) {}

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
    return static_cast<std::size_t>(keyed_hash(key_, k.epoch, std::uint64_t{k.key_id} << 32 | counter)) & (kSets - 1);
  }
  crypto::SipKey key_;  // keys the set hash (hash.h)
  std::uint64_t tick_ = 0;
  std::array<Slot, kSlots> slots_{};
};

}  // namespace gw::dp
