// gossipctl: the operator's command for a gossipgw node.
//
//   gossipctl keygen --out FILE [--force]   write a new random key (mode 0600)
//   gossipctl keyid FILE...                 print the key id of key files
//   gossipctl operator-keygen --out FILE [--force]
//                                           write a new operator signing key (mode 0600)
//                                           and print its public key (cluster.operator_public_key)
//   gossipctl operator-key FILE             print an operator key file's public key
//   gossipctl config check --config FILE    validate the config and load every key file
//   gossipctl config eal-args --config FILE [--no-huge] [--vdev SPEC]... [--allow PCI]...
//                             [--file-prefix P] [--memory-mb N]
//                                           print gossipgw's EAL arguments, one per line:
//       -l CONTROL,WORKERS... --main-lcore CONTROL --file-prefix P
//       (--huge-unlink | --no-huge) -m MB [-a PCI]... [--vdev SPEC]... [--no-pci]
//
// `config` is what scripts/launch.sh builds on, so that no shell script ever
// parses YAML: the same loader as gossipgw decides what the file means.
//
// Talking to a running gateway over its control socket (control.socket;
// --socket, or $GOSSIPGW_SOCKET, default /run/gossipgw/gossipgw.sock):
//   gossipctl members [--state S] [--tag K=V] [--detailed] | stats | info | version
//   gossipctl keys list | install FILE [--primary|--cluster] | use KEYID [--cluster]
//                  | remove KEYID [--cluster]      (--cluster: on every live member)
//     install, use and remove --cluster are signed with the operator key:
//       --operator-key FILE [--cluster-name NAME] [--sign-only]
//     (--sign-only prints the signed request instead of sending it;
//      gossipctl keys submit FILE sends one, "-" for standard input)
//   gossipctl join IP:PORT | leave | force-leave NAME | tags set K=V... | tags unset K...
//   gossipctl log-level LEVEL | monitor [--level L] [--duration S]
// --json and --socket are accepted in any position, by every command; with
// --json the output is one JSON object whose "ok" is the exit status (usage
// errors included); without it, nothing is JSON. `gossipctl --version`
// prints gossipctl's version (exit 0).
// Exit status (docs/operations.md, "Exit status"): 0 ok, 1 the gateway refused,
// failed or cannot be reached, 2 bad input (options, files, addresses, ids).
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "config/keys.h"
#include "config/loader.h"
#include "control/engine/member_status.h"
#include "control/gateway/engine_config.h"
#include "control/host/keyring_state.h"
#include "control/key_command.h"
#include "control/version.h"
#include "crypto/keys.h"
#include "crypto/operator_key.h"
#include "dataplane/api/config_check.h"
#include "dataplane/memberlist/filter_setup.h"

namespace {

constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

// Without hugepages the gateway runs from ordinary pages; 512 MiB covers the
// default config (one worker) with ample room, and larger configs get their
// estimate instead.
constexpr std::uint64_t kMinMemoryMb = 512;
// Per mbuf in a pktmbuf pool: RTE_MBUF_DEFAULT_BUF_SIZE (2176) plus the mbuf
// and mempool object headers, rounded up so the estimate errs on the large side.
constexpr std::uint64_t kBytesPerMbuf = 2560;
// EAL itself, ethdev and driver memzones, per-lcore caches.
constexpr std::uint64_t kEalOverheadMb = 256;
constexpr std::uint64_t kMiB = 1024 * 1024;

int fail(int status, const std::string& message) {
  std::fprintf(stderr, "gossipctl: %s\n", message.c_str());
  return status;
}

struct EalOptions {
  std::string config_path;
  bool no_huge = false;
  std::vector<std::string> vdevs;
  std::vector<std::string> allow;
  std::string file_prefix;
  std::uint64_t memory_mb = 0;  // 0: estimate from the config
};

// What the gateway's packet pools need, in MiB, rounded up to whole 2 MiB
// pages: the one number an operator must reserve hugepages for. The hand-off
// rings to the control lcore hold copies in ordinary process memory
// (dataplane/payload_ring.h), not in hugepages.
std::uint64_t estimate_memory_mb(const gw::config::Config& cfg) {
  const std::uint64_t workers = cfg.lcores.workers.size();
  const std::uint64_t pools = workers * cfg.dataplane.mbufs * kBytesPerMbuf;
  std::uint64_t mb = (pools + kMiB - 1) / kMiB + kEalOverheadMb;
  mb += mb % 2;
  return std::max(mb, kMinMemoryMb);
}

// The node name may hold any printable character, but the prefix names files
// under /var/run/dpdk, so anything but [A-Za-z0-9._-] becomes '_'.
std::string default_file_prefix(const gw::config::Config& cfg) {
  std::string prefix = "gossipgw-" + cfg.node.name;
  for (char& c : prefix) {
    const bool plain =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!plain) c = '_';
  }
  return prefix;
}

// One argument per line, in the order gossipgw's EAL sees them; throws
// ConfigError for the file and std::invalid_argument for bad options.
std::vector<std::string> eal_args(const EalOptions& opt) {
  static const std::regex kPci("^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-1][0-9a-fA-F]\\.[0-7]$");
  static const std::regex kPrefix("^[A-Za-z0-9._-]{1,64}$");
  for (const std::string& a : opt.allow) {
    if (!std::regex_match(a, kPci)) {
      throw std::invalid_argument("--allow: '" + a + "' is not a PCI address (DDDD:BB:DD.F or BB:DD.F)");
    }
  }
  for (const std::string& v : opt.vdevs) {
    // One argument per line: a newline is the one thing a spec cannot hold.
    if (v.empty() || v.front() == ',' || v.find_first_of("\n\r") != std::string::npos) {
      throw std::invalid_argument("--vdev: '" + v + "' is not a device spec such as net_pcap0,rx_pcap=in.pcap");
    }
  }
  if (!opt.file_prefix.empty() && !std::regex_match(opt.file_prefix, kPrefix)) {
    throw std::invalid_argument("--file-prefix: '" + opt.file_prefix + "' must be 1..64 of [A-Za-z0-9._-]");
  }

  const gw::config::Config cfg = gw::config::load_config(opt.config_path);
  std::vector<std::string> out;
  // The control lcore comes first and is named main explicitly: EAL would
  // otherwise pick the lowest id, and gossipgw refuses a control lcore that
  // is not the main one.
  std::string lcores = std::to_string(cfg.lcores.control);
  for (unsigned w : cfg.lcores.workers) lcores += "," + std::to_string(w);
  out.insert(out.end(), {"-l", lcores, "--main-lcore", std::to_string(cfg.lcores.control)});
  out.insert(out.end(), {"--file-prefix", opt.file_prefix.empty() ? default_file_prefix(cfg) : opt.file_prefix});
  const std::uint64_t mb = opt.memory_mb != 0 ? opt.memory_mb : estimate_memory_mb(cfg);
  if (opt.no_huge) {
    out.emplace_back("--no-huge");
  } else {
    // Unlink each hugepage file once mapped: the pages return to the kernel
    // when the gateway exits, even after a crash, instead of staying held by
    // files in hugetlbfs until the next start. Costs DPDK secondary processes,
    // which nothing here uses.
    out.emplace_back("--huge-unlink");
  }
  out.insert(out.end(), {"-m", std::to_string(mb)});
  for (const std::string& a : opt.allow) out.insert(out.end(), {"-a", a});
  for (const std::string& v : opt.vdevs) out.insert(out.end(), {"--vdev", v});
  // Only virtual devices: keep EAL from probing (and claiming) host NICs.
  if (opt.allow.empty() && !opt.vdevs.empty()) out.emplace_back("--no-pci");
  return out;
}

// Everything gossipgw checks before EAL starts, so a launch script can stop
// with the same one-line error before touching hugepages or NICs.
gw::config::Config check_config(const std::string& path) {
  gw::config::Config cfg = gw::config::load_config(path);
  if (cfg.mode == gw::config::Mode::kMemberlist) {
    // Filter mode (docs/filter-mode.md): what gossipgw checks before EAL in
    // that mode, the filter's inputs (allow-lists) and the keyring file.
    std::string error;
    std::string warning;
    if (!gw::dp::ml::make_filter_config(cfg, &error)) throw std::invalid_argument(path + ": " + error);
    if (gw::dp::ml::load_filter_keyring(cfg, &error, &warning) == nullptr) throw gw::crypto::KeyError(error);
    if (!warning.empty()) std::fprintf(stderr, "warning: %s\n", warning.c_str());
    return cfg;
  }
  (void)gw::config::load_keyring(cfg);       // every key file: present, 32 bytes, mode 0600, no duplicates
  (void)gw::config::load_operator_key(cfg);  // a valid Ed25519 public key, if any
  // The state directory, by the gateway's rule (a directory it can write,
  // or create), and the persisted keyring and tags it would load instead of
  // the config's (if there are any).
  std::optional<std::vector<std::pair<std::string, std::string>>> tags;
  if (!cfg.control.state_dir.empty()) {
    gw::cp::check_state_dir(cfg.control.state_dir, /*create=*/false);
    (void)gw::cp::load_keyring_state(cfg.control.state_dir, gw::config::resolve_suite(cfg));
    tags = gw::cp::load_tags_state(cfg.control.state_dir);
  }
  // The ladder's inputs, and the classifier as gossipgw compiles it at start
  // (bounded by classifier.compile_budget_ms): a rule too costly to compile
  // fails here too.
  gw::dp::check_config(cfg);
  // The membership engine's own check, as gossipgw runs it before EAL.
  if (cfg.membership.enabled) {
    gw::cp::engine::EngineConfig e = gw::cp::engine_config(cfg);
    if (tags) {
      e.tags.clear();
      for (const auto& [k, v] : *tags) e.tags.push_back({k, v});
      if (const std::string why = e.validate(); !why.empty()) {
        throw gw::crypto::KeyError("tags state '" + cfg.control.state_dir + "/" + gw::cp::kTagsStateFile + "': " + why);
      }
    }
  }
  return cfg;
}

// ---- the control socket ----

constexpr const char* kDefaultSocket = "/run/gossipgw/gossipgw.sock";
using Json = nlohmann::ordered_json;

// An error reply (or no reply): `status` is the exit status it stands for,
// 1 refused or failed, 2 bad input (the reply's "status").
class RemoteError : public std::runtime_error {
 public:
  explicit RemoteError(const std::string& what, int status = kExitRuntime)
      : std::runtime_error(what), status_(status == kExitUsage ? kExitUsage : kExitRuntime) {}
  int status() const noexcept { return status_; }

 private:
  int status_;
};

// Sends one request line, returns the reply object, whatever its "ok";
// throws RemoteError when there is no valid reply.
Json call_raw(const std::string& socket_path, const Json& request) {
  if (socket_path.empty() || socket_path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    throw std::invalid_argument("--socket: path must be 1..107 bytes");
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw RemoteError(std::string("socket(): ") + std::strerror(errno));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw RemoteError("cannot reach the gateway at " + socket_path + ": " + why +
                      " (is it running with control.socket set? --socket or $GOSSIPGW_SOCKET)");
  }
  timeval tv{15, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const std::string line = request.dump() + "\n";
  std::size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::send(fd, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n <= 0) {
      ::close(fd);
      throw RemoteError("the gateway closed the connection");
    }
    off += static_cast<std::size_t>(n);
  }
  std::string reply;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buf, static_cast<std::size_t>(n));
    if (reply.back() == '\n') break;
  }
  ::close(fd);
  Json j = Json::parse(reply, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw RemoteError("no valid reply from the gateway");
  return j;
}

// The reply's exit status: 0 ok, else its "status" (1 unless it says 2).
int reply_status(const Json& j) {
  if (j.value("ok", false)) return 0;
  return j.contains("status") && j["status"].is_number_integer() && j["status"].get<int>() == kExitUsage ? kExitUsage
                                                                                                         : kExitRuntime;
}

// Sends one request line, returns the reply object; throws RemoteError for
// an error reply.
Json call(const std::string& socket_path, const Json& request) {
  Json j = call_raw(socket_path, request);
  if (!j.value("ok", false)) {
    const int status = j.contains("status") && j["status"].is_number_integer() ? j["status"].get<int>() : kExitRuntime;
    throw RemoteError(j.value("error", std::string("request failed")), status);
  }
  return j;
}

std::string cell(const Json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& r : rows) {
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (std::size_t c = 0; c < r.size(); ++c) {
      s += r[c];
      if (c + 1 < r.size()) s += std::string(width[c] - r[c].size() + 2, ' ');
    }
    std::printf("%s\n", s.c_str());
  };
  line(header);
  for (const auto& r : rows) line(r);
}

void print_members(const Json& reply) {
  std::vector<std::vector<std::string>> rows;
  for (const Json& m : reply["members"]) {
    std::string tags;
    for (const auto& [k, v] : m["tags"].items()) tags += (tags.empty() ? "" : ",") + k + "=" + cell(v);
    const std::string addr = cell(m["address"]);
    const std::string where = (addr.find(':') != std::string::npos ? "[" + addr + "]" : addr) + ":" + cell(m["port"]);
    const std::string build = m.contains("build") ? cell(m["build"]) : "";
    rows.push_back({cell(m["name"]) + (m.value("self", false) ? " (self)" : ""), where, cell(m["state"]),
                    cell(m["incarnation"]), build.empty() ? "-" : build, m.contains("key_id") ? cell(m["key_id"]) : "-",
                    tags});
  }
  print_table({"NAME", "ADDRESS", "STATE", "INCARNATION", "BUILD", "KEY", "TAGS"}, rows);
  std::printf("%zu member(s) listed, %s live; node %s, health score %s\n", rows.size(),
              cell(reply["live_members"]).c_str(), cell(reply["node"]).c_str(), cell(reply["health_score"]).c_str());
}

void print_members_detailed(const Json& reply) {
  for (const Json& m : reply["members"]) {
    const std::string addr = cell(m["address"]);
    std::printf("%s%s\n", cell(m["name"]).c_str(), m.value("self", false) ? " (self)" : "");
    std::printf("  address:     %s:%s\n",
                addr.find(':') != std::string::npos ? ("[" + addr + "]").c_str() : addr.c_str(),
                cell(m["port"]).c_str());
    std::printf("  state:       %s for %s s%s\n", cell(m["state"]).c_str(),
                cell(m.value("state_age_s", Json(0))).c_str(), m.value("probation", false) ? " (on probation)" : "");
    std::printf("  incarnation: %s\n", cell(m["incarnation"]).c_str());
    std::printf("  protocol:    %s\n", cell(m.value("protocol_version", Json(0))).c_str());
    const std::string build = m.contains("build") ? cell(m["build"]) : "";
    std::printf("  build:       %s\n", build.empty() ? "-" : build.c_str());
    if (m.contains("heard_s_ago")) std::printf("  heard:       %s s ago\n", cell(m["heard_s_ago"]).c_str());
    std::printf("  key:         %s\n", m.contains("key_id") ? cell(m["key_id"]).c_str() : "-");
    for (const auto& [k, v] : m["tags"].items()) std::printf("  tag:         %s=%s\n", k.c_str(), cell(v).c_str());
  }
  std::printf("%zu member(s) listed, %s live; node %s, health score %s\n", reply["members"].size(),
              cell(reply["live_members"]).c_str(), cell(reply["node"]).c_str(), cell(reply["health_score"]).c_str());
}

void print_stats(const Json& stats) {
  const Json& t = stats["totals"];
  std::vector<std::vector<std::string>> rows;
  for (const auto& [k, v] : t.items()) rows.push_back({k, cell(v)});
  print_table({"COUNTER (all lcores)", "VALUE"}, rows);
  std::printf("\n");
  std::vector<std::vector<std::string>> lc;
  for (const Json& l : stats["lcores"]) {
    if (l.value("role", "") != "worker") continue;
    const Json& c = l["counters"];
    std::uint64_t dropped = 0;
    for (const auto& [k, v] : c.items()) {
      if (k.rfind("drop_", 0) == 0 && v.is_number_unsigned()) dropped += v.get<std::uint64_t>();
    }
    lc.push_back({cell(l["lcore"]), cell(l["queue"]), cell(c["rx_total"]), cell(c["accepted"]), std::to_string(dropped),
                  cell(l["tx"]["tx_packets"])});
  }
  print_table({"LCORE", "QUEUE", "RX", "ACCEPTED", "DROPPED", "TX"}, lc);
  if (stats.contains("classes")) {
    std::printf("\naccepted by class:");
    for (const auto& [k, v] : stats["classes"].items()) std::printf(" %s %s", k.c_str(), cell(v).c_str());
    std::printf("\n");
  }
  if (stats.contains("membership")) {
    const Json& m = stats["membership"];
    std::printf("\nmembership: %s live", cell(m["live_members"]).c_str());
    for (const auto& [k, v] : m["members_by_state"].items()) std::printf(", %s %s", cell(v).c_str(), k.c_str());
    std::printf("; incarnation %s\n", cell(m["incarnation"]).c_str());
  }
}

std::string read_key_hex(const std::string& path) {
  const gw::crypto::KeyBytes key = gw::crypto::load_key_file(path);
  std::string hex;
  char b[3];
  for (std::uint8_t v : key) {
    std::snprintf(b, sizeof b, "%02x", v);
    hex += b;
  }
  return hex;
}

std::string hex_of(const std::uint8_t* p, std::size_t n) {
  std::string hex;
  char b[3];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof b, "%02x", p[i]);
    hex += b;
  }
  return hex;
}

// Signs a cluster-wide change request (install, use, remove) with the
// operator key in `operator_file` for the cluster `cluster_name`: adds
// "issued_ns" (now) and "signature" (control/key_command.h says over what).
void sign_request(Json& req, const std::string& operator_file, const std::string& cluster_name) {
  const gw::crypto::OperatorSigner signer(gw::crypto::load_key_file(operator_file));
  gw::cp::KeyChange change;
  const std::string op = req["op"].get<std::string>();
  if (op == "install") {
    change.op = gw::cp::KeyChange::Op::kInstall;
    const std::string hex = req["key"].get<std::string>();
    for (std::size_t i = 0; i < change.key.size(); ++i) {
      change.key[i] = static_cast<std::uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
    }
  } else {
    change.op = op == "use" ? gw::cp::KeyChange::Op::kUse : gw::cp::KeyChange::Op::kRemove;
    const std::string id = req["id"].get<std::string>();
    if (id.size() != 8 ||
        !std::all_of(id.begin(), id.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); })) {
      throw std::invalid_argument("key id must be 8 hex digits (keys list)");
    }
    change.id = static_cast<std::uint32_t>(std::stoul(id, nullptr, 16));
  }
  const auto issued = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  const gw::crypto::Signature sig =
      signer.sign(gw::cp::key_command_statement(gw::crypto::derive_cluster_id(cluster_name), change, issued));
  req["issued_ns"] = std::to_string(issued);
  req["signature"] = hex_of(sig.data(), sig.size());
}

// `keys install|use|remove --cluster` without --json: what each member did.
void print_cluster_step(const std::string& step, const Json& reply) {
  std::vector<std::string> applied;
  for (const Json& n : reply.value("applied", Json::array())) applied.push_back(cell(n));
  std::printf("%s: applied here and on %zu of %s other member(s)%s\n", step.c_str(), applied.size(),
              cell(reply.value("targets", Json(0))).c_str(),
              reply.value("complete", false) ? "" : " (incomplete: re-run it once they are back)");
  auto list = [](const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
  };
  if (!applied.empty()) std::printf("  applied:   %s\n", list(applied).c_str());
  for (const Json& r : reply.value("refused", Json::array())) {
    std::printf("  refused:   %s: %s\n", cell(r.value("member", Json(""))).c_str(),
                cell(r.value("error", Json(""))).c_str());
  }
  std::vector<std::string> silent;
  for (const Json& n : reply.value("no_answer", Json::array())) silent.push_back(cell(n));
  if (!silent.empty()) std::printf("  no answer: %s\n", list(silent).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  // --json is known before the command line is parsed, so that a usage
  // error under --json is one JSON object too.
  bool json_asked = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    if (std::strcmp(argv[i], "--json") == 0) json_asked = true;
  }
  auto usage_error = [&](const std::string& message) {
    if (json_asked) {
      std::printf("%s\n", Json{{"ok", false}, {"error", message}, {"status", kExitUsage}}.dump().c_str());
    }
    std::fprintf(stderr, "gossipctl: %s (try --help)\n", message.c_str());
    return kExitUsage;
  };

  CLI::App app{"gossipctl: operate a gossipgw node"};
  // One command, or --version alone (checked after parsing: CLI11 would
  // refuse a missing command before it saw --version).
  app.require_subcommand(0, 1);
  bool show_version = false;
  app.add_flag("--version", show_version, "print gossipctl's version and exit");
  // --json and --socket belong to the whole command line: any position,
  // before or after (nested) subcommands. Every command honours --json.
  const char* env_socket = std::getenv("GOSSIPGW_SOCKET");
  std::string socket_path = env_socket != nullptr && *env_socket != '\0' ? env_socket : kDefaultSocket;
  bool as_json = false;
  app.add_option("--socket", socket_path, "the gateway's control socket (control.socket; $GOSSIPGW_SOCKET)")
      ->capture_default_str();
  app.add_flag("--json", as_json, "print the result as one JSON object (\"ok\" is the exit status)");
  auto sub = [](CLI::App* parent, const char* name, const char* help) {
    CLI::App* c = parent->add_subcommand(name, help);
    c->fallthrough();  // --json/--socket after the command name reach the top level
    return c;
  };

  std::string out;
  bool force = false;
  CLI::App* version = sub(&app, "version", "print gossipctl's version (and the gateway's, if it answers)");
  CLI::App* keygen = sub(&app, "keygen", "write a new random 32-byte key file with mode 0600");
  keygen->add_option("--out,-o", out, "key file to create")->required();
  keygen->add_flag("--force", force, "replace an existing file");

  CLI::App* op_keygen =
      sub(&app, "operator-keygen",
          "write a new operator signing key (mode 0600) and print its public key for cluster.operator_public_key");
  op_keygen->add_option("--out,-o", out, "operator key file to create")->required();
  op_keygen->add_flag("--force", force, "replace an existing file");
  std::string op_key_file;
  CLI::App* op_pub = sub(&app, "operator-key", "print the public key of an operator key file");
  op_pub->add_option("file", op_key_file, "operator key file")->required();

  std::vector<std::string> files;
  CLI::App* keyid = sub(&app, "keyid", "print the key id of each key file");
  keyid->add_option("files", files, "key files")->required();

  CLI::App* config = sub(&app, "config", "check a gateway config; derive gossipgw's EAL arguments from it");
  config->require_subcommand(1);
  std::string check_path;
  CLI::App* check =
      sub(config, "check",
          "validate the config, load every key file and compile the classifier as gossipgw would; print 'ok' and the "
          "memory it needs, or the error (exit 2)");
  check->add_option("--config", check_path, "gateway YAML config")->required();

  EalOptions eal;
  CLI::App* eal_cmd =
      sub(config, "eal-args",
          "print gossipgw's EAL arguments for the config, one per line (lcores, memory, devices, file prefix)");
  eal_cmd->add_option("--config", eal.config_path, "gateway YAML config")->required();
  eal_cmd->add_flag("--no-huge", eal.no_huge, "run from ordinary pages (--no-huge -m 512 or the config's estimate)");
  eal_cmd->add_option("--vdev", eal.vdevs, "virtual device spec, e.g. net_pcap0,rx_pcap=in.pcap (repeatable)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  eal_cmd->add_option("--allow", eal.allow, "PCI address to allow-list, e.g. 0000:01:00.0 (repeatable)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  eal_cmd->add_option("--file-prefix", eal.file_prefix, "EAL file prefix (default gossipgw-<node name>)");
  eal_cmd
      ->add_option("--memory-mb", eal.memory_mb, "memory for EAL in MiB (default: estimated from the config, >= 512)")
      ->check(CLI::Range(std::uint64_t{64}, std::uint64_t{1} << 20));

  // ---- a running gateway ----
  std::string state_filter, tag_filter;
  bool detailed = false;
  CLI::App* members = sub(&app, "members", "list the members this gateway knows (table, --detailed, or --json)");
  members->add_option("--state", state_filter, "only members in this state")
      ->check(CLI::IsMember(std::vector<std::string>(gw::cp::engine::kMemberStatusNames.begin(),
                                                     gw::cp::engine::kMemberStatusNames.end())));
  members->add_option("--tag", tag_filter, "only members carrying this tag, K=V");
  members->add_flag("--detailed", detailed, "every field of every member (protocol, state age, last heard, tags)");
  CLI::App* stats = sub(&app, "stats", "counters per verdict, class and lcore (table, or --json)");
  CLI::App* info = sub(&app, "info", "this node: version, incarnation, keys, config digest, uptime, queue depths");
  bool cluster_wide = false;
  CLI::App* keys = sub(&app, "keys", "list, install, promote or remove keys on a running gateway");
  keys->require_subcommand(1);
  CLI::App* keys_list = sub(keys, "list", "key ids, which is primary, how many live members use each");
  keys_list->add_flag("--cluster", cluster_wide,
                      "ask every live member: per key, how many hold it and use it as primary, who lacks it");
  std::string key_file, key_id;
  bool key_primary = false;
  CLI::App* keys_install = sub(keys, "install", "add a key (read from FILE, mode 0600) to the keyring");
  keys_install->add_option("file", key_file, "key file")->required();
  keys_install->add_flag("--primary", key_primary, "also make it the key this node seals with (node scope)");
  keys_install->add_flag("--cluster", cluster_wide,
                         "apply on every live member (sent sealed with the current key; waits for their answers)");
  CLI::App* keys_use = sub(keys, "use", "make KEYID the key this node seals with");
  keys_use->add_option("id", key_id, "key id, 8 hex digits (keys list)")->required();
  keys_use->add_flag("--cluster", cluster_wide, "make it primary on every live member (install it everywhere first)");
  CLI::App* keys_remove = sub(keys, "remove", "stop accepting KEYID (not the primary)");
  keys_remove->add_option("id", key_id, "key id, 8 hex digits (keys list)")->required();
  keys_remove->add_flag("--cluster", cluster_wide, "remove it on every live member (use the new key everywhere first)");
  std::string operator_key, cluster_name, submit_file;
  bool sign_only = false;
  for (CLI::App* k : {keys_install, keys_use, keys_remove}) {
    k->add_option("--operator-key", operator_key,
                  "with --cluster: sign the change with this operator key file (mode 0600); members apply only "
                  "changes signed by the key their cluster.operator_public_key names");
    k->add_option("--cluster-name", cluster_name,
                  "with --operator-key: the cluster the change is for (default: ask the gateway)");
    k->add_flag("--sign-only", sign_only,
                "with --operator-key: print the signed request instead of sending it (keys submit sends it)");
  }
  CLI::App* keys_submit = sub(keys, "submit", "send a signed cluster-wide change made with --sign-only");
  keys_submit->add_option("file", submit_file, "the signed request (one JSON line), '-' for standard input")
      ->required();
  std::string join_addr;
  CLI::App* join = sub(&app, "join", "join the cluster through a member at IP:PORT ([IPv6]:PORT); waits up to 5 s");
  join->add_option("address", join_addr, "a member's gossip address")->required();
  CLI::App* leave = sub(&app, "leave", "leave the cluster gracefully, then stop the gateway");
  std::string force_node;
  CLI::App* force_leave = sub(&app, "force-leave", "mark a failed member as left, cluster-wide");
  force_leave->add_option("name", force_node, "the failed member's name (gossipctl members --state dead)")->required();
  CLI::App* tags = sub(&app, "tags", "change this member's tags (gossiped with a new incarnation)");
  tags->require_subcommand(1);
  std::vector<std::string> tag_args;
  CLI::App* tags_set = sub(tags, "set", "set K=V tags (others are kept)");
  tags_set->add_option("tags", tag_args, "K=V ...")->required();
  CLI::App* tags_unset = sub(tags, "unset", "remove tags by key");
  tags_unset->add_option("keys", tag_args, "K ...")->required();
  std::string level;
  CLI::App* log_level = sub(&app, "log-level", "change the gateway's log level now");
  log_level->add_option("level", level, "trace|debug|info|warn|error|critical|off")
      ->required()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  std::string monitor_level = "info";
  double monitor_seconds = 0;
  CLI::App* monitor = sub(&app, "monitor", "stream the gateway's log (lines at --level and above) until interrupted");
  monitor->add_option("--level", monitor_level, "lowest level shown (the gateway logs at its log.level or above)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical"}));
  monitor->add_option("--duration", monitor_seconds, "stop after this many seconds (0: until interrupted)")
      ->check(CLI::Range(0.0, 86400.0));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  if (show_version) {
    if (as_json) {
      std::printf("%s\n",
                  Json{{"ok", true}, {"gossipctl", {{"version", GW_VERSION}, {"commit", GW_COMMIT}}}}.dump(2).c_str());
    } else {
      std::printf("gossipctl %s (git %s)\n", GW_VERSION, GW_COMMIT);
    }
    return 0;
  }
  if (app.get_subcommands().empty()) return usage_error("a command is required");

  // One JSON object on stdout with --json, for errors too: "ok" is the exit status.
  auto failed = [&](int status, const std::string& message) {
    if (as_json) std::printf("%s\n", Json{{"ok", false}, {"error", message}, {"status", status}}.dump().c_str());
    return fail(status, message);
  };
  auto print_json = [](Json j) {
    if (!j.contains("ok")) {
      Json o{{"ok", true}};
      for (auto& [k, v] : j.items()) o[k] = std::move(v);
      j = std::move(o);
    }
    std::printf("%s\n", j.dump(2).c_str());
  };

  if (!gw::crypto::init()) return failed(kExitRuntime, "libsodium failed to initialise");
  try {
    if (*version) {
      Json j{{"ok", true}, {"gossipctl", {{"version", GW_VERSION}, {"commit", GW_COMMIT}}}};
      // The gateway's too, when one answers (a version command needs no gateway).
      try {
        const Json g = call(socket_path, Json{{"cmd", "info"}});
        j["gateway"] = {
            {"version", g.value("version", "")}, {"commit", g.value("commit", "")}, {"node", g.value("node", "")}};
      } catch (const std::exception&) {
      }
      if (as_json) {
        print_json(j);
      } else {
        std::printf("gossipctl %s (git %s)\n", GW_VERSION, GW_COMMIT);
        if (j.contains("gateway")) {
          std::printf("gateway %s: gossipgw %s (git %s)\n", cell(j["gateway"]["node"]).c_str(),
                      cell(j["gateway"]["version"]).c_str(), cell(j["gateway"]["commit"]).c_str());
        }
      }
    } else if (*keygen) {
      const std::uint32_t id = gw::crypto::write_key_file(out, force);
      const std::string idt = gw::crypto::key_id_text(id);
      if (as_json) {
        print_json(Json{{"file", out}, {"key_id", idt}});
      } else {
        std::printf("%s: key id %s\n", out.c_str(), idt.c_str());
      }
    } else if (*op_keygen) {
      (void)gw::crypto::write_key_file(out, force);
      const gw::crypto::OperatorSigner signer(gw::crypto::load_key_file(out));
      const std::string pk = gw::crypto::operator_key_text(signer.public_key());
      if (as_json) {
        print_json(Json{{"file", out}, {"operator_public_key", pk}});
      } else {
        std::printf(
            "%s: operator key; keep it off the members. In every member's config:\n"
            "cluster:\n  operator_public_key: \"%s\"\n",
            out.c_str(), pk.c_str());
      }
    } else if (*op_pub) {
      const gw::crypto::OperatorSigner signer(gw::crypto::load_key_file(op_key_file));
      const std::string pk = gw::crypto::operator_key_text(signer.public_key());
      if (as_json) {
        print_json(Json{{"file", op_key_file}, {"operator_public_key", pk}});
      } else {
        std::printf("%s\n", pk.c_str());
      }
    } else if (*keyid) {
      Json arr = Json::array();
      for (const std::string& f : files) {
        arr.push_back(Json{
            {"file", f}, {"key_id", gw::crypto::key_id_text(gw::crypto::derive_key_id(gw::crypto::load_key_file(f)))}});
      }
      if (as_json) {
        print_json(Json{{"keys", arr}});
      } else {
        for (const Json& k : arr) std::printf("%s: key id %s\n", cell(k["file"]).c_str(), cell(k["key_id"]).c_str());
      }
    } else if (*check) {
      const gw::config::Config cfg = check_config(check_path);
      // What it needs (issue 17): process memory for the rings and tables
      // (checked against this machine), EAL memory for the packet pools
      // (gossipgw checks it against what EAL has once EAL runs).
      const gw::config::MemoryNeed need = gw::config::memory_needed(cfg);
      const std::uint64_t eal_mb = estimate_memory_mb(cfg);
      if (as_json) {
        print_json(Json{{"config", check_path},
                        {"memory",
                         {{"process_bytes", need.total()},
                          {"rings_bytes", need.rings},
                          {"tables_bytes", need.tables},
                          {"eal_mb", eal_mb}}}});
      } else {
        std::printf(
            "ok: needs %llu MiB of process memory (hand-off rings %llu MiB, guard tables %llu MiB) and "
            "%llu MiB of EAL memory (packet pools and EAL: -m or hugepages, see config eal-args)\n",
            static_cast<unsigned long long>((need.total() + kMiB - 1) / kMiB),
            static_cast<unsigned long long>((need.rings + kMiB - 1) / kMiB),
            static_cast<unsigned long long>((need.tables + kMiB - 1) / kMiB), static_cast<unsigned long long>(eal_mb));
      }
    } else if (*eal_cmd) {
      const std::vector<std::string> args = eal_args(eal);
      if (as_json) {
        print_json(Json{{"eal_args", args}});
      } else {
        for (const std::string& a : args) std::printf("%s\n", a.c_str());
      }
    } else if (*members) {
      Json req{{"cmd", "members"}};
      if (!state_filter.empty()) req["state"] = state_filter;
      if (!tag_filter.empty()) {
        if (tag_filter.find('=') == std::string::npos) throw std::invalid_argument("--tag: expected K=V");
        req["tag"] = tag_filter;
      }
      const Json reply = call(socket_path, req);
      if (as_json) {
        print_json(reply);
      } else if (detailed) {
        print_members_detailed(reply);
      } else {
        print_members(reply);
      }
    } else if (*stats) {
      const Json reply = call(socket_path, Json{{"cmd", "stats"}});
      if (as_json) {
        std::printf("%s\n", reply["stats"].dump(2).c_str());  // the document itself, as --stats-json writes it
      } else {
        print_stats(reply["stats"]);
      }
    } else if (*info) {
      const Json reply = call(socket_path, Json{{"cmd", "info"}});
      if (as_json) {
        print_json(reply);
      } else {
        for (const auto& [k, v] : reply.items()) {
          if (k == "ok") continue;
          std::printf("%-16s %s\n", (k + ":").c_str(), cell(v).c_str());
        }
      }
    } else if (*keys_list && cluster_wide) {
      // Whatever the outcome, what the members said is printed; "ok" is
      // false (exit 1) when some live member did not answer.
      const Json reply = call_raw(socket_path, Json{{"cmd", "keys"}, {"op", "list"}, {"scope", "cluster"}});
      if (as_json) {
        std::printf("%s\n", reply.dump(2).c_str());
      } else if (reply.contains("keys")) {
        std::vector<std::vector<std::string>> rows;
        for (const Json& k : reply["keys"]) {
          std::string lacking;
          for (const Json& n : k["lacking"]) lacking += (lacking.empty() ? "" : ",") + cell(n);
          rows.push_back({cell(k["id"]), "[" + cell(k["held_by"]) + "/" + cell(k["members"]) + "]",
                          "[" + cell(k["primary_on"]) + "/" + cell(k["members"]) + "]",
                          lacking.empty() ? "-" : lacking});
        }
        print_table({"KEY", "HELD BY", "PRIMARY ON", "LACKING"}, rows);
        std::string missing;
        for (const Json& n : reply["no_answer"]) missing += (missing.empty() ? "" : ",") + cell(n);
        if (!missing.empty()) std::printf("no answer from: %s\n", missing.c_str());
      }
      // The reply printed above is the one document (with "ok" false): the
      // error goes to stderr only.
      if (const int st = reply_status(reply); st != 0) return fail(st, reply.value("error", std::string("failed")));
    } else if (*keys_list) {
      const Json reply = call(socket_path, Json{{"cmd", "keys"}, {"op", "list"}});
      if (as_json) {
        print_json(reply);
      } else {
        std::vector<std::vector<std::string>> rows;
        for (const Json& k : reply["keys"]) {
          rows.push_back(
              {cell(k["id"]), k["primary"].get<bool>() ? "yes" : "", cell(k["suite"]), cell(k["members_using"])});
        }
        print_table({"KEY", "PRIMARY", "SUITE", "MEMBERS USING"}, rows);
        std::printf("%s live member(s); %s not heard from yet\n", cell(reply["live_members"]).c_str(),
                    cell(reply["members_key_unknown"]).c_str());
      }
    } else if (*keys_install || *keys_use || *keys_remove) {
      Json req{{"cmd", "keys"}};
      if (*keys_install) {
        req["op"] = "install";
        req["key"] = read_key_hex(key_file);
        if (key_primary) req["primary"] = true;
      } else {
        req["op"] = *keys_use ? "use" : "remove";
        req["id"] = key_id;
      }
      if (!cluster_wide && (!operator_key.empty() || sign_only || !cluster_name.empty())) {
        throw std::invalid_argument("--operator-key, --cluster-name and --sign-only go with --cluster");
      }
      if (sign_only && operator_key.empty()) throw std::invalid_argument("--sign-only needs --operator-key");
      if (cluster_wide) {
        if (key_primary)
          throw std::invalid_argument("--primary with --cluster: install everywhere, then 'keys use --cluster'");
        req["scope"] = "cluster";
        if (!operator_key.empty()) {
          if (cluster_name.empty()) {
            cluster_name = call(socket_path, Json{{"cmd", "info"}}).value("cluster", std::string());
          }
          sign_request(req, operator_key, cluster_name);
        }
        if (sign_only) {
          std::printf("%s\n", req.dump().c_str());
          return 0;
        }
        // The whole outcome is printed either way; "ok" is the exit status.
        const Json reply = call_raw(socket_path, req);
        if (as_json) {
          std::printf("%s\n", reply.dump(2).c_str());
        } else if (reply.contains("targets")) {
          print_cluster_step("keys " + req["op"].get<std::string>() + " --cluster", reply);
        }
        if (const int st = reply_status(reply); st != 0) return fail(st, reply.value("error", std::string("failed")));
      } else {
        const Json reply = call(socket_path, req);
        if (as_json) {
          print_json(reply);
        } else {
          std::string ids;
          for (const Json& k : reply["keys"]) ids += (ids.empty() ? "" : " ") + cell(k);
          std::printf("ok: keys %s, primary %s\n", ids.c_str(), cell(reply["primary"]).c_str());
        }
      }
    } else if (*keys_submit) {
      std::string line;
      if (submit_file == "-") {
        std::getline(std::cin, line);
      } else {
        std::ifstream in(submit_file);
        if (!in) throw std::invalid_argument("cannot read " + submit_file);
        std::getline(in, line);
      }
      const Json req = Json::parse(line, nullptr, false);
      if (req.is_discarded() || !req.is_object() || req.value("scope", std::string()) != "cluster" ||
          !req.contains("signature")) {
        throw std::invalid_argument(submit_file + ": not a signed cluster-wide key request (keys ... --sign-only)");
      }
      // As `keys install|use|remove --cluster`: the one document under
      // --json, else what each member did in words; "ok" is the exit status.
      const Json reply = call_raw(socket_path, req);
      if (as_json) {
        std::printf("%s\n", reply.dump(2).c_str());
      } else if (reply.contains("targets")) {
        const std::string op = req.contains("op") && req["op"].is_string() ? req["op"].get<std::string>() : "?";
        print_cluster_step("keys " + op + " --cluster (submitted)", reply);
      }
      if (const int st = reply_status(reply); st != 0) return fail(st, reply.value("error", std::string("failed")));
    } else if (*join) {
      // Waits for the answer (at most 5 s): exit 0 once a member there
      // answered, 1 if none did, 2 for a malformed or wrong-family address.
      const Json reply = call(socket_path, Json{{"cmd", "join"}, {"address", join_addr}});
      if (as_json) {
        print_json(reply);
      } else {
        std::printf("joined through %s: %s member(s) answered, %s live\n", cell(reply["joined"]).c_str(),
                    cell(reply["answered"]).c_str(), cell(reply["live_members"]).c_str());
      }
    } else if (*leave) {
      const Json reply = call(socket_path, Json{{"cmd", "leave"}});
      if (as_json) {
        print_json(reply);
      } else {
        // Answered once the leave went out (docs/operations.md, "Exit status").
        std::printf("graceful leave complete (%s ms); the gateway is stopping\n", cell(reply["took_ms"]).c_str());
      }
    } else if (*force_leave) {
      const Json reply = call(socket_path, Json{{"cmd", "force-leave"}, {"node", force_node}});
      if (as_json) {
        print_json(reply);
      } else {
        std::printf("%s: left%s\n", force_node.c_str(), reply.value("changed", false) ? "" : " (already)");
      }
    } else if (*tags_set || *tags_unset) {
      Json req{{"cmd", "tags"}};
      if (*tags_set) {
        Json t = Json::object();
        for (const std::string& kv : tag_args) {
          const std::size_t eq = kv.find('=');
          if (eq == std::string::npos || eq == 0)
            throw std::invalid_argument("tags set: expected K=V, got '" + kv + "'");
          t[kv.substr(0, eq)] = kv.substr(eq + 1);
        }
        req["op"] = "set";
        req["tags"] = t;
      } else {
        req["op"] = "unset";
        req["keys"] = tag_args;
      }
      const Json reply = call(socket_path, req);
      if (as_json) {
        print_json(reply);
      } else {
        std::string shown;
        for (const auto& [k, v] : reply["tags"].items()) shown += (shown.empty() ? "" : ",") + k + "=" + cell(v);
        std::printf("tags now {%s}, incarnation %s\n", shown.c_str(), cell(reply["incarnation"]).c_str());
      }
    } else if (*log_level) {
      const Json reply = call(socket_path, Json{{"cmd", "log-level"}, {"level", level}});
      if (as_json) {
        print_json(reply);
      } else {
        std::printf("log level %s\n", level.c_str());
      }
    } else if (*monitor) {
      // Polls the gateway's ring of recent lines (each request returns what
      // is new since the last), starting with what it still holds.
      std::uint64_t since = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (;;) {
        const Json reply = call(socket_path, Json{{"cmd", "monitor"}, {"since", since}, {"level", monitor_level}});
        for (const Json& l : reply["lines"]) {
          if (as_json) {
            std::printf("%s\n", l.dump().c_str());
          } else {
            std::printf("%s\n", cell(l["text"]).c_str());
          }
        }
        std::fflush(stdout);
        since = reply.value("next", since);
        if (monitor_seconds > 0 &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= monitor_seconds) {
          break;
        }
        if (reply["lines"].size() < 256) std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
  } catch (const gw::crypto::KeyError& e) {
    return failed(kExitUsage, e.what());
  } catch (const gw::config::ConfigError& e) {
    return failed(kExitUsage, e.what());
  } catch (const std::invalid_argument& e) {
    return failed(kExitUsage, e.what());
  } catch (const RemoteError& e) {
    return failed(e.status(), e.what());
  } catch (const std::runtime_error& e) {
    // resolve_suite and check_config: a field the CPU or the parser refuses,
    // a classifier rule that does not compile.
    return failed(kExitUsage, e.what());
  }
  return 0;
}
