// Fuzz target: an authenticated payload as the control lcore sees it. The
// message counter and the engine codec both decode it; neither may crash or
// throw, and they must agree on whether it is a Compound at all.
#include <google/protobuf/arena.h>

#include <cstdint>
#include <cstdlib>
#include <span>

#include "control/codec.h"
#include "control/host/key_ops.h"
#include "control/host/message_stats.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  google::protobuf::Arena arena;
  gw::cp::ControlCounters counters;
  gw::cp::count_messages(data, size, arena, counters);

  const gw::cp::DecodeResult r = gw::cp::decode(std::span<const std::uint8_t>(data, size));
  if (counters.msg_decode_error != 0 && r.error != gw::cp::DecodeError::kMalformed &&
      r.error != gw::cp::DecodeError::kTooLarge) {
    std::abort();  // protobuf refused it but the codec claims success
  }
  if (r.ok()) {
    // What decodes must re-encode to something that decodes to the same count.
    const auto again = gw::cp::decode(gw::cp::encode(r.messages));
    if (!again.ok() || again.messages.size() != r.messages.size()) std::abort();
  }
  // Key commands ride in the same Compound (cluster-wide rotation): what
  // decodes re-encodes to the same command or result.
  if (const auto kc = gw::cp::decode_key_control(std::span<const std::uint8_t>(data, size))) {
    if (kc->command.has_value() == kc->result.has_value()) std::abort();
    if (kc->command) {
      const auto again = gw::cp::decode_key_control(gw::cp::encode_key_command(*kc->command));
      if (!again || !again->command || again->command->request_id != kc->command->request_id ||
          again->command->change.op != kc->command->change.op || again->command->change.id != kc->command->change.id ||
          again->command->origin != kc->command->origin) {
        std::abort();
      }
    } else {
      const auto again = gw::cp::decode_key_control(gw::cp::encode_key_result(*kc->result));
      if (!again || !again->result || again->result->node != kc->result->node || again->result->ok != kc->result->ok) {
        std::abort();
      }
    }
  }
  return 0;
}
