#include "control/engine/messages.h"

#include <iterator>

namespace gw::cp::engine {

const char* message_type_name(std::size_t variant_index) {
  static constexpr const char* kNames[] = {"ping", "ack",   "indirect_ping", "nack",          "alive",    "suspect",
                                           "dead", "leave", "sync_request",  "sync_response", "user_data"};
  static_assert(std::size(kNames) == kMessageTypes);
  return variant_index < kMessageTypes ? kNames[variant_index] : "unknown";
}

}  // namespace gw::cp::engine
