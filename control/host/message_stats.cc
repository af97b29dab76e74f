#include "control/host/message_stats.h"

#include <google/protobuf/arena.h>

#include "gossip.pb.h"

namespace gw::cp {

void count_messages(const std::uint8_t* data, std::size_t len, google::protobuf::Arena& arena,
                    ControlCounters& counters) {
  auto* compound = google::protobuf::Arena::CreateMessage<proto::Compound>(&arena);
  if (len > static_cast<std::size_t>(INT32_MAX) ||
      !compound->ParseFromArray(data, static_cast<int>(len))) {
    ++counters.msg_decode_error;
    return;
  }
  for (const proto::Message& m : compound->messages()) {
    switch (m.body_case()) {
      case proto::Message::kPing: ++counters.msgs[static_cast<std::size_t>(MsgType::kPing)]; break;
      case proto::Message::kAck: ++counters.msgs[static_cast<std::size_t>(MsgType::kAck)]; break;
      case proto::Message::kIndirectPing: ++counters.msgs[static_cast<std::size_t>(MsgType::kIndirectPing)]; break;
      case proto::Message::kNack: ++counters.msgs[static_cast<std::size_t>(MsgType::kNack)]; break;
      case proto::Message::kAlive: ++counters.msgs[static_cast<std::size_t>(MsgType::kAlive)]; break;
      case proto::Message::kSuspect: ++counters.msgs[static_cast<std::size_t>(MsgType::kSuspect)]; break;
      case proto::Message::kDead: ++counters.msgs[static_cast<std::size_t>(MsgType::kDead)]; break;
      case proto::Message::kLeave: ++counters.msgs[static_cast<std::size_t>(MsgType::kLeave)]; break;
      case proto::Message::kSyncRequest: ++counters.msgs[static_cast<std::size_t>(MsgType::kSyncRequest)]; break;
      case proto::Message::kSyncResponse: ++counters.msgs[static_cast<std::size_t>(MsgType::kSyncResponse)]; break;
      case proto::Message::kUserData: ++counters.msgs[static_cast<std::size_t>(MsgType::kUserData)]; break;
      case proto::Message::BODY_NOT_SET: ++counters.msg_unknown; break;
    }
  }
}

}  // namespace gw::cp
