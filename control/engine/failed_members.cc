#include "control/engine/failed_members.h"

namespace gw::cp::engine {

bool FailedMembers::add(const Name& name, const Address& addr, std::uint64_t incarnation, std::uint64_t now_ns) {
  remove(name.id());
  bool evicted = false;
  while (live_ >= capacity_ && !entries_.empty()) {
    Entry& oldest = entries_.front();
    if (oldest.live) {
      index_.erase(oldest.name.id());
      --live_;
      evicted = true;
    }
    entries_.pop_front();
    ++offset_;
  }
  index_[name.id()] = offset_ + entries_.size();
  entries_.push_back(Entry{name, addr, incarnation, now_ns, 0, true});
  ++live_;
  return evicted;
}

FailedMembers::Entry* FailedMembers::find(std::uint32_t name_id) {
  auto it = index_.find(name_id);
  return it == index_.end() ? nullptr : &entries_[it->second - offset_];
}

bool FailedMembers::remove(std::uint32_t name_id) {
  auto it = index_.find(name_id);
  if (it == index_.end()) return false;
  entries_[it->second - offset_].live = false;
  index_.erase(it);
  --live_;
  // Gone ones at the front go at once (so the front is the oldest live one);
  // the rest when they outnumber the live.
  while (!entries_.empty() && !entries_.front().live) {
    entries_.pop_front();
    ++offset_;
  }
  if (entries_.size() > 2 * live_ + 16) compact();
  return true;
}

std::size_t FailedMembers::expire(std::uint64_t now_ns, std::uint64_t timeout_ns) {
  std::size_t n = 0;
  while (!entries_.empty()) {
    Entry& e = entries_.front();
    if (e.live) {
      if (now_ns - std::min(now_ns, e.died_ns) < timeout_ns) break;
      index_.erase(e.name.id());
      --live_;
      ++n;
    }
    entries_.pop_front();
    ++offset_;
  }
  return n;
}

std::uint64_t FailedMembers::next_expiry(std::uint64_t timeout_ns) const {
  if (entries_.empty()) return UINT64_MAX;
  const std::uint64_t died = entries_.front().died_ns;
  return died > UINT64_MAX - timeout_ns ? UINT64_MAX : died + timeout_ns;
}

const FailedMembers::Entry* FailedMembers::pick(Rng& rng) const {
  if (live_ == 0) return nullptr;
  const auto start = static_cast<std::size_t>(rng.uniform(entries_.size()));
  for (std::size_t k = 0; k < entries_.size(); ++k) {
    const Entry& e = entries_[(start + k) % entries_.size()];
    if (e.live) return &e;
  }
  return nullptr;
}

void FailedMembers::compact() {
  std::deque<Entry> kept;
  index_.clear();
  for (Entry& e : entries_) {
    if (!e.live) continue;
    index_[e.name.id()] = kept.size();
    kept.push_back(std::move(e));
  }
  entries_.swap(kept);
  offset_ = 0;
}

}  // namespace gw::cp::engine
