// The control API's requests: one JSON object per line on the Unix socket,
// parsed and validated here before anything acts on them. Pure (no sockets,
// no engine), so the fuzzer and tests drive it directly.
//
//   {"cmd":"members"[,"state":"alive|suspect|dead|left"][,"tag":"k=v"]}
//   {"cmd":"stats"}
//   {"cmd":"keys","op":"list"[,"scope":"node|cluster"]}
//   {"cmd":"keys","op":"install","key":"<64 hex>"[,"primary":true][,"scope":"node|cluster"]}
//   {"cmd":"keys","op":"use","id":"<8 hex>"[,"scope":"node|cluster"]}
//   {"cmd":"keys","op":"remove","id":"<8 hex>"[,"scope":"node|cluster"]}
//     with "scope":"cluster", install, use and remove also carry the operator's
//     signature (gossipctl --operator-key): "issued_ns":"<decimal Unix ns>",
//     "signature":"<128 hex>" (control/key_command.h says what it signs)
//   {"cmd":"join","address":"IP:PORT"}          ("[IPv6]:PORT" for IPv6)
//   {"cmd":"leave"}                              leave gracefully, then stop
//   {"cmd":"tags","op":"set","tags":{"k":"v",...}}
//   {"cmd":"tags","op":"unset","keys":["k",...]}
//   {"cmd":"log-level","level":"trace|debug|info|warn|error|critical|off"}
//   {"cmd":"info"}                               node, version, keys, config digest, uptime, queues
//   {"cmd":"force-leave","node":"NAME"}          a failed member: left, cluster-wide
//   {"cmd":"monitor"[,"since":N][,"level":"..."]} log lines after sequence number N
//
// Replies are one JSON object line: {"ok":true,...} or {"ok":false,"error":"..."}.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace gw::cp::api {

// Longest request line accepted, in bytes (tags and a key fit easily).
inline constexpr std::size_t kMaxRequestBytes = 64 * 1024;

enum class Scope : std::uint8_t { kNode, kCluster };

struct MembersRequest {
  std::optional<std::string> state;  // alive | suspect | dead | left
  std::optional<std::pair<std::string, std::string>> tag;
};
struct StatsRequest {};
struct KeysListRequest {
  Scope scope = Scope::kNode;  // cluster: ask every live member for its keyring
};
// The operator's signature of a cluster-wide change (issue 51).
struct OperatorAuth {
  std::uint64_t issued_unix_ns = 0;
  std::array<std::uint8_t, 64> signature{};
};
struct KeysInstallRequest {
  std::array<std::uint8_t, 32> key{};
  bool primary = false;
  Scope scope = Scope::kNode;
  OperatorAuth auth;  // scope cluster
};
struct KeysUseRequest {
  std::uint32_t id = 0;
  Scope scope = Scope::kNode;
  OperatorAuth auth;  // scope cluster
};
struct KeysRemoveRequest {
  std::uint32_t id = 0;
  Scope scope = Scope::kNode;
  OperatorAuth auth;  // scope cluster
};
struct JoinRequest {
  std::string ip;  // literal, validated
  std::uint16_t port = 0;
};
struct LeaveRequest {};
struct TagsSetRequest {
  std::vector<std::pair<std::string, std::string>> tags;
};
struct TagsUnsetRequest {
  std::vector<std::string> keys;
};
struct LogLevelRequest {
  std::string level;
};

struct InfoRequest {};
struct ForceLeaveRequest {
  std::string node;
};
struct MonitorRequest {
  std::uint64_t since = 0;     // lines with a larger sequence number
  std::string level = "info";  // and at least this level
};

using Request = std::variant<MembersRequest, StatsRequest, KeysListRequest, KeysInstallRequest, KeysUseRequest,
                             KeysRemoveRequest, JoinRequest, LeaveRequest, TagsSetRequest, TagsUnsetRequest,
                             LogLevelRequest, InfoRequest, ForceLeaveRequest, MonitorRequest>;

struct ParseResult {
  std::optional<Request> request;
  std::string error;  // set when !request
};

// Never throws; any bytes in, a request or an error out.
ParseResult parse_request(std::string_view line) noexcept;

// The exit status gossipctl reports for an error reply (docs/operations.md,
// "Exit status"): 1 the gateway refused or failed, 2 the request was bad input
// (did not parse, malformed or wrong-family address, ...).
constexpr int kStatusFailed = 1;
constexpr int kStatusBadInput = 2;

// {"ok":false,"error":message,"status":N} as one line (no trailing newline).
std::string error_reply(std::string_view message, int status = kStatusFailed);

// "0a1b2c3d" -> key id (crypto::key_id_text is the other way).
std::optional<std::uint32_t> parse_key_id(std::string_view text);

// "IP:PORT" or "[IPv6]:PORT" -> literal and port; nullopt if not valid.
std::optional<std::pair<std::string, std::uint16_t>> parse_host_port(std::string_view text);

}  // namespace gw::cp::api
