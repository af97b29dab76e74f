// What a gateway changes at run time and must find again after a restart,
// kept in control.state_dir: the keyring, so that a restart comes back with
// the keys the cluster rotated to, not the ones the config named at first
// start (like Consul's local.keyring), and this member's tags as `gossipctl
// tags` left them (like Serf's tags file).
//
//   <state_dir>/            mode 0700, created if missing
//   <state_dir>/keyring.json  mode 0600: {"version":1,"primary":"<hex key>","keys":["<hex key>",...]}
//   <state_dir>/tags.json     mode 0600: {"version":1,"tags":[["<key>","<value>"],...]}
//
// Written atomically (temporary file, fsync, rename, fsync of the directory),
// so a crash leaves the old or the new keyring, never half of one. Control
// lcore (or main thread before EAL) only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
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
constexpr const char* kTagsStateFile = "tags.json";

// One rule for control.state_dir, at start and in `gossipctl config check`:
// it must be a directory this process can write (exit 2 with the reason
// otherwise: missing parent, a path under a regular file, not a directory,
// read-only file system, permission). `create`: make it (mode 0700, the last
// component only) if it is missing, as the gateway does at start; without,
// a missing directory passes when its parent could hold it. Throws
// crypto::KeyError naming the directory.
void check_state_dir(const std::string& dir, bool create);
// The keyring in `dir`, or nullopt if the directory has none yet. Throws
// crypto::KeyError naming the file when it exists but cannot be used: not a
// regular file, readable by group or others, malformed, no primary, a key
// twice, more than Keyring::kMaxKeys keys.
std::optional<StoredKeyring> load_keyring_state(const std::string& dir, crypto::Suite suite);

// Writes `ring` (whose every key must be in `material`) to `dir`. Throws
// crypto::KeyError naming the path on failure (the old file stays).
void save_keyring_state(const std::string& dir, const crypto::Keyring& ring, const KeyMaterial& material);

// This member's tags in `dir`, or nullopt if none were saved yet. Throws
// crypto::KeyError naming the file when it exists but cannot be used (not a
// regular file, readable by group or others, malformed, an empty or
// repeated key, more than 64 KiB).
std::optional<std::vector<std::pair<std::string, std::string>>> load_tags_state(const std::string& dir);

// Writes `tags` to `dir` (atomically, as the keyring). Throws
// crypto::KeyError naming the path on failure (the old file stays).
void save_tags_state(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& tags);

// Keeps the keyring in `dir` the running one. A key change is saved before
// it takes effect (save_now(): a change that cannot be saved is refused, so
// a restart never brings back a key that was removed); sync() writes the
// keyring at start and retries a write that failed, with backoff (1 s
// doubling to 60 s), whenever the key ids or the primary differ from what
// the file holds.
class KeyringPersister {
 public:
  struct Counters {
    std::uint64_t writes = 0;        // keyring.json written
    std::uint64_t write_errors = 0;  // ... that failed (logged at error)
  };

  explicit KeyringPersister(std::string dir) : dir_(std::move(dir)) {}

  // Writes `ring` now; returns an empty string, or why it could not be saved.
  std::string save_now(const crypto::Keyring& ring, const KeyMaterial& material);
  // Control lcore, housekeeping: writes `ring` if the file does not hold it
  // yet and a retry is due.
  void sync(const crypto::Keyring& ring, const KeyMaterial& material, std::uint64_t now_ns);
  const Counters& counters() const noexcept { return counters_; }
  const std::string& dir() const noexcept { return dir_; }

  static constexpr std::uint64_t kRetryMinNs = 1'000'000'000ULL;
  static constexpr std::uint64_t kRetryMaxNs = 60'000'000'000ULL;

 private:
  std::string dir_;
  bool saved_ = false;  // the file holds ids_ and primary_
  std::vector<std::uint32_t> ids_;
  std::uint32_t primary_ = 0;
  std::uint64_t next_try_ns_ = 0;
  std::uint64_t backoff_ns_ = kRetryMinNs;
  Counters counters_;
};

}  // namespace gw::cp
