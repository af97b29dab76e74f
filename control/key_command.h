// Cluster-wide key changes as they travel between members: a KeyCommand and
// the KeyCommandResult that answers it (proto/gossip.proto). Plain values;
// control/codec.h turns them into bytes and back, control/host/key_change.h
// runs the protocol.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crypto/keys.h"

namespace gw::cp {

struct KeyChange {
  // kList changes nothing: the members answer with their keyrings.
  enum class Op : std::uint8_t { kInstall = 1, kUse = 2, kRemove = 3, kList = 4 };
  Op op = Op::kInstall;
  crypto::KeyBytes key{};  // install
  std::uint32_t id = 0;    // use, remove (install: derived from key)
  bool primary = false;    // install: also make it primary (node scope only)
  bool operator==(const KeyChange&) const = default;
};

struct KeyCommandMsg {
  std::uint64_t request_id = 0;
  KeyChange change;
  std::string origin;
  bool operator==(const KeyCommandMsg&) const = default;
};

struct KeyResultMsg {
  std::uint64_t request_id = 0;
  std::string node;
  bool ok = false;
  std::string error;
  std::vector<std::uint32_t> key_ids;  // list: the member's keyring (at most Keyring::kMaxKeys)
  std::uint32_t primary = 0;           // list: its primary
  bool operator==(const KeyResultMsg&) const = default;
};

// What a payload without membership messages may carry: exactly one of them.
struct KeyControl {
  std::optional<KeyCommandMsg> command;
  std::optional<KeyResultMsg> result;
};

}  // namespace gw::cp
