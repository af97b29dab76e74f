// StableArray: a growable array whose elements never move (what std::deque
// was used for in the member table and the identity pool), indexed with one
// shift and one mask. libstdc++'s deque indexes through its iterator's
// operator+=, a signed division and two dependent loads; at 10,000 members
// that indexing was 2-5 % of the simulator's time (issue 16).
//
// Elements live in fixed chunks of 2^kShift; a chunk is allocated when the
// first element in it is appended and kept until clear(). Only appending
// (and clearing) changes the size.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace gw::cp::engine {

template <typename T, unsigned kShift = 6>
class StableArray {
 public:
  static constexpr std::size_t kChunk = std::size_t{1} << kShift;

  StableArray() = default;
  StableArray(StableArray&&) noexcept = default;
  StableArray& operator=(StableArray&&) noexcept = default;
  StableArray(const StableArray& o) {
    for (std::size_t i = 0; i < o.size_; ++i) push_back(o[i]);
  }
  StableArray& operator=(const StableArray& o) {
    if (this != &o) {
      clear();
      for (std::size_t i = 0; i < o.size_; ++i) push_back(o[i]);
    }
    return *this;
  }

  T& operator[](std::size_t i) { return chunks_[i >> kShift][i & (kChunk - 1)]; }
  const T& operator[](std::size_t i) const { return chunks_[i >> kShift][i & (kChunk - 1)]; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if ((size_ & (kChunk - 1)) == 0 && (size_ >> kShift) == chunks_.size())
      chunks_.push_back(std::make_unique<T[]>(kChunk));
    T& slot = (*this)[size_++];
    slot = T(std::forward<Args>(args)...);
    return slot;
  }
  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }

  // Every element goes (chunks are freed).
  void clear() {
    chunks_.clear();
    size_ = 0;
  }

  // Calls fn(element) for each in index order.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (std::size_t i = 0; i < size_; ++i) fn((*this)[i]);
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  std::size_t size_ = 0;
};

}  // namespace gw::cp::engine
