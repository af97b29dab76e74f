#include "dataplane/replay.h"

#include <bit>
#include <cstring>

namespace gw::dp {

ReplayTable::ReplayTable(std::size_t capacity, std::uint64_t seed, std::uint32_t window_s, std::uint32_t per_source)
    : capacity_(capacity < 1 ? 1 : capacity),
      key_(table_key(seed)),
      window_s_(window_s),
      per_source_limit_(per_source) {
  const std::size_t slots = std::bit_ceil(capacity_ * 2);
  mask_ = slots - 1;
  tags_ = HugeArray<Tag>(slots);
  entries_ = HugeArray<Entry>(slots);
  // Four counts per window: two sources share a count (and so a share) in
  // about one pair of members in four thousand at full load.
  if (per_source_limit_ != 0) per_source_.assign(std::bit_ceil(capacity_ * 4), 0);
}

std::uint32_t ReplayTable::source_slot(const SourceAddress& a) const noexcept {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::memcpy(&lo, a.ip.data(), 8);
  std::memcpy(&hi, a.ip.data() + 8, 8);
  // Keyed with the table's key, but a different input than home(): the
  // length byte is folded into the high word.
  return static_cast<std::uint32_t>(keyed_hash(key_, lo, hi ^ (std::uint64_t{a.ip_len} << 56) ^ 0x5A)) &
         static_cast<std::uint32_t>(per_source_.size() - 1);
}

std::size_t ReplayTable::victim(std::uint32_t ts) const noexcept {
  std::size_t best = kMissing;
  std::uint32_t best_ts = ts;  // only windows older than the newcomer
  for (std::size_t n = 0, i = cursor_; n < kEvictScan; ++n, i = (i + 1) & mask_) {
    const std::uint32_t m = tags_[i].max_ts;
    if (m != 0 && m < best_ts) {
      best = i;
      best_ts = m;
    }
  }
  return best;
}

ReplayCheck ReplayTable::check_new(std::uint32_t ts, const SourceAddress* src) const noexcept {
  // The table forgot windows whose datagrams were stamped before floor_ts_:
  // a sender without a window stamped before it may be one of them.
  if (ts < floor_ts_) return ReplayCheck::kReplay;
  if (src != nullptr && !per_source_.empty() && per_source_[source_slot(*src)] >= per_source_limit_) {
    return ReplayCheck::kNoRoom;
  }
  if (full() && victim(ts) == kMissing) return ReplayCheck::kNoRoom;
  return ReplayCheck::kFresh;
}

bool ReplayTable::commit(const ReplayKey& k, std::uint32_t counter, std::uint32_t timestamp,
                         const SourceAddress* src) noexcept {
  const std::uint32_t ts = timestamp == 0 ? 1 : timestamp;
  std::size_t end = 0;
  const std::size_t i = slot_of(k, &end);
  if (i != kMissing) {
    Entry& e = entries_[i];
    Tag& t = tags_[i];
    if (ts < e.floor_ts) return false;
    if (e.window.is_fresh(counter)) {
      e.window.commit(counter);
    } else if (ts > t.max_ts) {
      // Rebase: everything accepted so far was stamped at or before max_ts.
      e.floor_ts = t.max_ts + 1;
      e.window.reset(counter);
      ++rebased_;
    } else {
      return false;
    }
    if (ts > t.max_ts) t.max_ts = ts;
    return true;
  }
  // A new sender, and `end` the empty slot its probe ended on.
  if (check_new(ts, src) != ReplayCheck::kFresh) return false;
  if (full()) {
    forget(victim(ts));  // check_new found one
    ++evicted_;
    // The erase may have shifted entries: find the empty slot again.
    (void)slot_of(k, &end);
  }
  tags_[end] = Tag{k.epoch, k.key_id, ts};
  Entry& e = entries_[end];
  e.key = k;
  e.window.reset(counter);
  // The epoch may have had a window the table forgot: what it accepted was
  // stamped before the table's floor, which this window keeps.
  e.floor_ts = floor_ts_;
  e.src_slot = kNoSlot;
  if (src != nullptr && !per_source_.empty()) {
    e.src_slot = source_slot(*src);
    ++per_source_[e.src_slot];
  }
  ++size_;
  return true;
}

void ReplayTable::age(std::uint32_t now_s, std::size_t steps) noexcept {
  for (std::size_t n = 0; n < steps && size_ != 0; ++n) {
    const Tag& t = tags_[cursor_];
    // Stale means older than window_s (the ladder's check): every datagram
    // of this window had a timestamp <= max_ts.
    if (t.max_ts != 0 && now_s > t.max_ts && now_s - t.max_ts > window_s_) {
      forget(cursor_);  // may pull a later entry into cursor_: look again next step
      ++expired_;
      continue;
    }
    cursor_ = (cursor_ + 1) & mask_;
  }
}

void ReplayTable::forget(std::size_t i) noexcept {
  // Whatever it accepted was stamped at or before max_ts: a sender without
  // a window must now be stamped later. In steady state this is older than
  // the timestamp window (it refuses nothing the window would take); it
  // matters after an eviction and when our clock steps back.
  const std::uint32_t m = tags_[i].max_ts;
  if (m + 1 > floor_ts_) floor_ts_ = m + 1;
  erase(i);
}

void ReplayTable::erase(std::size_t i) noexcept {
  if (entries_[i].src_slot != kNoSlot) --per_source_[entries_[i].src_slot];
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
