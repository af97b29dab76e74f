#include "control/engine/broadcast_queue.h"

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

void BroadcastQueue::erase(std::map<Key, Entry>::iterator it) {
  order_.erase(order_key(it->first, it->second));
  entries_.erase(it);
}

PushResult BroadcastQueue::push(Key key, Message msg, PriorityClass cls) {
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    const Entry& old = it->second;
    // UserData: the latest payload from a source always wins.
    if (key.first == Kind::kMember) {
      const std::uint64_t new_inc = message_incarnation(msg);
      const std::uint64_t old_inc = message_incarnation(old.msg);
      // Older incarnation, or a weaker claim about the same one: the queued entry wins.
      if (new_inc < old_inc ||
          (new_inc == old_inc && state_strength(msg) < state_strength(old.msg))) {
        ++superseded_;
        return PushResult::kSuperseded;
      }
    }
    // Keep an urgent entry urgent: a refutation replaced by a newer Alive is
    // still the news that cancels a suspicion.
    if (old.cls == PriorityClass::kUrgent && key.first == Kind::kMember &&
        state_strength(old.msg) == 0 && state_strength(msg) == 0)
      cls = PriorityClass::kUrgent;
    erase(it);
    Entry e{std::move(msg), cls, 0, next_id_++, 0};
    e.size = estimated_size(e.msg);
    order_.insert(order_key(key, e));
    entries_.emplace(std::move(key), std::move(e));
    return PushResult::kReplaced;
  }

  if (entries_.size() >= max_entries_) {
    if (order_.empty()) {  // max_entries_ == 0: nothing can be queued
      ++drops_[static_cast<std::size_t>(cls)];
      return PushResult::kDropped;
    }
    // Victim: lowest class, most transmitted, oldest (the last in serve order).
    const OrderKey victim = *std::prev(order_.end());
    const auto victim_cls = static_cast<PriorityClass>(std::get<0>(victim));
    // The queue holds only more important entries (never trade an urgent entry
    // for a non-urgent one): the newcomer is what we drop.
    if (victim_cls < cls) {
      ++drops_[static_cast<std::size_t>(cls)];
      return PushResult::kDropped;
    }
    ++drops_[static_cast<std::size_t>(victim_cls)];
    erase(entries_.find(std::get<3>(victim)));
  }
  Entry e{std::move(msg), cls, 0, next_id_++, 0};
  e.size = estimated_size(e.msg);
  order_.insert(order_key(key, e));
  entries_.emplace(std::move(key), std::move(e));
  return PushResult::kQueued;
}

PriorityClass BroadcastQueue::take(std::size_t budget_bytes, std::uint32_t transmit_limit,
                                   Compound& out) {
  PriorityClass highest = PriorityClass::kBulk;
  std::vector<Key> taken;
  std::size_t left = budget_bytes;
  int misses = 0;
  for (const OrderKey& ok : order_) {
    // Smallest possible message, or several in a row too large: the datagram is
    // as full as it is worth (scanning on would make take() O(Q) per datagram).
    if (left < 4 || misses >= kMaxMisses) break;
    const Key& key = std::get<3>(ok);
    const Entry& e = entries_.at(key);
    if (e.size > left) {
      ++misses;
      continue;
    }
    misses = 0;
    left -= e.size;
    out.push_back(e.msg);
    if (e.cls < highest) highest = e.cls;
    taken.push_back(key);
  }
  for (Key& key : taken) {
    auto it = entries_.find(key);
    order_.erase(order_key(it->first, it->second));
    ++it->second.transmits;
    if (it->second.transmits >= transmit_limit) {
      entries_.erase(it);
      ++retired_;
      continue;
    }
    order_.insert(order_key(it->first, it->second));
  }
  return highest;
}

std::uint32_t BroadcastQueue::transmits(const Key& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? 0 : it->second.transmits;
}

void BroadcastQueue::clear() {
  entries_.clear();
  order_.clear();
}

}  // namespace gw::cp::engine
