#include "control/host/member_event_log.h"

#include <spdlog/spdlog.h>

namespace gw::cp {

const char* event_kind_name(engine::EventKind k) {
  switch (k) {
    case engine::EventKind::kJoin:
      return "join";
    case engine::EventKind::kLeave:
      return "leave";
    case engine::EventKind::kFailed:
      return "failed";
    case engine::EventKind::kUpdate:
      return "update";
  }
  return "unknown";
}

void MemberEventLog::record(engine::MemberEvent e) {
  ++counts_[static_cast<std::size_t>(e.kind)];
  const bool loud = e.kind != engine::EventKind::kUpdate;
  spdlog::log(loud ? spdlog::level::info : spdlog::level::debug, "member {} {} (incarnation {})", e.node,
              event_kind_name(e.kind), e.incarnation);
  if (listener_) listener_(e);
  if (recent_.size() == kRecent) recent_.pop_front();
  recent_.push_back(std::move(e));
}

}  // namespace gw::cp
