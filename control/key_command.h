// Cluster-wide key changes as they travel between members: a KeyCommand and
// the KeyCommandResult that answers it (proto/gossip.proto). Plain values;
// control/codec.h turns them into bytes and back, control/host/key_change.h
// runs the protocol.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crypto/keys.h"
#include "crypto/operator_key.h"

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
  // The operator's authorisation (install, use, remove; issue 51): when it
  // was signed (Unix ns, the operator's clock) and its Ed25519 signature
  // over key_command_statement(). A list is not signed (all zero).
  std::uint64_t issued_unix_ns = 0;
  crypto::Signature signature{};
  bool operator==(const KeyCommandMsg&) const = default;
};

// What the operator signs for a cluster-wide key change: the change, the
// cluster it is for and when it was issued; nothing about who relays it.
//   "gossipgw/key-command/v1" || cluster_id (8, big-endian) || op (1)
//   || key id (4, big-endian) || key (32; install only, else zeros)
//   || issued_unix_ns (8, big-endian)
inline std::vector<std::uint8_t> key_command_statement(std::uint64_t cluster_id, const KeyChange& change,
                                                       std::uint64_t issued_unix_ns) {
  static constexpr std::string_view kLabel = "gossipgw/key-command/v1";
  std::vector<std::uint8_t> out(kLabel.begin(), kLabel.end());
  const auto be = [&out](std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  be(cluster_id, 8);
  out.push_back(static_cast<std::uint8_t>(change.op));
  const bool install = change.op == KeyChange::Op::kInstall;
  be(install ? crypto::derive_key_id(change.key) : change.id, 4);
  for (std::size_t i = 0; i < crypto::kKeyBytes; ++i) out.push_back(install ? change.key[i] : 0);
  be(issued_unix_ns, 8);
  return out;
}

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
