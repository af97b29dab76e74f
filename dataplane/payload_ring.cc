#include "dataplane/payload_ring.h"

#include <sys/mman.h>

#include <new>
#include <stdexcept>
#include <string>

namespace gw::dp {

PayloadRing::PayloadRing(std::uint32_t capacity, std::uint32_t max_payload) {
  if (capacity == 0 || capacity > kMaxCapacity || (capacity & (capacity - 1)) != 0) {
    throw std::invalid_argument("payload ring capacity must be a power of two in 1.." +
                                std::to_string(kMaxCapacity) + ", got " + std::to_string(capacity));
  }
  if (max_payload == 0) throw std::invalid_argument("payload ring slots must hold at least one byte");
  mask_ = capacity - 1;
  max_payload_ = max_payload;
  // Whole cache lines, with room for the last 16-byte piece push() writes.
  stride_ = (kDataOffset + max_payload + kReadPast + 63) & ~std::size_t{63};
  bytes_ = stride_ * capacity;
  // Anonymous memory, not the EAL heap: nothing here is DMA'd, and it may be
  // large (rings.size x limits.max_payload_bytes per ring). Transparent huge
  // pages where the kernel allows, to spare the TLB.
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  (void)madvise(p, bytes_, MADV_HUGEPAGE);  // advice only: fine if refused
  base_ = static_cast<std::uint8_t*>(p);
  std::memset(base_, 0, bytes_);  // fault every page in now, not on the hot path
}

PayloadRing::~PayloadRing() { munmap(base_, bytes_); }

}  // namespace gw::dp
