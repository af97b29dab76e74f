// Priority classes, written once. The gateway header carries one (wire
// byte 5), the dataplane queues by it, the egress shaper orders by it and the
// membership engine chooses it. Shared vocabulary (base/): crypto::PriorityClass
// and engine::PriorityClass are this enum.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gw::base {

// Highest first (DESIGN.md). Numeric values are on the wire.
enum class PriorityClass : std::uint8_t { kUrgent = 0, kProbe = 1, kGossip = 2, kBulk = 3 };
inline constexpr std::size_t kClassCount = 4;

}  // namespace gw::base
