#include "dataplane/huge_area.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <utility>

namespace gw::dp {

HugeArea::HugeArea(std::size_t bytes) : size_(bytes) {
  if (bytes == 0) throw std::bad_alloc();
  if (bytes < kHugePage) {
    // Small (tests, fuzzers, tiny configs): the heap, no system call.
    data_ = ::operator new (bytes, std::align_val_t{kSmallAlign});
    std::memset(data_, 0, bytes);
    return;
  }
  const std::size_t want = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  // One huge page more than needed, so the area can start on a boundary.
  map_bytes_ = want + kHugePage;
  map_ = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw std::bad_alloc();
  }
  const auto start = (reinterpret_cast<std::uintptr_t>(map_) + kHugePage - 1) / kHugePage * kHugePage;
  data_ = reinterpret_cast<void*>(start);
  (void)madvise(data_, want, MADV_HUGEPAGE);  // advice only: fine if refused
  std::memset(data_, 0, want);                // fault every page in now, not on the hot path
}

HugeArea::~HugeArea() { release(); }

HugeArea::HugeArea(HugeArea&& o) noexcept
    : map_(std::exchange(o.map_, nullptr)),
      map_bytes_(std::exchange(o.map_bytes_, 0)),
      data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}

HugeArea& HugeArea::operator=(HugeArea&& o) noexcept {
  if (this != &o) {
    release();
    map_ = std::exchange(o.map_, nullptr);
    map_bytes_ = std::exchange(o.map_bytes_, 0);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void HugeArea::release() noexcept {
  if (map_ != nullptr) {
    munmap(map_, map_bytes_);
  } else if (data_ != nullptr) {
    ::operator delete (data_, std::align_val_t{kSmallAlign});
  }
  map_ = nullptr;
  data_ = nullptr;
}

}  // namespace gw::dp
