// Fuzz target: an authenticated payload as the control lcore sees it. The
// message counter and the engine codec both decode it; neither may crash or
// throw, and they must agree on whether it is a Compound at all.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "control/codec.h"
#include "control/host/message_stats.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gw::cp::ControlCounters counters;
  gw::cp::count_messages(data, size, counters);

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
  // Key commands ride in the same Compound (cluster-wide rotation), decoded
  // in the same pass: what decodes re-encodes to the same command or result.
  if (r.key_control) {
    const gw::cp::KeyControl& kc = *r.key_control;
    if (!r.messages.empty() || kc.command.has_value() == kc.result.has_value()) std::abort();
    const auto again =
        gw::cp::decode(kc.command ? gw::cp::encode_key_command(*kc.command) : gw::cp::encode_key_result(*kc.result));
    if (!again.ok() || !again.key_control || again.key_control->command != kc.command ||
        again.key_control->result != kc.result) {
      std::abort();
    }
  }
  return 0;
}
