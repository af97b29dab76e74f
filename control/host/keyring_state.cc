#include "control/host/keyring_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

namespace gw::cp {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kMaxFileBytes = 64 * 1024;

std::string hex(const crypto::KeyBytes& k) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  for (std::uint8_t b : k) {
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

std::optional<crypto::KeyBytes> unhex(const std::string& s) {
  crypto::KeyBytes k{};
  if (s.size() != k.size() * 2) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < k.size(); ++i) {
    const int hi = digit(s[2 * i]);
    const int lo = digit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    k[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return k;
}

std::string errno_text() { return std::strerror(errno); }

void write_all(int fd, const std::string& text, const std::string& path) {
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw crypto::KeyError("keyring state '" + path + "': write failed: " + errno_text());
    off += static_cast<std::size_t>(n);
  }
}

// The file at `path`, or nullopt if there is none. `what` names it in errors.
std::optional<std::string> read_state_file(const std::string& path, const std::string& what) {
  // O_NONBLOCK: a FIFO planted there must not hang the start.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw crypto::KeyError(what + " '" + path + "': cannot open: " + errno_text());
  }
  struct stat st {};
  std::string text;
  try {
    if (::fstat(fd, &st) != 0) throw crypto::KeyError(what + " '" + path + "': " + errno_text());
    if (!S_ISREG(st.st_mode)) throw crypto::KeyError(what + " '" + path + "': not a regular file");
    if ((st.st_mode & 077) != 0) {
      throw crypto::KeyError(what + " '" + path + "': readable by group or others (chmod 600 it)");
    }
    if (st.st_size > static_cast<off_t>(kMaxFileBytes)) throw crypto::KeyError(what + " '" + path + "': too large");
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw crypto::KeyError(what + " '" + path + "': read failed: " + errno_text());
      if (n == 0) break;
      text.append(buf, static_cast<std::size_t>(n));
      if (text.size() > kMaxFileBytes) throw crypto::KeyError(what + " '" + path + "': too large");
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return text;
}

// Writes `text` to `dir`/`name` atomically: a temporary file, fsync, rename,
// fsync of the directory, so a crash leaves the old or the new file.
void write_state_file(const std::string& dir, const std::string& name, const std::string& text,
                      const std::string& what) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw crypto::KeyError("control.state_dir '" + dir + "': cannot create: " + errno_text());
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw crypto::KeyError("control.state_dir '" + dir + "': not a directory");
  }
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0) {
    throw crypto::KeyError("control.state_dir '" + dir + "': cannot make it 0700: " + errno_text());
  }
  const std::string path = dir + "/" + name;
  const std::string tmp = path + ".tmp";
  (void)::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw crypto::KeyError(what + " '" + tmp + "': cannot create: " + errno_text());
  try {
    write_all(fd, text, tmp);
    if (::fsync(fd) != 0) throw crypto::KeyError(what + " '" + tmp + "': fsync failed: " + errno_text());
  } catch (...) {
    ::close(fd);
    (void)::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    (void)::unlink(tmp.c_str());
    throw crypto::KeyError(what + " '" + path + "': rename failed: " + why);
  }
  // The rename itself must reach the disk before we call the change done.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace

void check_state_dir(const std::string& dir, bool create) {
  auto bad = [&](const std::string& why) {
    return crypto::KeyError("control.state_dir '" + dir + "': " + why +
                            " (the keyring and tags are saved there: fix it, or remove control.state_dir to keep "
                            "nothing across restarts)");
  };
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOTDIR) throw bad("a path under a regular file (a parent is not a directory)");
    if (err != ENOENT) throw bad(std::strerror(err));
    std::string trimmed = dir;
    while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
    const std::size_t slash = trimmed.find_last_of('/');
    const std::string parent = slash == std::string::npos ? "." : trimmed.substr(0, slash == 0 ? 1 : slash);
    if (!create) {
      // The gateway would create it: its parent must be a directory it can write.
      struct stat pst {};
      if (::stat(parent.c_str(), &pst) != 0) {
        throw bad(std::string("does not exist, nor does its parent: ") + std::strerror(errno));
      }
      if (!S_ISDIR(pst.st_mode)) throw bad("a path under a regular file (a parent is not a directory)");
      if (::access(parent.c_str(), W_OK | X_OK) != 0) {
        throw bad(std::string("does not exist and cannot be created in ") + parent + ": " + std::strerror(errno));
      }
      return;
    }
    if (::mkdir(dir.c_str(), 0700) != 0) throw bad(std::string("cannot create it: ") + std::strerror(errno));
    if (::stat(dir.c_str(), &st) != 0) throw bad(std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) throw bad("not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) throw bad(std::string("not writable: ") + std::strerror(errno));
}

std::optional<StoredKeyring> load_keyring_state(const std::string& dir, crypto::Suite suite) {
  const std::string path = dir + "/" + kKeyringStateFile;
  const std::optional<std::string> read = read_state_file(path, "keyring state");
  if (!read) return std::nullopt;
  const std::string& text = *read;

  const Json j = Json::parse(text, nullptr, false);
  auto bad = [&](const std::string& why) {
    return crypto::KeyError("keyring state '" + path + "': " + why +
                            " (remove it to start from the config's cluster.keys)");
  };
  if (j.is_discarded() || !j.is_object()) throw bad("not a JSON object");
  if (!j.contains("version") || j["version"] != 1) throw bad("unknown version (expected 1)");
  if (!j.contains("primary") || !j["primary"].is_string()) throw bad("no primary key");
  if (!j.contains("keys") || !j["keys"].is_array() || j["keys"].empty()) throw bad("no keys");
  if (j["keys"].size() > crypto::Keyring::kMaxKeys) {
    throw bad("more than " + std::to_string(crypto::Keyring::kMaxKeys) + " keys");
  }
  StoredKeyring out;
  out.path = path;
  const auto primary = unhex(j["primary"].get<std::string>());
  if (!primary) throw bad("primary is not 64 hex digits");
  bool primary_listed = false;
  for (const Json& k : j["keys"]) {
    if (!k.is_string()) throw bad("keys must be hex strings");
    const auto bytes = unhex(k.get<std::string>());
    if (!bytes) throw bad("a key is not 64 hex digits");
    const crypto::Key key(*bytes, suite);
    if (out.ring.find(key.id()) != nullptr) throw bad("a key is listed twice");
    const bool is_primary = *bytes == *primary;
    primary_listed |= is_primary;
    out.ring.add(key, is_primary);
    out.material.emplace(key.id(), *bytes);
  }
  if (!primary_listed) throw bad("the primary is not among the keys");
  return out;
}

void save_keyring_state(const std::string& dir, const crypto::Keyring& ring, const KeyMaterial& material) {
  const crypto::Key* primary = ring.primary();
  if (primary == nullptr) throw crypto::KeyError("keyring state: the keyring has no primary key");
  Json j;
  j["version"] = 1;
  Json keys = Json::array();
  for (std::uint32_t id : ring.ids()) {
    const auto it = material.find(id);
    if (it == material.end()) throw crypto::KeyError("keyring state: no key material for a key in the keyring");
    keys.push_back(hex(it->second));
    if (id == primary->id()) j["primary"] = hex(it->second);
  }
  j["keys"] = std::move(keys);
  write_state_file(dir, kKeyringStateFile, j.dump() + "\n", "keyring state");
}

std::optional<std::vector<std::pair<std::string, std::string>>> load_tags_state(const std::string& dir) {
  const std::string path = dir + "/" + kTagsStateFile;
  const std::optional<std::string> text = read_state_file(path, "tags state");
  if (!text) return std::nullopt;
  auto bad = [&](const std::string& why) {
    return crypto::KeyError("tags state '" + path + "': " + why +
                            " (remove it to start from the config's membership.tags)");
  };
  const Json j = Json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw bad("not a JSON object");
  if (!j.contains("version") || j["version"] != 1) throw bad("unknown version (expected 1)");
  if (!j.contains("tags") || !j["tags"].is_array()) throw bad("no tags list");
  std::vector<std::pair<std::string, std::string>> tags;
  for (const Json& t : j["tags"]) {
    if (!t.is_array() || t.size() != 2 || !t[0].is_string() || !t[1].is_string()) {
      throw bad("each tag must be a [key, value] pair of strings");
    }
    std::string key = t[0].get<std::string>();
    if (key.empty()) throw bad("a tag has an empty key");
    for (const auto& [k, v] : tags) {
      if (k == key) throw bad("tag '" + key + "' is listed twice");
    }
    tags.emplace_back(std::move(key), t[1].get<std::string>());
  }
  return tags;
}

void save_tags_state(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& tags) {
  Json list = Json::array();
  for (const auto& [k, v] : tags) list.push_back(Json::array({k, v}));
  Json j;
  j["version"] = 1;
  j["tags"] = std::move(list);
  write_state_file(dir, kTagsStateFile, j.dump() + "\n", "tags state");
}

}  // namespace gw::cp
