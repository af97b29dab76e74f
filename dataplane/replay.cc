#include "dataplane/replay.h"

#include <bit>

namespace gw::dp {

ReplayTable::ReplayTable(std::size_t capacity, std::uint64_t seed, std::uint32_t window_s)
    : capacity_(capacity < 1 ? 1 : capacity), seed_(seed), window_s_(window_s) {
  const std::size_t slots = std::bit_ceil(capacity_ * 2);
  mask_ = slots - 1;
  tags_ = HugeArray<Tag>(slots);
  entries_ = HugeArray<Entry>(slots);
}

bool ReplayTable::commit(const ReplayKey& k, std::uint32_t counter, std::uint32_t timestamp) noexcept {
  const std::uint32_t ts = timestamp == 0 ? 1 : timestamp;
  std::size_t i = home(k);
  for (;; i = (i + 1) & mask_) {
    Tag& t = tags_[i];
    if (t.max_ts == 0) break;
    if (t.epoch == k.epoch && t.key_id == k.key_id) {
      entries_[i].window.commit(counter);
      if (ts > t.max_ts) t.max_ts = ts;
      return true;
    }
  }
  // A new sender, and `i` the empty slot its probe ended on.
  if (full()) return false;
  tags_[i] = Tag{k.epoch, k.key_id, ts};
  entries_[i].key = k;
  entries_[i].window.reset(counter);
  ++size_;
  return true;
}

void ReplayTable::age(std::uint32_t now_s, std::size_t steps) noexcept {
  for (std::size_t n = 0; n < steps && size_ != 0; ++n) {
    const Tag& t = tags_[cursor_];
    // Stale means older than window_s (the ladder's check): every datagram
    // of this window had a timestamp <= max_ts.
    if (t.max_ts != 0 && now_s > t.max_ts && now_s - t.max_ts > window_s_) {
      erase(cursor_);  // may pull a later entry into cursor_: look again next step
      ++expired_;
      continue;
    }
    cursor_ = (cursor_ + 1) & mask_;
  }
}

void ReplayTable::erase(std::size_t i) noexcept {
  // Backward-shift deletion: entries after `i` in its run move up into the
  // hole when their home slot does not lie (cyclically) in (i, j], so every
  // probe still reaches them before an empty slot.
  std::size_t j = i;
  for (;;) {
    j = (j + 1) & mask_;
    if (tags_[j].max_ts == 0) break;
    const std::size_t h = home(entries_[j].key);
    const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
    if (stays) continue;
    tags_[i] = tags_[j];
    entries_[i] = entries_[j];
    i = j;
  }
  tags_[i] = Tag{};
  --size_;
}

}  // namespace gw::dp
