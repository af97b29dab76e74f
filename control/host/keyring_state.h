// The keyring as changed at run time, kept in control.state_dir so that a
// restart comes back with the keys the cluster rotated to, not the ones the
// config named at first start (like Consul's local.keyring).
//
//   <state_dir>/            mode 0700, created if missing
//   <state_dir>/keyring.json  mode 0600: {"version":1,"primary":"<hex key>","keys":["<hex key>",...]}
//
// Written atomically (temporary file, fsync, rename, fsync of the directory),
// so a crash leaves the old or the new keyring, never half of one. Control
// lcore (or main thread before EAL) only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crypto/keys.h"

namespace gw::cp {

using KeyMaterial = std::map<std::uint32_t, crypto::KeyBytes>;

struct StoredKeyring {
  crypto::Keyring ring;
  KeyMaterial material;
  std::string path;  // the file it came from
};

constexpr const char* kKeyringStateFile = "keyring.json";

// The keyring in `dir`, or nullopt if the directory has none yet. Throws
// crypto::KeyError naming the file when it exists but cannot be used: not a
// regular file, readable by group or others, malformed, no primary, a key
// twice, more than Keyring::kMaxKeys keys.
std::optional<StoredKeyring> load_keyring_state(const std::string& dir, crypto::Suite suite);

// Writes `ring` (whose every key must be in `material`) to `dir`. Throws
// crypto::KeyError naming the path on failure (the old file stays).
void save_keyring_state(const std::string& dir, const crypto::Keyring& ring, const KeyMaterial& material);

// Keeps the keyring in `dir` the running one: sync() writes it at its first
// call and whenever the key ids or the primary changed since (a key command,
// node or cluster scope, or one from another member), so the next start
// loads what this one ended with. A failed write is logged and counted, not
// retried in a loop: the next change writes again.
class KeyringPersister {
 public:
  struct Counters {
    std::uint64_t writes = 0;        // keyring.json written
    std::uint64_t write_errors = 0;  // ... that failed (logged at error)
  };

  explicit KeyringPersister(std::string dir) : dir_(std::move(dir)) {}

  void sync(const crypto::Keyring& ring, const KeyMaterial& material);
  const Counters& counters() const noexcept { return counters_; }

 private:
  std::string dir_;
  bool synced_ = false;
  std::vector<std::uint32_t> ids_;
  std::uint32_t primary_ = 0;
  Counters counters_;
};

}  // namespace gw::cp
