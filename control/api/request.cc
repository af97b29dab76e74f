#include "control/api/request.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "base/endpoint.h"
#include "control/engine/member_status.h"

namespace gw::cp::api {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kMaxTags = 32;
constexpr std::size_t kMaxTagKey = 64;
constexpr std::size_t kMaxTagValue = 256;

struct Invalid {
  std::string why;
};

// Keys and values an operator can type and a log line can show.
bool printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}
bool printable_or_space(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

std::string field_string(const Json& j, const char* name, bool required) {
  const auto it = j.find(name);
  if (it == j.end()) {
    if (required) throw Invalid{std::string("missing field '") + name + "'"};
    return {};
  }
  if (!it->is_string()) throw Invalid{std::string("field '") + name + "' must be a string"};
  return it->get<std::string>();
}

void only_fields(const Json& j, std::initializer_list<const char*> allowed) {
  for (const auto& item : j.items()) {
    const std::string& k = item.key();
    if (std::none_of(allowed.begin(), allowed.end(), [&k](const char* a) { return k == a; })) {
      std::string shown = printable(k) ? k.substr(0, 32) : std::string("(unprintable)");
      throw Invalid{"unknown field '" + shown + "'"};
    }
  }
}

Scope scope_of(const Json& j) {
  const std::string s = field_string(j, "scope", false);
  if (s.empty() || s == "node") return Scope::kNode;
  if (s == "cluster") return Scope::kCluster;
  throw Invalid{"scope must be 'node' or 'cluster'"};
}

std::uint32_t key_id_field(const Json& j) {
  const std::optional<std::uint32_t> id = parse_key_id(field_string(j, "id", true));
  if (!id) throw Invalid{"id must be 8 hex digits (see 'keys list')"};
  return *id;
}

// The operator's signature fields, with scope cluster: both or neither (an
// unsigned change gets the cluster-wide refusal, which says what to do);
// refused with scope node (node-local changes need no signature).
OperatorAuth auth_fields(const Json& j, Scope scope) {
  const bool has = j.contains("issued_ns") || j.contains("signature");
  if (scope == Scope::kNode) {
    if (has) throw Invalid{"issued_ns and signature go with scope cluster only"};
    return {};
  }
  if (!has) return {};
  OperatorAuth a;
  const std::string issued = field_string(j, "issued_ns", true);
  if (issued.empty() || issued.size() > 20 ||
      !std::all_of(issued.begin(), issued.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw Invalid{"issued_ns must be a decimal number of nanoseconds (a string)"};
  }
  errno = 0;
  const unsigned long long v = std::strtoull(issued.c_str(), nullptr, 10);
  if (errno == ERANGE) throw Invalid{"issued_ns is out of range"};
  a.issued_unix_ns = v;
  const std::string hex = field_string(j, "signature", true);
  if (hex.size() != 128) throw Invalid{"signature must be 128 hex digits (an Ed25519 signature)"};
  for (std::size_t i = 0; i < 64; ++i) {
    unsigned byte = 0;
    const char pair[3] = {hex[2 * i], hex[2 * i + 1], '\0'};
    if (!std::isxdigit(static_cast<unsigned char>(pair[0])) || !std::isxdigit(static_cast<unsigned char>(pair[1])) ||
        std::sscanf(pair, "%2x", &byte) != 1) {
      throw Invalid{"signature must be 128 hex digits (an Ed25519 signature)"};
    }
    a.signature[i] = static_cast<std::uint8_t>(byte);
  }
  return a;
}

std::pair<std::string, std::string> split_tag(std::string_view t) {
  const std::size_t eq = t.find('=');
  if (eq == std::string_view::npos || eq == 0) throw Invalid{"tag must be key=value"};
  return {std::string(t.substr(0, eq)), std::string(t.substr(eq + 1))};
}

void check_tag(const std::string& k, const std::string& v) {
  if (k.empty() || k.size() > kMaxTagKey || !printable(k)) {
    throw Invalid{"tag keys must be 1..64 printable bytes without spaces"};
  }
  if (v.size() > kMaxTagValue || !printable_or_space(v)) throw Invalid{"tag values must be 0..256 printable bytes"};
}

Request parse_object(const Json& j) {
  if (!j.is_object()) throw Invalid{"request must be a JSON object"};
  const std::string cmd = field_string(j, "cmd", true);
  if (cmd == "members") {
    only_fields(j, {"cmd", "state", "tag"});
    MembersRequest r;
    const std::string state = field_string(j, "state", false);
    if (!state.empty()) {
      if (!cp::engine::parse_member_status(state)) {
        throw Invalid{"state must be alive, suspect, dead or left"};
      }
      r.state = state;
    }
    const std::string tag = field_string(j, "tag", false);
    if (!tag.empty()) {
      r.tag = split_tag(tag);
      check_tag(r.tag->first, r.tag->second);
    }
    return r;
  }
  if (cmd == "stats") {
    only_fields(j, {"cmd"});
    return StatsRequest{};
  }
  if (cmd == "keys") {
    const std::string op = field_string(j, "op", true);
    if (op == "list") {
      only_fields(j, {"cmd", "op", "scope"});
      return KeysListRequest{scope_of(j)};
    }
    if (op == "install") {
      only_fields(j, {"cmd", "op", "key", "primary", "scope", "issued_ns", "signature"});
      KeysInstallRequest r;
      const std::string hex = field_string(j, "key", true);
      if (hex.size() != 64) throw Invalid{"key must be 64 hex digits (32 bytes)"};
      for (std::size_t i = 0; i < 32; ++i) {
        unsigned byte = 0;
        const char pair[3] = {hex[2 * i], hex[2 * i + 1], '\0'};
        if (!std::isxdigit(static_cast<unsigned char>(pair[0])) ||
            !std::isxdigit(static_cast<unsigned char>(pair[1])) || std::sscanf(pair, "%2x", &byte) != 1) {
          throw Invalid{"key must be 64 hex digits (32 bytes)"};
        }
        r.key[i] = static_cast<std::uint8_t>(byte);
      }
      if (const auto it = j.find("primary"); it != j.end()) {
        if (!it->is_boolean()) throw Invalid{"field 'primary' must be true or false"};
        r.primary = it->get<bool>();
      }
      r.scope = scope_of(j);
      r.auth = auth_fields(j, r.scope);
      return r;
    }
    if (op == "use") {
      only_fields(j, {"cmd", "op", "id", "scope", "issued_ns", "signature"});
      const Scope scope = scope_of(j);
      return KeysUseRequest{key_id_field(j), scope, auth_fields(j, scope)};
    }
    if (op == "remove") {
      only_fields(j, {"cmd", "op", "id", "scope", "issued_ns", "signature"});
      const Scope scope = scope_of(j);
      return KeysRemoveRequest{key_id_field(j), scope, auth_fields(j, scope)};
    }
    throw Invalid{"keys op must be list, install, use or remove"};
  }
  if (cmd == "join") {
    only_fields(j, {"cmd", "address"});
    const auto hp = parse_host_port(field_string(j, "address", true));
    if (!hp) throw Invalid{"address must be IP:PORT or [IPv6]:PORT"};
    return JoinRequest{hp->first, hp->second};
  }
  if (cmd == "leave") {
    only_fields(j, {"cmd"});
    return LeaveRequest{};
  }
  if (cmd == "tags") {
    const std::string op = field_string(j, "op", true);
    if (op == "set") {
      only_fields(j, {"cmd", "op", "tags"});
      const auto it = j.find("tags");
      if (it == j.end() || !it->is_object() || it->empty()) throw Invalid{"tags must be a non-empty object of strings"};
      if (it->size() > kMaxTags) throw Invalid{"at most 32 tags"};
      TagsSetRequest r;
      for (const auto& [k, v] : it->items()) {
        if (!v.is_string()) throw Invalid{"tag values must be strings"};
        check_tag(k, v.get<std::string>());
        r.tags.emplace_back(k, v.get<std::string>());
      }
      return r;
    }
    if (op == "unset") {
      only_fields(j, {"cmd", "op", "keys"});
      const auto it = j.find("keys");
      if (it == j.end() || !it->is_array() || it->empty()) throw Invalid{"keys must be a non-empty list of tag keys"};
      if (it->size() > kMaxTags) throw Invalid{"at most 32 keys"};
      TagsUnsetRequest r;
      for (const auto& k : *it) {
        if (!k.is_string()) throw Invalid{"keys must be strings"};
        check_tag(k.get<std::string>(), "");
        r.keys.push_back(k.get<std::string>());
      }
      return r;
    }
    throw Invalid{"tags op must be set or unset"};
  }
  if (cmd == "log-level") {
    only_fields(j, {"cmd", "level"});
    const std::string level = field_string(j, "level", true);
    static constexpr std::array<std::string_view, 7> kLevels = {"trace", "debug",    "info", "warn",
                                                                "error", "critical", "off"};
    if (std::find(kLevels.begin(), kLevels.end(), level) == kLevels.end()) {
      throw Invalid{"level must be trace, debug, info, warn, error, critical or off"};
    }
    return LogLevelRequest{level};
  }
  if (cmd == "info") {
    only_fields(j, {"cmd"});
    return InfoRequest{};
  }
  if (cmd == "force-leave") {
    only_fields(j, {"cmd", "node"});
    const std::string node = field_string(j, "node", true);
    if (node.empty() || node.size() > 255 || !printable(node)) {
      throw Invalid{"node must be a member name of 1..255 printable bytes"};
    }
    return ForceLeaveRequest{node};
  }
  if (cmd == "monitor") {
    only_fields(j, {"cmd", "since", "level"});
    MonitorRequest r;
    if (const auto it = j.find("since"); it != j.end()) {
      if (!it->is_number_unsigned()) throw Invalid{"field 'since' must be a non-negative integer"};
      r.since = it->get<std::uint64_t>();
    }
    const std::string level = field_string(j, "level", false);
    if (!level.empty()) {
      static constexpr std::array<std::string_view, 6> kLevels = {"trace", "debug", "info",
                                                                  "warn",  "error", "critical"};
      if (std::find(kLevels.begin(), kLevels.end(), level) == kLevels.end()) {
        throw Invalid{"level must be trace, debug, info, warn, error or critical"};
      }
      r.level = level;
    }
    return r;
  }
  throw Invalid{printable(cmd) && cmd.size() <= 32
                    ? "unknown cmd '" + cmd +
                          "' (members, stats, keys, join, leave, tags, log-level, info, "
                          "force-leave, monitor)"
                    : std::string("unknown cmd (members, stats, keys, join, leave, tags, log-level, info, "
                                  "force-leave, monitor)")};
}

}  // namespace

ParseResult parse_request(std::string_view line) noexcept {
  ParseResult out;
  try {
    if (line.size() > kMaxRequestBytes) {
      out.error = "request too large";
      return out;
    }
    // Duplicate keys are refused (issue 17): nlohmann keeps the last one, so
    // {"cmd":"stats","cmd":"leave"} ran a leave that a reader of the line
    // would take for stats. One set of keys per open object, by depth.
    std::vector<std::set<std::string>> keys;
    std::string duplicate;
    const Json::parser_callback_t seen = [&](int, Json::parse_event_t ev, Json& parsed) {
      if (ev == Json::parse_event_t::object_start) {
        keys.emplace_back();
      } else if (ev == Json::parse_event_t::object_end) {
        if (!keys.empty()) keys.pop_back();
      } else if (ev == Json::parse_event_t::key && !keys.empty() && parsed.is_string()) {
        const std::string& k = parsed.get_ref<const std::string&>();
        if (!keys.back().insert(k).second && duplicate.empty()) duplicate = k;
      }
      return true;
    };
    const Json j = Json::parse(line.begin(), line.end(), seen, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      out.error = "request is not valid JSON";
      return out;
    }
    if (!duplicate.empty()) {
      out.error = "duplicate key \"" + duplicate.substr(0, 64) + "\" in the request";
      return out;
    }
    out.request = parse_object(j);
  } catch (const Invalid& e) {
    out.error = e.why;
  } catch (const std::exception&) {
    // nlohmann type errors (e.g. invalid UTF-8 in a key), bad_alloc.
    out.error = "request could not be read";
  }
  return out;
}

std::string error_reply(std::string_view message, int status) {
  Json j;
  j["ok"] = false;
  j["error"] = std::string(message);
  j["status"] = status;
  return j.dump(-1, ' ', true, Json::error_handler_t::replace);
}

std::optional<std::uint32_t> parse_key_id(std::string_view text) {
  if (text.size() != 8) return std::nullopt;
  std::uint32_t v = 0;
  for (char c : text) {
    unsigned d = 0;
    if (c >= '0' && c <= '9') {
      d = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      d = static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      d = static_cast<unsigned>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    v = (v << 4) | d;
  }
  return v;
}

std::optional<std::pair<std::string, std::uint16_t>> parse_host_port(std::string_view text) {
  const base::ParsedEndpoint p = base::parse_endpoint(text);
  if (p.error != base::EndpointError::kNone) return std::nullopt;
  return std::make_pair(std::string(p.host), p.addr.port);
}

}  // namespace gw::cp::api
