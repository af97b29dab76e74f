// A member's status and its names, written once. Header only and pure (no
// other module, no allocation), so the control API's request parser and
// gossipctl use the names without linking the engine.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gw::cp::engine {

// Numeric values equal gw.proto.MemberStatus.
enum class MemberStatus : std::uint8_t { kAlive = 0, kSuspect = 1, kDead = 2, kLeft = 3 };

inline constexpr std::size_t kMemberStatusCount = 4;

// By numeric value: what the control API, gossipctl, the counters and the
// event handlers' lines call each status.
inline constexpr std::array<const char*, kMemberStatusCount> kMemberStatusNames = {"alive", "suspect", "dead", "left"};

// "alive", "suspect", "dead", "left"; "unknown" for a value outside the enum.
constexpr const char* status_name(MemberStatus s) noexcept {
  const auto i = static_cast<std::size_t>(s);
  return i < kMemberStatusCount ? kMemberStatusNames[i] : "unknown";
}

// The status a name stands for; nullopt for any other text.
constexpr std::optional<MemberStatus> parse_member_status(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kMemberStatusCount; ++i) {
    if (name == kMemberStatusNames[i]) return static_cast<MemberStatus>(i);
  }
  return std::nullopt;
}

}  // namespace gw::cp::engine
