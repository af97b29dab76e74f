#include "control/filter/keyring_watch.h"

#include <sys/stat.h>

#include <utility>

namespace gw::cp::filter {

FileStamp stamp_file(const std::string& path) noexcept {
  struct stat st {};
  FileStamp s;
  if (::stat(path.c_str(), &st) != 0) return s;
  s.exists = true;
  s.dev = static_cast<std::uint64_t>(st.st_dev);
  s.ino = static_cast<std::uint64_t>(st.st_ino);
  s.size = static_cast<std::uint64_t>(st.st_size);
  s.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec;
  return s;
}

KeyringWatch::KeyringWatch(std::string path, Loader load, FileStamp seen, std::uint64_t now_ns)
    : path_(std::move(path)), load_(std::move(load)), seen_(seen), next_poll_ns_(now_ns + kPollNs) {}

KeyringWatch::Outcome KeyringWatch::poll(std::uint64_t now_ns, bool force, std::unique_ptr<dp::ml::Keyring>* next,
                                         std::string* error) {
  if (!force && now_ns < next_poll_ns_) return Outcome::kUnchanged;
  next_poll_ns_ = now_ns + kPollNs;
  const FileStamp now = stamp_file(path_);
  if (!force && now == seen_) return Outcome::kUnchanged;
  // Seen either way: a file that failed is not tried (nor reported) again
  // until it changes, or a SIGHUP asks.
  seen_ = now;
  if (!now.exists) {
    ++counters_.failed;
    *error = "cannot read '" + path_ + "' (missing or not accessible)";
    return Outcome::kFailed;
  }
  std::unique_ptr<dp::ml::Keyring> ring = load_(path_, error);
  if (ring == nullptr) {
    ++counters_.failed;
    return Outcome::kFailed;
  }
  ++counters_.loaded;
  *next = std::move(ring);
  return Outcome::kLoaded;
}

}  // namespace gw::cp::filter
