#include "config/ml_keyring.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <string>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

namespace gw::config {

namespace {

bool fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

// 32 bytes are 44 base64 characters; anything far longer is not a key and
// is refused before decoding (and before being quoted in an error).
constexpr std::size_t kMaxKeyText = 64;

std::string octal_mode(mode_t m) {
  std::array<char, 8> buf{};
  std::snprintf(buf.data(), buf.size(), "%04o", static_cast<unsigned>(m & 07777));
  return buf.data();
}

}  // namespace

std::optional<MlKeys> parse_ml_keyring(std::string_view json_text, std::string* error) {
  try {
    if (json_text.size() > kMaxMlKeyringFileBytes) {
      fail(error, "larger than " + std::to_string(kMaxMlKeyringFileBytes) + " bytes; a keyring is a short JSON array");
      return std::nullopt;
    }
    // No exceptions from the parser: a syntax error is a discarded value.
    const nlohmann::json j = nlohmann::json::parse(json_text.begin(), json_text.end(), nullptr, false);
    if (j.is_discarded()) {
      fail(error, "not valid JSON; expected an array of base64 keys such as [\"QHOYjmYlxSCBhdfiolhtDQ==\"]");
      return std::nullopt;
    }
    if (!j.is_array()) {
      fail(error, std::string("expected a JSON array of base64 keys, got a JSON ") + j.type_name());
      return std::nullopt;
    }
    if (j.empty()) {
      fail(error, "no keys: the array is empty (leave memberlist.keyring_file empty for a plaintext cluster)");
      return std::nullopt;
    }
    MlKeys keys;
    for (std::size_t i = 0; i < j.size(); ++i) {
      const std::string where = "key [" + std::to_string(i) + "]: ";
      const nlohmann::json& e = j[i];
      if (!e.is_string()) {
        fail(error, where + "expected a base64 string, got a JSON " + e.type_name());
        return std::nullopt;
      }
      const std::string& text = e.get_ref<const std::string&>();
      if (text.size() > kMaxKeyText) {
        fail(error, where + "too long for a key (" + std::to_string(text.size()) +
                        " base64 characters; keys are 16, 24 or 32 bytes: 24, 32 or 44 characters)");
        return std::nullopt;
      }
      std::array<unsigned char, kMaxKeyText> bin{};
      std::size_t len = 0;
      const char* end = nullptr;
      if (sodium_base642bin(bin.data(), bin.size(), text.data(), text.size(), nullptr, &len, &end,
                            sodium_base64_VARIANT_ORIGINAL) != 0 ||
          end != text.data() + text.size()) {
        fail(error, where + "not standard padded base64");
        return std::nullopt;
      }
      if (len != 16 && len != 24 && len != 32) {
        fail(error, where + std::to_string(len) + " bytes; memberlist keys are 16, 24 or 32 bytes (AES-128/192/256)");
        sodium_memzero(bin.data(), bin.size());
        return std::nullopt;
      }
      std::vector<std::uint8_t> key(bin.begin(), bin.begin() + static_cast<std::ptrdiff_t>(len));
      sodium_memzero(bin.data(), bin.size());
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;  // memberlist keeps one
      if (keys.size() == kMaxMlKeys) {
        fail(error, "more than " + std::to_string(kMaxMlKeys) + " keys (the filter tries each on every packet)");
        return std::nullopt;
      }
      keys.push_back(std::move(key));
    }
    return keys;
  } catch (const std::exception& e) {
    // Only allocation can throw here.
    fail(error, std::string("cannot read the keyring: ") + e.what());
    return std::nullopt;
  }
}

std::optional<MlKeys> load_ml_keyring(const std::string& path, std::string* error, std::string* warning) {
  if (warning != nullptr) warning->clear();
  const auto failed = [&](std::string why) -> std::optional<MlKeys> {
    fail(error, "keyring file \"" + path + "\": " + std::move(why));
    return std::nullopt;
  };
  if (path.empty() || path.find('\0') != std::string::npos) return failed("not a file name");
  // O_NONBLOCK: a FIFO would otherwise wait for a writer for ever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return failed("cannot open: " + std::system_category().message(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return failed("cannot stat: " + std::system_category().message(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return failed("not a regular file");
  }
  if (static_cast<std::uint64_t>(st.st_size) > kMaxMlKeyringFileBytes) {
    ::close(fd);
    return failed("larger than " + std::to_string(kMaxMlKeyringFileBytes) + " bytes; a keyring is a short JSON array");
  }
  std::string text;
  std::array<char, 4096> buf{};
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      return failed("cannot read: " + std::system_category().message(e));
    }
    if (n == 0) break;
    text.append(buf.data(), static_cast<std::size_t>(n));
    if (text.size() > kMaxMlKeyringFileBytes) break;
  }
  ::close(fd);
  sodium_memzero(buf.data(), buf.size());
  std::string why;
  std::optional<MlKeys> keys = parse_ml_keyring(text, &why);
  sodium_memzero(text.data(), text.size());
  if (!keys) return failed(why);
  if ((st.st_mode & 077) != 0 && warning != nullptr) {
    *warning = "keyring file \"" + path + "\" is readable by group or others (mode " + octal_mode(st.st_mode) +
               "); it holds the cluster's secret keys: chmod 600";
  }
  return keys;
}

}  // namespace gw::config
