// The key id that opened the last payload from each sender: how many members
// still use a key, during a rotation. Control lcore only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

#include "control/engine/messages.h"

namespace gw::cp {

class SenderKeys {
 public:
  static constexpr std::size_t kMax = 1 << 17;

  // Returns true when the table was full and was cleared first.
  bool note(const engine::Address& from, std::uint32_t key_id) {
    const auto it = keys_.find(from);
    if (it != keys_.end()) {
      it->second = key_id;
      return false;
    }
    // Bounded: authenticated senders only, but a cluster can have many;
    // forget all and relearn rather than grow without limit.
    const bool reset = keys_.size() >= kMax;
    if (reset) keys_.clear();
    keys_.emplace(from, key_id);
    return reset;
  }

  std::optional<std::uint32_t> find(const engine::Address& a) const {
    const auto it = keys_.find(a);
    if (it == keys_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::map<engine::Address, std::uint32_t> keys_;
};

}  // namespace gw::cp
