// The keyring file of a memberlist cluster (mode: memberlist,
// memberlist.keyring_file): a JSON array of base64 keys, primary first, the
// format `serf agent -keyring-file` reads and writes and Consul keeps as
// serf/local.keyring:
//
//   ["QHOYjmYlxSCBhdfiolhtDQ==", "ZWRnZXN0YXRlX2tleV8yNF9ieXRlc18h"]
//
// Keys are 16, 24 or 32 bytes (AES-128/192/256-GCM), standard padded base64
// (Go's base64.StdEncoding). Read at start and on rotation by the control
// plane, never by a worker (dataplane/memberlist/keyring.h holds the
// expanded keys). Bad input is an error string, never an exception.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gw::config {

// At most this many keys (dp::ml::Keyring::kMaxKeys).
inline constexpr std::size_t kMaxMlKeys = 16;
// A keyring file larger than this is refused unread (16 keys of 32 bytes
// are under 1 KiB of JSON).
inline constexpr std::size_t kMaxMlKeyringFileBytes = 64 * 1024;

using MlKeys = std::vector<std::vector<std::uint8_t>>;

// Parses the file's text: 1..16 keys, primary first; a key listed twice is
// kept once, at its first place (memberlist's Keyring.AddKey skips it too).
// nullopt and `error` (naming the entry: "key [2]: ...") for JSON that is
// not an array of strings, bad base64, a key of another length, an empty
// list or more than 16 keys. Any thread; no exception escapes.
std::optional<MlKeys> parse_ml_keyring(std::string_view json_text, std::string* error);

// Reads `path` and parses it. An unreadable, missing, non-regular or
// oversized file is an error naming the path. `warning` (may be null) is set,
// non-empty, when the file is readable by group or others (it holds the
// cluster's secret keys: chmod 600); the keys are still returned.
std::optional<MlKeys> load_ml_keyring(const std::string& path, std::string* error, std::string* warning = nullptr);

}  // namespace gw::config
