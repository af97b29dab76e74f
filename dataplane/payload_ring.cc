#include "dataplane/payload_ring.h"

#include <new>
#include <stdexcept>
#include <string>

namespace gw::dp {

PayloadRing::PayloadRing(std::uint32_t capacity, std::uint32_t max_payload) {
  if (capacity == 0 || capacity > kMaxCapacity || (capacity & (capacity - 1)) != 0) {
    throw std::invalid_argument("payload ring capacity must be a power of two in 1.." + std::to_string(kMaxCapacity) +
                                ", got " + std::to_string(capacity));
  }
  if (max_payload == 0 || max_payload > kMaxPayload) {
    throw std::invalid_argument("payload ring records must hold 1.." + std::to_string(kMaxPayload) + " bytes, got " +
                                std::to_string(max_payload));
  }
  mask_ = capacity - 1;
  max_payload_ = max_payload;
  const std::size_t bytes = bytes_for(capacity, max_payload);
  lines_ = static_cast<std::uint32_t>(bytes / kLine);
  // Not the EAL heap: nothing here is DMA'd, and it may be large (rings.size
  // x limits.max_payload_bytes per ring). Huge pages where the kernel allows.
  area_ = HugeArea(bytes);
  base_ = static_cast<std::uint8_t*>(area_.data());
}

PayloadRing::~PayloadRing() = default;

}  // namespace gw::dp
