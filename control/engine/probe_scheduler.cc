#include "control/engine/probe_scheduler.h"

namespace gw::cp::engine {

void ProbeScheduler::rebuild(const MemberTable& table, const std::string& self, Rng& rng) {
  list_.clear();
  table.for_each([&](const Member& m) {
    if (m.name != self && !m.is_tombstone()) list_.push_back(m.name);
  });
  rng.shuffle(list_);
  index_ = 0;
}

std::optional<std::string> ProbeScheduler::next_target(const MemberTable& table,
                                                       const std::string& self, Rng& rng) {
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
  return &relays_.insert_or_assign(our_seq, std::move(relay)).first->second;
}

}  // namespace gw::cp::engine
