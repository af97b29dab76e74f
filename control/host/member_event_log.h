// Member events for local consumers, as the control lcore drains them from
// the engine: each is logged (join, failed and left at info, update at
// debug), counted by kind, handed to a listener, and the most recent kept.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>

#include "control/engine/engine.h"

namespace gw::cp {

const char* event_kind_name(engine::EventKind k);

class MemberEventLog {
 public:
  static constexpr std::size_t kRecent = 256;

  // Control lcore only.
  void record(engine::MemberEvent e);

  const std::deque<engine::MemberEvent>& recent() const noexcept { return recent_; }
  // Events by kind: join, leave, failed, update.
  const std::array<std::uint64_t, 4>& counts() const noexcept { return counts_; }
  // Changes whenever a member event happened (for consumers that poll).
  std::uint64_t version() const noexcept { return counts_[0] + counts_[1] + counts_[2] + counts_[3]; }
  // Called on the control lcore for every event, after it is logged. Must
  // not block.
  void set_listener(std::function<void(const engine::MemberEvent&)> f) { listener_ = std::move(f); }

 private:
  std::deque<engine::MemberEvent> recent_;
  std::array<std::uint64_t, 4> counts_{};
  std::function<void(const engine::MemberEvent&)> listener_;
};

}  // namespace gw::cp
