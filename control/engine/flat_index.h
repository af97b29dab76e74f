// A map from 64-bit keys to 32-bit values by open addressing: linear probing
// over a power-of-two array at most half full, backward-shift deletion (no
// tombstones, so lookups never slow down with churn). One array, no node per
// entry: a lookup reads one or two 16-byte slots. Iteration is not offered
// (nothing may depend on its order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gw::cp::engine {

class FlatIndex {
 public:
  static constexpr std::uint32_t kAbsent = UINT32_MAX;  // also the empty slot's value

  // The value for `key`, or kAbsent.
  std::uint32_t find(std::uint64_t key) const {
    if (slots_.empty()) return kAbsent;
    for (std::size_t i = home(key);; i = next(i)) {
      const Slot& s = slots_[i];
      if (s.value == kAbsent) return kAbsent;
      if (s.key == key) return s.value;
    }
  }
  // `key` must be absent; `value` must not be kAbsent.
  void insert(std::uint64_t key, std::uint32_t value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    std::size_t i = home(key);
    while (slots_[i].value != kAbsent) i = next(i);
    slots_[i] = Slot{key, value};
    ++size_;
  }
  // Removes `key` if present.
  void erase(std::uint64_t key) {
    if (slots_.empty()) return;
    std::size_t i = home(key);
    for (;; i = next(i)) {
      if (slots_[i].value == kAbsent) return;
      if (slots_[i].key == key) break;
    }
    // Backward shift: a later entry of the run moves into the hole unless its
    // home lies cyclically in (hole, its slot].
    for (std::size_t j = next(i); slots_[j].value != kAbsent; j = next(j)) {
      const std::size_t k = home(slots_[j].key);
      if (i <= j ? (i < k && k <= j) : (i < k || k <= j)) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i] = Slot{};
    --size_;
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() {
    slots_.assign(slots_.size(), Slot{});
    size_ = 0;
  }
  // Heap bytes held.
  std::size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  struct Slot {
    std::uint64_t key = 0;
    std::uint32_t value = kAbsent;
  };
  std::size_t home(std::uint64_t key) const {
    // splitmix64's finaliser: every key bit moves the slot.
    key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ULL;
    key = (key ^ (key >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<std::size_t>(key ^ (key >> 31)) & (slots_.size() - 1);
  }
  std::size_t next(std::size_t i) const { return (i + 1) & (slots_.size() - 1); }
  void grow() {
    std::vector<Slot> old(slots_.empty() ? 16 : 2 * slots_.size());
    old.swap(slots_);
    for (const Slot& s : old) {
      if (s.value == kAbsent) continue;
      std::size_t i = home(s.key);
      while (slots_[i].value != kAbsent) i = next(i);
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace gw::cp::engine
