#include "control/host/message_stats.h"

#include <span>

#include "control/codec.h"

namespace gw::cp {

static_assert(kMsgTypeCount == std::variant_size_v<engine::Message>, "one counter per engine message type");

void count_messages(const std::uint8_t* data, std::size_t len, ControlCounters& counters) {
  const std::optional<BodyCounts> counts = count_bodies(std::span<const std::uint8_t>(data, len));
  if (!counts) {
    ++counters.msg_decode_error;
    return;
  }
  for (std::size_t i = 0; i < kMsgTypeCount; ++i) counters.msgs[i] += counts->by_type[i];
  counters.msg_unknown += counts->unknown;
}

}  // namespace gw::cp
