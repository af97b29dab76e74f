// The broadcast queue: updates waiting to piggyback on probes and gossip.
//
// - At most one entry per member (and one per UserData source): a newer
//   incarnation, or a stronger state at the same incarnation (Dead/Leave >
//   Suspect > Alive), replaces the queued entry; anything else is superseded.
// - Served urgent class first, then by fewest transmissions, newest first.
// - Each entry is sent up to take()'s transmit limit, or its own lower cap
//   (news that only some members need: a suspicion).
// - Bounded: when full, the victim is the lowest-class, most-transmitted, oldest
//   entry; an urgent entry is never dropped while a non-urgent one is queued.
//   Every drop is counted by the class of what was dropped. The bound follows
//   the cluster: the engine raises it with the member count (set_capacity), so
//   a join of N members, which queues an Alive for each, never overflows it.
// - take() is O(k log Q) for k messages taken: it stops after a few entries that
//   do not fit, instead of scanning the whole queue for small ones.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "control/engine/flat_index.h"
#include "control/engine/identity.h"
#include "control/engine/messages.h"

namespace gw::cp::engine {

enum class PushResult : std::uint8_t {
  kQueued,      // new entry
  kReplaced,    // replaced the older entry for the same member
  kSuperseded,  // the queued entry is newer or stronger: not queued
  kDropped,     // queue full of more important entries: not queued (counted)
};

// (id, slot) items in ascending order in a ring buffer: an insert or erase
// moves the items on its shorter side, so one near either end costs a few
// moves, and one in the middle is at most three block moves (memmove)
// however the ring wraps; memory grows by doubling and is never given back (no
// allocation per message once grown). The first kInline items live in the
// ring itself: most buckets hold none or one (an entry alone in its bucket
// moves to the next one each time it is sent), and a bucket that is one cache
// line of its own costs one miss, where a separate buffer cost two or three.
class alignas(64) OrderedRing {
 public:
  struct Item {
    std::uint64_t id = 0;    // push order
    std::uint32_t slot = 0;  // the entry's place in the queue's slots
    friend auto operator<=>(const Item&, const Item&) = default;
  };
  static constexpr std::uint32_t kInline = 2;  // a power of two

  OrderedRing() = default;
  // A moved-from ring is empty (and usable).
  OrderedRing(OrderedRing&& o) noexcept { *this = std::move(o); }
  OrderedRing& operator=(OrderedRing&& o) noexcept {
    if (this != &o) {
      heap_ = std::move(o.heap_);
      back_id_ = o.back_id_;
      cap_ = std::exchange(o.cap_, kInline);
      head_ = std::exchange(o.head_, 0);
      size_ = std::exchange(o.size_, 0);
      inline_ = o.inline_;
    }
    return *this;
  }

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  // i in [0, size()), ascending.
  const Item& operator[](std::size_t i) const { return data()[(head_ + i) & (cap_ - 1)]; }
  const Item& front() const { return (*this)[0]; }
  const Item& back() const { return (*this)[size_ - 1]; }
  // In order (an equal item goes before the one already there).
  void insert(const Item& x);
  // Asks the CPU for the lines an insert reads or writes first: its front
  // item and the place after its back (an insert lands at one or the other
  // nearly always). The header must be at hand (it says where they are).
  void prefetch_ends() const {
    if (size_ == 0) return;
    __builtin_prefetch(&(*this)[0]);
    __builtin_prefetch(&data()[(head_ + size_) & (cap_ - 1)], 1);
  }
  // The item with this id, if any.
  void erase(std::uint64_t id);
  void clear() {
    head_ = 0;
    size_ = 0;
  }

 private:
  const Item* data() const { return cap_ <= kInline ? inline_.data() : heap_.get(); }
  Item* data() { return cap_ <= kInline ? inline_.data() : heap_.get(); }
  Item& at(std::size_t i) { return data()[(head_ + i) & (cap_ - 1)]; }
  std::size_t lower_bound(const Item& x) const;  // first index whose item is >= x
  // The items at [lo, hi) move one place up (to [lo + 1, hi + 1)) or down (to
  // [lo - 1, hi - 1)), in physically contiguous pieces.
  void move_up(std::size_t lo, std::size_t hi);
  void move_down(std::size_t lo, std::size_t hi);
  void grow();
  std::unique_ptr<Item[]> heap_;  // the items once there are more than kInline
  // back().id while not empty: an insert at the back (most are) decides so
  // from this line alone, without the back item's line (a cache miss).
  std::uint64_t back_id_ = 0;
  std::uint32_t cap_ = kInline;  // a power of two
  std::uint32_t head_ = 0;
  std::uint32_t size_ = 0;
  std::array<Item, kInline> inline_{};
};
static_assert(sizeof(OrderedRing) == 64, "a bucket of a few entries is one cache line");

class BroadcastQueue {
 public:
  // Entries about members and UserData payloads live in separate key spaces.
  enum class Kind : std::uint8_t { kMember = 0, kUserData = 1 };
  using Key = std::pair<Kind, std::string>;

  explicit BroadcastQueue(std::uint32_t max_entries) : max_entries_(max_entries) {}

  // Raises or lowers the bound for later pushes (entries already queued stay).
  void set_capacity(std::size_t max_entries) { max_entries_ = max_entries; }
  std::size_t capacity() const { return max_entries_; }

  // `transmit_cap`: the most transmissions of this entry, below take()'s
  // limit; 0 = that limit.
  PushResult push(const Key& key, Message msg, PriorityClass cls, std::uint32_t transmit_cap = 0);

  // Appends queued messages that fit in `budget_bytes` (estimated encoded size)
  // to `out`, best first; each counts one transmission and is retired after
  // `transmit_limit` (or its own cap, if lower). Returns the highest class
  // taken (kBulk if none).
  PriorityClass take(std::size_t budget_bytes, std::uint32_t transmit_limit, Compound& out);

  bool contains(const Key& key) const { return find(key) != kNoSlot; }
  std::size_t size() const { return index_.size(); }
  bool empty() const { return index_.empty(); }
  std::uint32_t transmits(const Key& key) const;
  // Entries retired because they reached their transmit limit.
  std::uint64_t retired() const { return retired_; }
  const std::array<std::uint64_t, kPriorityClasses>& drops() const { return drops_; }
  std::uint64_t superseded() const { return superseded_; }
  void clear();

 private:
  static constexpr std::uint32_t kNoSlot = UINT32_MAX;
  struct Entry {
    // What take() reads of every entry it looks at first, in the message's
    // first cache line.
    std::size_t size = 0;  // estimated encoded bytes
    std::uint64_t id = 0;  // push order; larger = newer
    std::uint32_t transmits = 0;
    std::uint32_t cap = 0;  // most transmissions; 0 = take()'s limit
    Kind kind = Kind::kMember;
    PriorityClass cls = PriorityClass::kGossip;
    Name name;  // the member (or UserData source) it is about: keeps the id alive
    Message msg;
  };
  // Serve order: class, then fewest transmissions, then newest. Kept as one
  // bucket per (class, transmissions), each (push id, slot) in ascending id:
  // served from its back. New entries (the largest id) append; an entry sent
  // once more moves to the next bucket, near one of its ends: near the back
  // while news keeps coming, near the front while a backlog drains (after a
  // mass join every datagram takes the newest of thousands, older than all
  // in the bucket it joins). An OrderedRing moves only the shorter side, so
  // both cost a few moves; a vector moved the whole bucket (O(Q) per entry
  // sent: 24 us an ack at 10,000 members).
  using Item = OrderedRing::Item;
  using Bucket = OrderedRing;

  static std::uint64_t index_key(Kind kind, std::uint32_t name_id) {
    return (static_cast<std::uint64_t>(kind) << 32) | name_id;
  }
  Bucket& bucket(PriorityClass cls, std::uint32_t transmits) {
    auto& per_class = buckets_[static_cast<std::size_t>(cls)];
    if (transmits >= per_class.size()) per_class.resize(transmits + 1);
    return per_class[transmits];
  }
  void order_insert(std::uint32_t slot);
  void order_erase(std::uint32_t slot);
  // The last entry in serve order (the eviction victim); kNoSlot if empty.
  std::uint32_t last_in_order() const;
  std::uint32_t find(const Key& key) const;
  // The same with the name's id already looked up (IdentityPool::find_name).
  std::uint32_t find(const Key& key, std::uint32_t name_id) const;
  void erase(std::uint32_t slot);
  // `name`: key.second's handle if some handle held it already, else empty.
  void insert(const Key& key, Name name, Message msg, PriorityClass cls, std::uint32_t transmit_cap);

  std::size_t max_entries_;
  // take() gives up after this many entries in a row that do not fit.
  static constexpr int kMaxMisses = 8;
  std::uint64_t next_id_ = 1;
  std::vector<Entry> slots_;
  std::vector<std::uint32_t> free_;
  FlatIndex index_;  // (kind, name id) -> slot
  std::array<std::vector<Bucket>, kPriorityClasses> buckets_;
  // Which of a class's first kMapped buckets hold entries (bit t: bucket t):
  // take() reads only those, not the empty ones between (one cache line
  // each). Buckets past kMapped (a retransmit limit over 64) are read as
  // before.
  static constexpr std::size_t kMapped = 64;
  std::array<std::uint64_t, kPriorityClasses> occupied_ = {};
  std::vector<std::uint32_t> taken_;  // scratch for take()
  std::array<std::uint64_t, kPriorityClasses> drops_ = {};
  std::uint64_t superseded_ = 0;
  std::uint64_t retired_ = 0;
};

// Strength of a state message at equal incarnation: Dead/Leave > Suspect > Alive.
int state_strength(const Message& m);
// Incarnation a state message carries (0 for others).
std::uint64_t message_incarnation(const Message& m);
// The member a state message is about (empty for others). Inline: the
// engine asks it of every message of a datagram it prefetches for.
inline std::string_view message_subject(const Message& m) {
  if (const auto* a = std::get_if<Alive>(&m)) return a->node;
  if (const auto* s = std::get_if<Suspect>(&m)) return s->node;
  if (const auto* d = std::get_if<Dead>(&m)) return d->node;
  if (const auto* l = std::get_if<Leave>(&m)) return l->node;
  return {};
}

}  // namespace gw::cp::engine
