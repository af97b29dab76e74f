// Priority classes, written once. The gateway header carries one (wire
// byte 5), the dataplane queues by it and the membership engine chooses it.
// A header of its own so that control/engine/, which must not depend on the
// wire format or libsodium, includes only this enum.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gw::crypto {

// Highest first (DESIGN.md). Numeric values are on the wire.
enum class PriorityClass : std::uint8_t { kUrgent = 0, kProbe = 1, kGossip = 2, kBulk = 3 };
inline constexpr std::size_t kClassCount = 4;

}  // namespace gw::crypto
