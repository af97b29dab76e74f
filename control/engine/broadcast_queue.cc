#include "control/engine/broadcast_queue.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "control/engine/wire_size.h"

namespace gw::cp::engine {

int state_strength(const Message& m) {
  if (std::holds_alternative<Dead>(m) || std::holds_alternative<Leave>(m)) return 2;
  if (std::holds_alternative<Suspect>(m)) return 1;
  return 0;
}

std::uint64_t message_incarnation(const Message& m) {
  if (const auto* a = std::get_if<Alive>(&m)) return a->incarnation;
  if (const auto* s = std::get_if<Suspect>(&m)) return s->incarnation;
  if (const auto* d = std::get_if<Dead>(&m)) return d->incarnation;
  if (const auto* l = std::get_if<Leave>(&m)) return l->incarnation;
  return 0;
}

std::uint32_t BroadcastQueue::find(const Key& key) const { return find(key, identities().find_name(key.second)); }

std::uint32_t BroadcastQueue::find(const Key& key, std::uint32_t name_id) const {
  // An empty name is id kNone (a key like any other); another name that no
  // handle holds cannot be queued.
  if (name_id == IdentityPool::kNone && !key.second.empty()) return kNoSlot;
  const std::uint32_t slot = index_.find(index_key(key.first, name_id));
  return slot == FlatIndex::kAbsent ? kNoSlot : slot;
}

std::size_t OrderedRing::lower_bound(const Item& x) const {
  std::size_t lo = 0;
  std::size_t hi = size_;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if ((*this)[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

void OrderedRing::grow() {
  const std::uint32_t cap = cap_ * 2;
  auto next = std::make_unique<Item[]>(cap);
  for (std::size_t i = 0; i < size_; ++i) next[i] = (*this)[i];
  heap_ = std::move(next);
  cap_ = cap;
  head_ = 0;
}

void OrderedRing::move_up(std::size_t lo, std::size_t hi) {
  // From the top down, so that no item is overwritten before it has moved.
  Item* buf = data();
  const std::size_t mask = cap_ - 1;
  while (hi > lo) {
    const std::size_t src_last = (head_ + hi - 1) & mask;
    const std::size_t dst_last = (head_ + hi) & mask;
    const std::size_t n = std::min({hi - lo, src_last + 1, dst_last + 1});
    std::memmove(&buf[dst_last + 1 - n], &buf[src_last + 1 - n], n * sizeof(Item));
    hi -= n;
  }
}

void OrderedRing::move_down(std::size_t lo, std::size_t hi) {
  // From the bottom up (lo >= 1: the item below the range is free).
  Item* buf = data();
  const std::size_t mask = cap_ - 1;
  while (lo < hi) {
    const std::size_t src = (head_ + lo) & mask;
    const std::size_t dst = (head_ + lo - 1) & mask;
    const std::size_t n = std::min({hi - lo, cap_ - src, cap_ - dst});
    std::memmove(&buf[dst], &buf[src], n * sizeof(Item));
    lo += n;
  }
}

void OrderedRing::insert(const Item& x) {
  // At either end (nearly always): no search, no moves.
  std::size_t pos = 0;
  // Ids are unique but for the item itself: an equal id is placed by the
  // whole comparison below.
  if (size_ == 0 || back_id_ < x.id) {
    pos = size_;
  } else if (!(front() < x)) {
    pos = 0;
  } else {
    pos = lower_bound(x);
  }
  if (size_ == cap_) grow();
  if (pos < size_ - pos) {
    // The front part moves one place towards the front.
    head_ = (head_ - 1) & (cap_ - 1);
    move_down(1, pos + 1);
  } else {
    // The back part moves one place towards the back.
    move_up(pos, size_);
  }
  at(pos) = x;
  ++size_;
  if (pos == size_ - 1) back_id_ = x.id;
}

void OrderedRing::erase(std::uint64_t id) {
  if (size_ == 0) return;
  // take() retires and moves entries from a bucket's back: no search for those.
  std::size_t pos = size_ - 1;
  const bool at_back = back_id_ == id;
  if (!at_back) {
    pos = lower_bound(Item{id, 0});
    if (pos == size_ || (*this)[pos].id != id) return;
  }
  if (pos < size_ - 1 - pos) {
    move_up(0, pos);
    head_ = (head_ + 1) & (cap_ - 1);
  } else {
    move_down(pos + 1, size_);
  }
  --size_;
  if (at_back && size_ > 0) back_id_ = back().id;
}

void BroadcastQueue::order_insert(std::uint32_t slot) {
  const Entry& e = slots_[slot];
  Bucket& b = bucket(e.cls, e.transmits);
  const Item item{e.id, slot};
  b.insert(item);
  if (e.transmits < kMapped) occupied_[static_cast<std::size_t>(e.cls)] |= std::uint64_t{1} << e.transmits;
}

void BroadcastQueue::order_erase(std::uint32_t slot) {
  const Entry& e = slots_[slot];
  Bucket& b = bucket(e.cls, e.transmits);
  b.erase(e.id);
  if (b.empty() && e.transmits < kMapped)
    occupied_[static_cast<std::size_t>(e.cls)] &= ~(std::uint64_t{1} << e.transmits);
}

std::uint32_t BroadcastQueue::last_in_order() const {
  for (std::size_t c = kPriorityClasses; c-- > 0;) {
    const auto& per_class = buckets_[c];
    for (std::size_t t = per_class.size(); t-- > 0;)
      if (!per_class[t].empty()) return per_class[t].front().slot;
  }
  return kNoSlot;
}

void BroadcastQueue::erase(std::uint32_t slot) {
  Entry& e = slots_[slot];
  order_erase(slot);
  index_.erase(index_key(e.kind, e.name.id()));
  e = Entry{};
  free_.push_back(slot);
}

void BroadcastQueue::insert(const Key& key, Name name, Message msg, PriorityClass cls, std::uint32_t transmit_cap) {
  std::uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Entry& e = slots_[slot];
  e.msg = std::move(msg);
  // A name no handle held yet is interned now.
  e.name = name.empty() && !key.second.empty() ? Name(key.second) : std::move(name);
  e.kind = key.first;
  e.cls = cls;
  e.transmits = 0;
  e.cap = transmit_cap;
  e.id = next_id_++;
  e.size = estimated_size(e.msg);
  index_.insert(index_key(e.kind, e.name.id()), slot);
  order_insert(slot);
}

PushResult BroadcastQueue::push(const Key& key, Message msg, PriorityClass cls, std::uint32_t transmit_cap) {
  // Hashed once: the lookup and the new entry's name share the id, held
  // here so that no erase() below (of the entry it replaces, or a victim under
  // the other kind with the same name) can free it meanwhile.
  const std::uint32_t name_id = identities().find_name(key.second);
  Name held = name_id != IdentityPool::kNone ? Name::of_id(name_id) : Name{};
  if (const std::uint32_t slot = find(key, name_id); slot != kNoSlot) {
    const Entry& old = slots_[slot];
    // UserData: the latest payload from a source always wins.
    if (key.first == Kind::kMember) {
      const std::uint64_t new_inc = message_incarnation(msg);
      const std::uint64_t old_inc = message_incarnation(old.msg);
      // Older incarnation, or a weaker claim about the same one: the queued entry wins.
      if (new_inc < old_inc || (new_inc == old_inc && state_strength(msg) < state_strength(old.msg))) {
        ++superseded_;
        return PushResult::kSuperseded;
      }
    }
    // Keep an urgent entry urgent: a refutation replaced by a newer Alive is
    // still the news that cancels a suspicion.
    if (old.cls == PriorityClass::kUrgent && key.first == Kind::kMember && state_strength(old.msg) == 0 &&
        state_strength(msg) == 0)
      cls = PriorityClass::kUrgent;
    erase(slot);
    insert(key, std::move(held), std::move(msg), cls, transmit_cap);
    return PushResult::kReplaced;
  }

  if (index_.size() >= max_entries_) {
    const std::uint32_t victim = last_in_order();
    if (victim == kNoSlot) {  // max_entries_ == 0: nothing can be queued
      ++drops_[static_cast<std::size_t>(cls)];
      return PushResult::kDropped;
    }
    // Victim: lowest class, most transmitted, oldest (the last in serve order).
    const PriorityClass victim_cls = slots_[victim].cls;
    // The queue holds only more important entries (never trade an urgent entry
    // for a non-urgent one): the newcomer is what we drop.
    if (victim_cls < cls) {
      ++drops_[static_cast<std::size_t>(cls)];
      return PushResult::kDropped;
    }
    ++drops_[static_cast<std::size_t>(victim_cls)];
    erase(victim);
  }
  insert(key, std::move(held), std::move(msg), cls, transmit_cap);
  return PushResult::kQueued;
}

PriorityClass BroadcastQueue::take(std::size_t budget_bytes, std::uint32_t transmit_limit, Compound& out) {
  PriorityClass highest = PriorityClass::kBulk;
  taken_.clear();
  std::size_t left = budget_bytes;
  int misses = 0;
  bool full = false;
  // Entries are read in serve order, which is not memory order: each is
  // fetched a few ahead of its turn.
  constexpr std::size_t kAhead = 4;
  // One bucket from its back (newest first). What it gives moves to the
  // next bucket: that one's header is asked for now, its ends (which need
  // the header) before the messages are copied, and both are read after.
  auto scan = [&](const std::vector<Bucket>& per_class, std::size_t t) {
    const Bucket& b = per_class[t];
    if (t + 1 < per_class.size()) __builtin_prefetch(&per_class[t + 1]);
    for (std::size_t i = b.size(); i-- > 0;) {
      // Smallest possible message, or several in a row too large: the datagram is
      // as full as it is worth (scanning on would make take() O(Q) per datagram).
      if (left < 4 || misses >= kMaxMisses) {
        full = true;
        return;
      }
      if (i >= kAhead) __builtin_prefetch(&slots_[b[i - kAhead].slot]);
      const std::uint32_t slot = b[i].slot;
      const Entry& e = slots_[slot];
      if (e.size > left) {
        ++misses;
        continue;
      }
      misses = 0;
      left -= e.size;
      if (e.cls < highest) highest = e.cls;
      taken_.push_back(slot);
    }
  };
  for (std::size_t c = 0; c < kPriorityClasses && !full; ++c) {
    const auto& per_class = buckets_[c];
    // The occupied buckets among the first kMapped, in order, then any past them.
    for (std::uint64_t occupied = occupied_[c]; occupied != 0 && !full; occupied &= occupied - 1)
      scan(per_class, static_cast<std::size_t>(std::countr_zero(occupied)));
    for (std::size_t t = kMapped; t < per_class.size() && !full; ++t) scan(per_class, t);
  }
  // The ends of the buckets the taken entries move to (taken_ runs bucket by
  // bucket), while the copies below keep the CPU busy.
  for (std::size_t i = 0; i < taken_.size(); ++i) {
    const Entry& e = slots_[taken_[i]];
    if (i > 0 && slots_[taken_[i - 1]].cls == e.cls && slots_[taken_[i - 1]].transmits == e.transmits) continue;
    const auto& per_class = buckets_[static_cast<std::size_t>(e.cls)];
    if (e.transmits + 1 < per_class.size()) per_class[e.transmits + 1].prefetch_ends();
  }
  // Copied once the count is known: one allocation for the datagram's messages.
  out.reserve(out.size() + taken_.size());
  for (std::uint32_t slot : taken_) out.push_back(slots_[slot].msg);
  for (std::uint32_t slot : taken_) {
    Entry& e = slots_[slot];
    const std::uint32_t limit = e.cap != 0 ? std::min(e.cap, transmit_limit) : transmit_limit;
    if (e.transmits + 1 >= limit) {
      erase(slot);
      ++retired_;
      continue;
    }
    order_erase(slot);
    ++e.transmits;
    order_insert(slot);
  }
  return highest;
}

std::uint32_t BroadcastQueue::transmits(const Key& key) const {
  const std::uint32_t slot = find(key);
  return slot == kNoSlot ? 0 : slots_[slot].transmits;
}

void BroadcastQueue::clear() {
  slots_.clear();
  free_.clear();
  index_.clear();
  for (auto& per_class : buckets_) per_class.clear();
  occupied_ = {};
}

}  // namespace gw::cp::engine
