// Memory for the worker's large tables (token buckets, replay windows, the
// hand-off rings): anonymous, faulted in at construction so the hot path
// never page-faults, and laid out for transparent huge pages where the kernel
// allows. A table touched at random (one source's bucket per packet) or
// walked through (the rings) on 4 KiB pages misses the TLB on most packets;
// on the benchmark VM, where every miss is a two-level page walk, those
// misses cost the valid path more than our own code (perf/HISTORY.md,
// issue 5).
//
// Areas of kHugePage or more are mapped on their own, start on a kHugePage
// boundary and are rounded up to whole huge pages, so every part of them can
// be a huge page. Smaller ones come from the heap, aligned to kSmallAlign
// (tests and fuzzers build many small tables; a mapping each was 24 times
// slower). Pure: no DPDK.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace gw::dp {

class HugeArea {
 public:
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  static constexpr std::size_t kSmallAlign = 64;

  HugeArea() = default;
  // Zeroed memory of at least `bytes` (>= 1). Throws std::bad_alloc when
  // the memory is not there.
  explicit HugeArea(std::size_t bytes);
  ~HugeArea();
  HugeArea(HugeArea&& o) noexcept;
  HugeArea& operator=(HugeArea&& o) noexcept;
  HugeArea(const HugeArea&) = delete;
  HugeArea& operator=(const HugeArea&) = delete;

  void* data() const noexcept { return data_; }
  // What was asked for, not what was mapped.
  std::size_t size() const noexcept { return size_; }

 private:
  void release() noexcept;

  void* map_ = nullptr;  // what mmap returned; null for heap areas
  std::size_t map_bytes_ = 0;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// `n` value-initialised T in a HugeArea: a table's slots.
template <class T>
class HugeArray {
 public:
  HugeArray() = default;
  explicit HugeArray(std::size_t n) : area_(n * sizeof(T)), n_(n) {
    static_assert(alignof(T) <= HugeArea::kSmallAlign, "HugeArea promises 64-byte alignment");
    std::uninitialized_value_construct_n(get(), n_);
  }
  ~HugeArray() { std::destroy_n(get(), n_); }
  HugeArray(HugeArray&& o) noexcept : area_(std::move(o.area_)), n_(o.n_) { o.n_ = 0; }
  HugeArray& operator=(HugeArray&& o) noexcept {
    if (this != &o) {
      std::destroy_n(get(), n_);
      area_ = std::move(o.area_);
      n_ = o.n_;
      o.n_ = 0;
    }
    return *this;
  }
  HugeArray(const HugeArray&) = delete;
  HugeArray& operator=(const HugeArray&) = delete;

  T& operator[](std::size_t i) noexcept { return get()[i]; }
  const T& operator[](std::size_t i) const noexcept { return get()[i]; }
  std::size_t size() const noexcept { return n_; }

 private:
  T* get() const noexcept { return static_cast<T*>(area_.data()); }

  HugeArea area_;
  std::size_t n_ = 0;
};

}  // namespace gw::dp
