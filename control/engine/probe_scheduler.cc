#include "control/engine/probe_scheduler.h"

#include <algorithm>

namespace gw::cp::engine {

void ProbeScheduler::rebuild(const MemberTable& table, const std::string& self, Rng& rng) {
  list_.clear();
  table.for_each([&](const Member& m) {
    if (m.name != self && !m.is_tombstone()) list_.push_back(m.name);
  });
  rng.shuffle(list_);
  index_ = 0;
}

std::optional<std::string> ProbeScheduler::next_target(const MemberTable& table, const std::string& self, Rng& rng) {
  // At most one reshuffle per call: after it every entry is valid, so the walk ends.
  bool rebuilt = false;
  for (;;) {
    if (index_ >= list_.size()) {
      if (rebuilt) return std::nullopt;
      rebuild(table, self, rng);
      rebuilt = true;
      if (list_.empty()) return std::nullopt;
    }
    const Name& name = list_[index_++];
    const Member* m = table.find(name);
    // Dead, left or forgotten since the shuffle: nobody to probe there.
    if (m == nullptr || m->is_tombstone() || name == self) continue;
    return name.str();
  }
}

void ProbeScheduler::add_member(const Name& name, Rng& rng) {
  // Bounded: a list that is already table-sized waits for the next reshuffle.
  if (list_.size() >= max_list_) return;
  list_.push_back(name);
  // Swap into a random position in [index_, end): still probed this round.
  const std::size_t remaining = list_.size() - index_;
  const std::size_t pos = index_ + static_cast<std::size_t>(rng.uniform(remaining));
  std::swap(list_[pos], list_.back());
}

Relay* ProbeScheduler::add_relay(std::uint32_t our_seq, Relay relay) {
  // Bounded: a flood of indirect pings must not grow memory.
  if (relays_.size() >= max_relays_) return nullptr;
  erase_relay(our_seq);  // a number reused: the new relay replaces the old
  relay_deadlines_.emplace(relay.deadline_ns, our_seq);
  return &relays_.emplace(our_seq, std::move(relay)).first->second;
}

const Relay* ProbeScheduler::find_relay(std::uint32_t our_seq) const {
  auto it = relays_.find(our_seq);
  return it == relays_.end() ? nullptr : &it->second;
}

void ProbeScheduler::erase_relay(std::uint32_t our_seq) {
  auto it = relays_.find(our_seq);
  if (it == relays_.end()) return;
  relay_deadlines_.erase({it->second.deadline_ns, our_seq});
  relays_.erase(it);
}

std::uint64_t ProbeScheduler::earliest_relay_deadline() const {
  return relay_deadlines_.empty() ? UINT64_MAX : relay_deadlines_.begin()->first;
}

std::vector<std::uint32_t> ProbeScheduler::due_relays(std::uint64_t now_ns) const {
  std::vector<std::uint32_t> out;
  for (const auto& [deadline, seq] : relay_deadlines_) {
    if (deadline > now_ns) break;
    out.push_back(seq);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gw::cp::engine
