// Key changes on a running gateway: applied to a copy of the published
// keyring, which is then published as a new dataplane snapshot (workers switch
// between bursts; the control lcore seals with the new primary at once). Used
// node by node by the control API, and cluster-wide through KeyCommand
// datagrams (proto/gossip.proto) that EngineHost sends and answers.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "crypto/keys.h"
#include "dataplane/api/snapshot.h"

namespace gw::cp {

struct KeyChange {
  // kList changes nothing: the members answer with their keyrings.
  enum class Op : std::uint8_t { kInstall = 1, kUse = 2, kRemove = 3, kList = 4 };
  Op op = Op::kInstall;
  crypto::KeyBytes key{};  // install
  std::uint32_t id = 0;    // use, remove (install: derived from key)
  bool primary = false;    // install: also make it primary (node scope only)
};

const char* key_op_name(KeyChange::Op op);

// Applies `change` to a copy of the current keyring and publishes it.
// Returns an empty string on success, else why it was refused (nothing is
// published then). `idempotent`: installing a key already present or
// removing one already gone succeeds (cluster-wide retries and members that
// already made the change).
std::string apply_key_change(dp::SnapshotExchange& snapshots, crypto::Suite suite, const KeyChange& change,
                             bool idempotent);

struct KeyCommandMsg {
  std::uint64_t request_id = 0;
  KeyChange change;
  std::string origin;
};
struct KeyResultMsg {
  std::uint64_t request_id = 0;
  std::string node;
  bool ok = false;
  std::string error;
  std::vector<std::uint32_t> key_ids;  // list: the member's keyring (at most Keyring::kMaxKeys)
  std::uint32_t primary = 0;           // list: its primary
};
struct KeyControl {
  std::optional<KeyCommandMsg> command;
  std::optional<KeyResultMsg> result;
};

// A Compound carrying only a key command or result; deterministic bytes.
std::vector<std::uint8_t> encode_key_command(const KeyCommandMsg& m);
std::vector<std::uint8_t> encode_key_result(const KeyResultMsg& m);
// The key command or result in an (authenticated, opened) payload; nullopt
// when it carries neither, or one that does not validate (wrong key length,
// unknown op, oversized strings). Never throws.
std::optional<KeyControl> decode_key_control(std::span<const std::uint8_t> bytes);

}  // namespace gw::cp
