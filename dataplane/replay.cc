#include "dataplane/replay.h"

#include <bit>

namespace gw::dp {

ReplayTable::ReplayTable(std::size_t capacity, std::uint64_t seed) : seed_(seed) {
  const std::size_t want = capacity < kWays ? kWays : capacity;
  sets_ = std::bit_ceil(want) / kWays;
  entries_ = HugeArray<Entry>(sets_ * kWays);
}

void ReplayTable::commit(const ReplayKey& k, std::uint32_t counter) noexcept {
  Entry* set = &entries_[set_of(k) * kWays];
  Entry* victim = &set[0];
  for (std::size_t i = 0; i < kWays; ++i) {
    Entry& e = set[i];
    if (e.last_used != 0 && e.key == k) {
      e.window.commit(counter);
      e.last_used = ++tick_;
      return;
    }
    // Prefer an empty slot, else the least recently used one.
    if (victim->last_used != 0 && (e.last_used == 0 || e.last_used < victim->last_used)) victim = &e;
  }
  if (victim->last_used != 0) {
    ++evictions_;
  } else {
    ++size_;
  }
  victim->key = k;
  victim->window.reset(counter);
  victim->last_used = ++tick_;
}

}  // namespace gw::dp
