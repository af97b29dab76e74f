// Rotation without restart in filter mode: the keyring file (a Serf/Consul
// keyring, memberlist.keyring_file) is watched from the control lcore. A
// memberlist agent rewrites that file on `serf keys install/use/remove`, so
// the gateway follows the agent's keyring by looking at the file's identity
// (device, inode, size, mtime) once a second, and on SIGHUP. A change is
// loaded into a new ml::Keyring for the caller to publish; a file that fails
// to load keeps the keyring in use and is reported once per change of the
// file (not again every second).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "dataplane/memberlist/keyring.h"

namespace gw::cp::filter {

// What identifies one version of a file without reading it.
struct FileStamp {
  bool exists = false;
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

// Any thread: stat(2) of `path` (exists false if it cannot be stat'ed).
FileStamp stamp_file(const std::string& path) noexcept;

class KeyringWatch {
 public:
  // Reads and checks a keyring file; nullptr with `error` set if it cannot.
  using Loader = std::function<std::unique_ptr<dp::ml::Keyring>(const std::string& path, std::string* error)>;
  enum class Outcome : std::uint8_t { kUnchanged, kLoaded, kFailed };
  struct Counters {
    std::uint64_t loaded = 0;  // a changed (or SIGHUP'd) file became the keyring
    std::uint64_t failed = 0;  // a changed file did not load: the old keyring stays
  };
  static constexpr std::uint64_t kPollNs = 1'000'000'000ULL;

  // `seen`: the stamp of the file the keyring in use was loaded from.
  KeyringWatch(std::string path, Loader load, FileStamp seen, std::uint64_t now_ns);

  // Control lcore. Looks at the file when kPollNs have passed since the last
  // look, or at once when `force` (SIGHUP: loads even an unchanged file).
  // kLoaded: `*next` is the new keyring; kFailed: `*error` says why.
  Outcome poll(std::uint64_t now_ns, bool force, std::unique_ptr<dp::ml::Keyring>* next, std::string* error);

  const Counters& counters() const noexcept { return counters_; }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  Loader load_;
  FileStamp seen_;
  std::uint64_t next_poll_ns_;
  Counters counters_;
};

}  // namespace gw::cp::filter
