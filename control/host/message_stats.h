// Counts the membership messages that reach the control lcore, by type.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "control/engine/message_type.h"
#include "crypto/wire_header.h"
#include "dataplane/api/handoff.h"

namespace gw::cp {

// Order follows the `Message.body` oneof in proto/gossip.proto; the counter
// of each type is "msg_" and its name (engine::message_type_name).
using MsgType = engine::MessageType;
inline constexpr std::size_t kMsgTypeCount = engine::kMessageTypeCount;

struct ControlCounters {
  std::array<std::uint64_t, kMsgTypeCount> msgs{};
  // Authenticated payloads that are not a valid Compound (a peer's bug).
  std::uint64_t msg_decode_error = 0;
  // Messages whose body is a type this build does not know (a newer peer).
  std::uint64_t msg_unknown = 0;
  // Payloads taken off the rings, by priority class.
  std::array<std::uint64_t, crypto::kClassCount> handoffs_by_class{};
  // The deepest any worker's ring of each class was when the control lcore
  // came to drain it: how close the class came to ring-full.
  std::array<std::uint64_t, crypto::kClassCount> ring_depth_max{};
  // Payloads taken off the rings and not served, by dp::Once value: [1]
  // already accepted through another worker (handoff_drop_replay), [2] no
  // once-only window free (handoff_drop_replay_table_full).
  std::array<std::uint64_t, 3> once_refused{};
  // Decoded payloads dropped because their header class is more urgent than
  // their messages justify (engine::class_fits), by header class: a key
  // holder cannot have bulk content served as urgent (class_drop_mismatch).
  std::array<std::uint64_t, crypto::kClassCount> class_drop_mismatch{};
};

// Counts one opened payload's messages by type, through the codec
// (control/codec.h), without decoding them for an engine.
void count_messages(const std::uint8_t* data, std::size_t len, ControlCounters& counters);

}  // namespace gw::cp
