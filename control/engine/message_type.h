// The membership message types and their names, written once. The order is
// that of gw.proto.Message's body oneof (field number - 1), which is also the
// alternative order of engine::Message. Header only and pure, so the control
// host's counters and perf/gossipgen use it without linking the engine.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace gw::cp::engine {

enum class MessageType : std::uint8_t {
  kPing,
  kAck,
  kIndirectPing,
  kNack,
  kAlive,
  kSuspect,
  kDead,
  kLeave,
  kSyncRequest,
  kSyncResponse,
  kUserData,
};

inline constexpr std::size_t kMessageTypeCount = 11;

// By numeric value: the short stable names counters and logs use.
inline constexpr std::array<const char*, kMessageTypeCount> kMessageTypeNames = {
    "ping", "ack",   "indirect_ping", "nack",          "alive",     "suspect",
    "dead", "leave", "sync_request",  "sync_response", "user_data",
};

// "ping", "ack", ...; "unknown" for a value outside the enum.
constexpr const char* message_type_name(MessageType t) noexcept {
  const auto i = static_cast<std::size_t>(t);
  return i < kMessageTypeCount ? kMessageTypeNames[i] : "unknown";
}

}  // namespace gw::cp::engine
