#include "config/loader.h"

#include "config/dns_name.h"

#include <fcntl.h>
#include <hs.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "base/endpoint.h"

namespace gw::config {

namespace {

using strict::describe;
using strict::escape;
using strict::Field;
using strict::indexed;
using strict::join;
using strict::line_of;
using strict::Map;
using strict::quote;

// A config file is a few dozen lines; anything this large is a wrong path
// (a log, a disk image) and should not be read into memory.
constexpr std::size_t kMaxFileBytes = std::size_t{1} << 20;

constexpr std::size_t kClusterNameMax = 64;
constexpr std::size_t kNodeNameMax = 128;
constexpr std::size_t kMaxKeys = 8;
constexpr std::size_t kMaxWorkers = 64;
constexpr std::size_t kMaxNeighbors = 256;  // dataplane/neighbors.h kMaxPinned
// classifier.rules (dataplane/classifier.h holds the same bounds).
constexpr std::size_t kMaxClassifierRules = 32;
constexpr std::size_t kMaxRuleNameBytes = 48;
constexpr std::size_t kMaxPatternBytes = 1024;
// The compile bound (issue 17: one in-range rule took 18 s to compile, 32
// never finished in 20 s). Hyperscan's compile time grows with the bounds
// of counted repeats (measured on the CI machine: x.{0,128}y.{0,128}z 0.13 s,
// x.{0,500}y.{0,500}z 0.25 s, x.{0,1000}y.{0,1000}z 0.66 s), multiplied
// through nested groups. A rule's repeat weight (repeat_weight below) may be
// at most kMaxRepeatWeight, all rules together kMaxTotalRepeatWeight: the
// classifier scans at most a few hundred bytes anyway (classifier.scan_bytes).
constexpr std::uint64_t kMaxRepeatWeight = 256;
constexpr std::uint64_t kMaxTotalRepeatWeight = 2048;

// The sum of the upper bounds of a pattern's counted repeats ({n}, {n,},
// {n,m}), a group's weight (its content plus one) multiplied by a repeat
// that follows it. Character classes and escapes are skipped; * + ? weigh
// nothing. Saturates instead of overflowing.
std::uint64_t repeat_weight(std::string_view p) {
  constexpr std::uint64_t kCap = 1ULL << 40;
  std::vector<std::uint64_t> stack{0};
  std::uint64_t last_group = 0;  // weight of the group that just closed
  bool after_group = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char ch = p[i];
    if (ch == '\\') {
      ++i;
      after_group = false;
      continue;
    }
    if (ch == '[') {
      std::size_t j = i + 1;
      if (j < p.size() && p[j] == '^') ++j;
      if (j < p.size() && p[j] == ']') ++j;
      while (j < p.size() && p[j] != ']') j += p[j] == '\\' ? 2 : 1;
      i = j;
      after_group = false;
      continue;
    }
    if (ch == '(') {
      stack.push_back(0);
      after_group = false;
      continue;
    }
    if (ch == ')') {
      last_group = stack.size() > 1 ? stack.back() : 0;
      if (stack.size() > 1) stack.pop_back();
      stack.back() = std::min(kCap, stack.back() + last_group);
      after_group = true;
      continue;
    }
    if (ch == '{') {
      std::size_t j = i + 1;
      std::uint64_t bound = 0;
      std::uint64_t num = 0;
      bool digits = false;
      for (; j < p.size() && ((p[j] >= '0' && p[j] <= '9') || p[j] == ','); ++j) {
        if (p[j] == ',') {
          bound = std::max(bound, num);
          num = 0;
        } else {
          num = std::min(kCap, num * 10 + static_cast<std::uint64_t>(p[j] - '0'));
          digits = true;
        }
      }
      if (digits && j < p.size() && p[j] == '}') {
        bound = std::max(bound, num);
        if (after_group) {
          // The group was added once; it now counts (weight + 1) x bound.
          stack.back() = std::min(kCap, stack.back() - last_group + (last_group + 1) * bound);
        } else {
          stack.back() = std::min(kCap, stack.back() + bound);
        }
        i = j;
      }
      after_group = false;
      continue;
    }
    after_group = false;
  }
  return stack.front();
}

// "" if `text` is an IPv4 or IPv6 prefix ("10.0.0.0/8", "fd00::/8", or a
// bare address), else why not. Host bits set below the length are refused:
// "10.1.2.3/8" is more likely a typo than a wish for 10.0.0.0/8.
std::string cidr_problem(const std::string& text) {
  const std::size_t slash = text.find('/');
  const std::optional<base::IpBytes> ip = base::parse_ip(text.substr(0, slash));
  if (!ip) return "expected an IPv4 or IPv6 prefix such as \"10.0.0.0/8\" or \"fd00::/8\", got " + quote(text);
  const std::size_t max_bits = ip->size() * 8;
  std::size_t bits = max_bits;
  if (slash != std::string::npos) {
    const std::string len = text.substr(slash + 1);
    std::uint64_t v = 0;
    if (len.empty() || len.size() > 3 ||
        !std::all_of(len.begin(), len.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        strict::parse_uint(len, v) != strict::UintParse::kOk || v > max_bits) {
      return "prefix length must be 0.." + std::to_string(max_bits) + ", got " + quote(text);
    }
    bits = static_cast<std::size_t>(v);
  }
  for (std::size_t b = bits; b < max_bits; ++b) {
    if (((*ip)[b / 8] >> (7 - b % 8)) & 1) {
      return "host bits set below the prefix length in " + quote(text) + " (did you mean the network address?)";
    }
  }
  return "";
}

class Parser : public strict::Reader {
 public:
  explicit Parser(std::string source) : Reader(std::move(source)) {}

  Config parse(std::string_view text, std::string_view base_dir) const {
    const YAML::Node root = load_document(text);
    if (!root.IsMap()) {
      fail("", line_of(root), "top level must be a map of sections, got " + describe(root));
    }
    const Map top(*this, root, "", line_of(root),
                  {"mode", "cluster", "node", "lcores", "rings", "dataplane", "limits", "classifier", "membership",
                   "control", "metrics", "events", "log", "memberlist"},
                  false);

    Config config;
    config.base_dir = std::string(base_dir);
    if (std::optional<Field> f = top.find("mode")) {
      const std::string mode = read_string(*f);
      if (mode == "native") {
        config.mode = Mode::kNative;
      } else if (mode == "memberlist") {
        config.mode = Mode::kMemberlist;
      } else {
        fail(f->path, f->line, "unknown mode " + quote(mode) + "; expected native or memberlist");
      }
    }
    if (config.mode == Mode::kMemberlist) {
      parse_memberlist_mode(top, config);
      return config;
    }
    if (std::optional<Field> f = top.find("memberlist")) {
      fail(f->path, f->line, "only read in mode: memberlist (this config is mode: native, the default)");
    }
    parse_cluster(section(top, "cluster", {"name", "suite", "keys", "operator_public_key"}), config);
    parse_node(section(top, "node", {"name", "address", "port", "prefix_len"}), config.node);
    parse_lcores(section(top, "lcores", {"control", "workers"}), config.lcores);
    parse_rings(section(top, "rings", {"size"}), config.rings);
    parse_dataplane(section(top, "dataplane",
                            {"port_id", "mbufs", "burst", "rx_descriptors", "tx_descriptors", "idle_backoff_us",
                             "neighbors", "arp_hints"}),
                    config.dataplane);
    parse_limits(section(top, "limits",
                         {"max_payload_bytes", "replay_window_s", "replay_senders", "replay_senders_per_source",
                          "known_rate_pps", "known_burst", "unknown_rate_pps", "unknown_burst", "sources"}),
                 config.limits);
    parse_classifier(section(top, "classifier",
                             {"enabled", "builtins", "scan_bytes", "max_scans_per_burst", "max_scans_per_sec", "rules",
                              "compile_budget_ms"}),
                     config.classifier);
    parse_membership(section(top, "membership",
                             {"enabled", "preset", "seeds", "tags", "allowed_name_prefixes", "required_tags",
                              "admit_rate", "admit_burst", "egress_bytes_per_sec", "egress_burst_bytes",
                              "egress_queue_bytes", "egress_max_age_ms", "leave_timeout_ms", "reconnect_timeout_s"}),
                     config.membership);
    parse_control(section(top, "control", {"socket", "state_dir"}), config.control);
    parse_metrics(section(top, "metrics", {"interval_ms", "telemetry", "prometheus_address", "prometheus_port"}),
                  config.metrics);
    parse_events(section(top, "events",
                         {"handler", "handler_args", "max_concurrent", "queue", "timeout_ms", "coalesce_ms",
                          "hosts_file", "hosts_min_interval_ms"}),
                 config.events, config.cluster.name);
    parse_log(section(top, "log", {"level"}), config.log);
    return config;
  }

 private:
  // mode: memberlist (docs/filter-mode.md). The native gateway's own
  // sections mean nothing to a filter in front of someone else's agent, so
  // they are refused by name rather than silently ignored: an operator who
  // copied them over learns at once that they have no effect.
  void parse_memberlist_mode(const Map& top, Config& config) const {
    for (std::string_view name : {"cluster", "node", "rings", "limits", "classifier", "membership", "events"}) {
      if (std::optional<Field> f = top.find(name)) {
        fail(f->path, f->line, "native mode only: not used in mode: memberlist; remove the section");
      }
    }
    parse_lcores(section(top, "lcores", {"control", "workers"}), config.lcores);
    const Map dp = section(
        top, "dataplane",
        {"port_id", "mbufs", "burst", "rx_descriptors", "tx_descriptors", "idle_backoff_us", "neighbors", "arp_hints"});
    for (std::string_view name : {"neighbors", "arp_hints"}) {
      if (std::optional<Field> f = dp.find(name)) {
        fail(f->path, f->line, "native mode only: in mode: memberlist frames pass unchanged; remove it");
      }
    }
    parse_dataplane(dp, config.dataplane);
    const Map control = section(top, "control", {"socket", "state_dir"});
    if (std::optional<Field> f = control.find("state_dir")) {
      fail(f->path, f->line,
           "native mode only: mode: memberlist persists nothing (the keyring is memberlist.keyring_file)");
    }
    // Refused rather than accepted and not served: the filter has no control
    // API yet (its counters are in --stats-json, Prometheus and telemetry;
    // its keys follow memberlist.keyring_file).
    if (std::optional<Field> f = control.find("socket")) {
      fail(f->path, f->line,
           "native mode only: mode: memberlist has no control API yet (counters: --stats-json, "
           "metrics.prometheus_port, DPDK telemetry; keys: memberlist.keyring_file)");
    }
    parse_control(control, config.control);
    parse_metrics(section(top, "metrics", {"interval_ms", "telemetry", "prometheus_address", "prometheus_port"}),
                  config.metrics);
    parse_log(section(top, "log", {"level"}), config.log);
    parse_memberlist(section(top, "memberlist",
                             {"ports", "agent_port_id", "allow_cidrs", "allow_plaintext_cidrs", "keyring_file", "label",
                              "per_source_pps", "per_source_burst", "sources", "tcp_connections_per_sec",
                              "tcp_connections_burst", "egress_bytes_per_sec", "egress_burst_bytes", "max_inflated",
                              "max_name", "max_probe_messages", "agent_udp_port"}),
                     config);
  }

  void parse_memberlist(const Map& m, Config& config) const {
    MemberlistConfig& ml = config.memberlist;
    if (std::optional<Field> ports = m.find("ports")) {
      const YAML::Node& list = ports->value;
      if (!list.IsSequence()) fail(ports->path, ports->line, "expected a list of UDP/TCP ports, got " + describe(list));
      if (list.size() < 1 || list.size() > 4) {
        fail(ports->path, ports->line, "must have 1..4 entries, got " + std::to_string(list.size()));
      }
      ml.ports.clear();
      for (std::size_t i = 0; i < list.size(); ++i) {
        const Field f = strict::element(*ports, i);
        const std::uint16_t port = read_uint<std::uint16_t>(f, 1, 65535);
        const auto dup = std::find(ml.ports.begin(), ml.ports.end(), port);
        if (dup != ml.ports.end()) {
          fail(f.path, f.line,
               "port " + std::to_string(port) + " is also " +
                   indexed(ports->path, static_cast<std::size_t>(dup - ml.ports.begin())));
        }
        ml.ports.push_back(port);
      }
    }
    if (std::optional<Field> f = m.find("agent_port_id")) {
      ml.agent_port_id = read_uint<std::uint16_t>(*f);
      if (ml.agent_port_id == config.dataplane.port_id) {
        fail(f->path, f->line,
             "must differ from dataplane.port_id (" + std::to_string(config.dataplane.port_id) +
                 "): the agent's exception path is a port of its own (a net_tap or virtio_user vdev)");
      }
    } else if (ml.agent_port_id == config.dataplane.port_id) {
      fail(join(m.path(), "agent_port_id"), m.line(),
           "the default (1) equals dataplane.port_id; set the DPDK port id of the agent's exception path");
    }
    if (std::optional<Field> f = m.find("allow_cidrs")) ml.allow_cidrs = read_cidrs(*f);
    if (std::optional<Field> f = m.find("allow_plaintext_cidrs")) ml.allow_plaintext_cidrs = read_cidrs(*f);
    if (std::optional<Field> f = m.find("keyring_file")) {
      ml.keyring_file = read_string(*f);
      if (ml.keyring_file.size() > 4000 || ml.keyring_file.find('\0') != std::string::npos) {
        fail(f->path, f->line, "must be a path of at most 4000 bytes without NUL");
      }
    }
    if (std::optional<Field> f = m.find("label")) {
      ml.label = read_string(*f);
      if (ml.label.size() > 255) {
        fail(f->path, f->line,
             "must be 0..255 bytes (memberlist's label header), got " + std::to_string(ml.label.size()));
      }
    }
    if (auto f = m.find("per_source_pps")) ml.per_source_pps = read_uint<std::uint32_t>(*f, 1, 10000000);
    if (auto f = m.find("per_source_burst")) ml.per_source_burst = read_uint<std::uint32_t>(*f, 1, 10000000);
    if (auto f = m.find("sources")) ml.sources = read_uint<std::uint32_t>(*f, 64, 1048576);
    if (auto f = m.find("tcp_connections_per_sec")) {
      ml.tcp_connections_per_sec = read_uint<std::uint32_t>(*f, 1, 1000000);
    }
    if (auto f = m.find("tcp_connections_burst")) ml.tcp_connections_burst = read_uint<std::uint32_t>(*f, 1, 1000000);
    if (auto f = m.find("egress_bytes_per_sec")) {
      ml.egress_bytes_per_sec = read_uint<std::uint64_t>(*f, 0, 4294967295ULL);
    }
    if (auto f = m.find("egress_burst_bytes")) {
      ml.egress_burst_bytes = read_uint<std::uint64_t>(*f, 9216, 4294967295ULL);
    }
    if (auto f = m.find("max_inflated")) ml.max_inflated = read_uint<std::uint32_t>(*f, 1024, 16777216);
    if (auto f = m.find("max_name")) ml.max_name = read_uint<std::uint32_t>(*f, 1, 65535);
    if (auto f = m.find("max_probe_messages")) ml.max_probe_messages = read_uint<std::uint32_t>(*f, 1, 255);
    if (auto f = m.find("agent_udp_port")) ml.agent_udp_port = read_uint<std::uint16_t>(*f, 1, 65535);
  }

  // A list of "PREFIX/LEN" or bare addresses, checked here so a typo fails at
  // load with its line (ml::CidrSet::parse reads the same spellings).
  std::vector<std::string> read_cidrs(const Field& list_f) const {
    constexpr std::size_t kMaxCidrs = 1024;
    const YAML::Node& list = list_f.value;
    if (!list.IsSequence()) {
      fail(list_f.path, list_f.line, "expected a list of IPv4/IPv6 prefixes (\"10.0.0.0/8\"), got " + describe(list));
    }
    if (list.size() > kMaxCidrs) {
      fail(list_f.path, list_f.line,
           "at most " + std::to_string(kMaxCidrs) + " entries, got " + std::to_string(list.size()));
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const Field f = strict::element(list_f, i);
      std::string text = read_string(f);
      if (const std::string why = cidr_problem(text); !why.empty()) fail(f.path, f.line, why);
      out.push_back(std::move(text));
    }
    return out;
  }

  // An absent section is an empty one: its required fields are reported as
  // missing (line 0), everything else takes the struct default.
  Map section(const Map& top, std::string_view name, std::initializer_list<std::string_view> known) const {
    std::optional<Field> f = top.find(name);
    if (!f) return Map(*this, YAML::Node(), std::string(name), 0, known, true);
    return Map(*this, f->value, f->path, f->line, known, true);
  }

  void parse_cluster(const Map& m, Config& config) const {
    const Field name = m.require("name");
    config.cluster.name = read_string(name);
    check_name(
        name, config.cluster.name, kClusterNameMax,
        [](char c) {
          return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                 c == '-';
        },
        "A-Z a-z 0-9 . _ -");

    if (std::optional<Field> suite = m.find("suite")) {
      const std::string s = read_string(*suite);
      if (s == "auto") {
        config.cluster.suite = SuiteChoice::kAuto;
      } else if (s == "aes256gcm") {
        config.cluster.suite = SuiteChoice::kAes256Gcm;
      } else if (s == "chacha20poly1305") {
        config.cluster.suite = SuiteChoice::kChaCha20Poly1305;
      } else {
        fail(suite->path, suite->line,
             "unknown suite " + quote(s) + "; expected one of auto, aes256gcm, chacha20poly1305");
      }
    }

    parse_keys(m.require("keys"), config);

    if (std::optional<Field> op = m.find("operator_public_key")) {
      const std::string hex = read_string(*op);
      const bool ok = hex.size() == 64 && std::all_of(hex.begin(), hex.end(), [](char c) {
                        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
                      });
      if (!ok) {
        fail(op->path, op->line,
             "expected 64 hex digits (an Ed25519 public key, as gossipctl operator-keygen prints it), got " +
                 quote(hex.size() > 80 ? hex.substr(0, 80) + "..." : hex));
      }
      config.cluster.operator_public_key = hex;
    }
  }

  void parse_keys(const Field& keys, Config& config) const {
    const YAML::Node& list = keys.value;
    if (!list.IsSequence()) {
      fail(keys.path, keys.line, "expected a list of {file, primary} maps, got " + describe(list));
    }
    // size() before walking: a list of a million entries is rejected unread.
    if (list.size() < 1 || list.size() > kMaxKeys) {
      fail(keys.path, keys.line,
           "must have 1.." + std::to_string(kMaxKeys) + " entries, got " + std::to_string(list.size()));
    }
    std::vector<bool> primary_given;
    std::vector<int> lines;
    std::vector<std::string> normal;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const YAML::Node entry = list[i];
      const std::string path = indexed(keys.path, i);
      const int line = line_of(entry) > 0 ? line_of(entry) : keys.line;
      const Map m(*this, entry, path, line, {"file", "primary"}, false);
      KeyConfig key;
      const Field file = m.require("file");
      key.file = read_string(file);
      if (key.file.empty()) fail(file.path, file.line, "must not be empty");
      if (key.file.find('\0') != std::string::npos) {
        fail(file.path, file.line, "must not contain NUL bytes");
      }
      // Same file spelt twice (`k.key`, `./k.key`) would make two key ids for
      // one key. Compared lexically: a `..` through a symlink is not caught.
      std::string normalised = (std::filesystem::path(config.base_dir) / key.file).lexically_normal().string();
      for (std::size_t j = 0; j < normal.size(); ++j) {
        if (normal[j] == normalised) {
          fail(file.path, file.line, "same key file as " + indexed(keys.path, j) + ".file");
        }
      }
      normal.push_back(std::move(normalised));
      const std::optional<Field> primary = m.find("primary");
      if (primary) key.primary = read_bool(*primary);
      primary_given.push_back(primary.has_value());
      lines.push_back(primary ? primary->line : line);
      config.cluster.keys.push_back(std::move(key));
    }

    auto& parsed = config.cluster.keys;
    // One key and no say: it can only be the one we seal with.
    if (parsed.size() == 1 && !primary_given[0]) parsed[0].primary = true;
    std::optional<std::size_t> first_primary;
    for (std::size_t i = 0; i < parsed.size(); ++i) {
      if (!parsed[i].primary) continue;
      if (first_primary) {
        fail(indexed(keys.path, i) + ".primary", lines[i],
             "more than one primary key (" + indexed(keys.path, *first_primary) +
                 " is primary too); exactly one must be");
      }
      first_primary = i;
    }
    if (!first_primary) {
      fail(keys.path, keys.line, "no key has primary: true; exactly one must");
    }
  }

  void parse_node(const Map& m, NodeConfig& node) const {
    if (std::optional<Field> name = m.find("name")) {
      node.name = read_string(*name);
      check_name(
          *name, node.name, kNodeNameMax, [](char c) { return c > ' ' && c < 0x7f; }, "printable ASCII without spaces");
    } else {
      node.name = host_name();
      const Field fallback{join(m.path(), "name"), 0, YAML::Node()};
      if (node.name.empty()) {
        fail(fallback.path, 0, "not set and the host name is unavailable; set node.name");
      }
      check_name(
          fallback, node.name, kNodeNameMax, [](char c) { return c > ' ' && c < 0x7f; },
          "printable ASCII without spaces (default: the host name)");
    }

    const Field address = m.require("address");
    node.address = read_string(address);
    // parse_ip refuses a NUL, where inet_pton would accept "10.0.0.1\0junk".
    if (!base::parse_ip(node.address)) {
      fail(address.path, address.line,
           "expected an IPv4 or IPv6 address (host names are not resolved), got " + quote(node.address));
    }

    if (std::optional<Field> port = m.find("port")) node.port = read_uint<std::uint16_t>(*port, 1);
    if (std::optional<Field> prefix = m.find("prefix_len")) {
      node.prefix_len = read_uint<std::uint8_t>(*prefix, 0, 32);
      if (node.address.find(':') != std::string::npos) {
        fail(prefix->path, prefix->line, "applies to an IPv4 node.address only (IPv6 has no subnet broadcast)");
      }
    }
  }

  void parse_lcores(const Map& m, LcoreConfig& lcores) const {
    if (std::optional<Field> control = m.find("control")) {
      lcores.control = read_uint<unsigned>(*control);
    }
    std::optional<Field> workers = m.find("workers");
    if (!workers) return;
    const YAML::Node& list = workers->value;
    if (!list.IsSequence()) {
      fail(workers->path, workers->line, "expected a list of lcore ids, got " + describe(list));
    }
    if (list.size() < 1 || list.size() > kMaxWorkers) {
      fail(workers->path, workers->line,
           "must have 1.." + std::to_string(kMaxWorkers) + " entries, got " + std::to_string(list.size()));
    }
    lcores.workers.clear();
    for (std::size_t i = 0; i < list.size(); ++i) {
      const YAML::Node item = list[i];
      const Field f{indexed(workers->path, i), line_of(item) > 0 ? line_of(item) : workers->line, item};
      const unsigned id = read_uint<unsigned>(f);
      if (id == lcores.control) {
        fail(f.path, f.line, "lcore " + std::to_string(id) + " is lcores.control");
      }
      const auto dup = std::find(lcores.workers.begin(), lcores.workers.end(), id);
      if (dup != lcores.workers.end()) {
        fail(f.path, f.line,
             "lcore " + std::to_string(id) + " is also " +
                 indexed(workers->path, static_cast<std::size_t>(dup - lcores.workers.begin())));
      }
      lcores.workers.push_back(id);
    }
  }

  void parse_rings(const Map& m, RingConfig& rings) const {
    if (std::optional<Field> size = m.find("size")) {
      rings.size = read_uint<std::uint32_t>(*size, 64, 1048576);
      // DPDK rings are power-of-two sized; say so here rather than at EAL start.
      if ((rings.size & (rings.size - 1)) != 0) {
        fail(size->path, size->line, "must be a power of two, got " + std::to_string(rings.size));
      }
    }
  }

  void parse_dataplane(const Map& m, DataplaneConfig& dp) const {
    if (auto f = m.find("port_id")) dp.port_id = read_uint<std::uint16_t>(*f);
    if (auto f = m.find("mbufs")) dp.mbufs = read_uint<std::uint32_t>(*f, 1024, 1048576);
    if (auto f = m.find("burst")) dp.burst = read_uint<std::uint16_t>(*f, 1, 512);
    if (auto f = m.find("rx_descriptors")) {
      dp.rx_descriptors = read_uint<std::uint16_t>(*f, 64, 16384);
    }
    if (auto f = m.find("tx_descriptors")) {
      dp.tx_descriptors = read_uint<std::uint16_t>(*f, 64, 16384);
    }
    if (auto f = m.find("idle_backoff_us")) {
      dp.idle_backoff_us = read_uint<std::uint32_t>(*f, 0, 100000);
    }
    if (auto f = m.find("arp_hints")) dp.arp_hints = read_bool(*f);
    if (std::optional<Field> list_f = m.find("neighbors")) {
      const YAML::Node& list = list_f->value;
      if (!list.IsSequence()) {
        fail(list_f->path, list_f->line, "expected a list of {address, mac}, got " + describe(list));
      }
      if (list.size() > kMaxNeighbors) {
        fail(list_f->path, list_f->line,
             "at most " + std::to_string(kMaxNeighbors) + " entries, got " + std::to_string(list.size()));
      }
      for (std::size_t i = 0; i < list.size(); ++i) {
        const YAML::Node item = list[i];
        const std::string path = indexed(list_f->path, i);
        const int line = line_of(item) > 0 ? line_of(item) : list_f->line;
        const Map nm(*this, item, path, line, {"address", "mac"}, false);
        const Field address = nm.require("address");
        const Field mac = nm.require("mac");
        DataplaneConfig::Neighbor n;
        n.address = read_string(address);
        if (!base::parse_ip(n.address)) {
          fail(address.path, address.line, "expected an IPv4 or IPv6 address, got " + quote(n.address));
        }
        for (const DataplaneConfig::Neighbor& seen : dp.neighbors) {
          if (seen.address == n.address) fail(address.path, address.line, quote(n.address) + " is listed twice");
        }
        const std::string text = read_string(mac);
        unsigned b[6];
        char tail = 0;
        if (text.size() != 17 || std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3],
                                             &b[4], &b[5], &tail) != 6) {
          fail(mac.path, mac.line, "expected a MAC address such as 02:00:00:00:00:02, got " + quote(text));
        }
        for (int k = 0; k < 6; ++k) n.mac[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(b[k]);
        if ((n.mac[0] & 0x01) != 0 || n.mac == std::array<std::uint8_t, 6>{}) {
          fail(mac.path, mac.line,
               "must be a unicast MAC address (not zero, broadcast or multicast), got " + quote(text));
        }
        dp.neighbors.push_back(std::move(n));
      }
    }
  }

  void parse_limits(const Map& m, LimitsConfig& limits) const {
    if (auto f = m.find("max_payload_bytes")) {
      limits.max_payload_bytes = read_uint<std::uint32_t>(*f, 64, kMaxPayloadBytes);
    }
    if (auto f = m.find("replay_window_s")) limits.replay_window_s = read_uint<std::uint32_t>(*f, 1, 3600);
    if (auto f = m.find("replay_senders")) limits.replay_senders = read_uint<std::uint32_t>(*f, 64, 1048576);
    if (auto f = m.find("replay_senders_per_source")) {
      limits.replay_senders_per_source = read_uint<std::uint32_t>(*f, 1, limits.replay_senders);
    }
    if (auto f = m.find("known_rate_pps")) limits.known_rate_pps = read_uint<std::uint32_t>(*f, 1, 10000000);
    if (auto f = m.find("known_burst")) limits.known_burst = read_uint<std::uint32_t>(*f, 1, 10000000);
    if (auto f = m.find("unknown_rate_pps")) limits.unknown_rate_pps = read_uint<std::uint32_t>(*f, 1, 10000000);
    if (auto f = m.find("unknown_burst")) limits.unknown_burst = read_uint<std::uint32_t>(*f, 1, 10000000);
    if (auto f = m.find("sources")) limits.sources = read_uint<std::uint32_t>(*f, 64, 1048576);
  }

  void parse_classifier(const Map& m, ClassifierConfig& c) const {
    if (auto f = m.find("enabled")) c.enabled = read_bool(*f);
    if (auto f = m.find("builtins")) c.builtins = read_bool(*f);
    if (auto f = m.find("scan_bytes")) c.scan_bytes = read_uint<std::uint32_t>(*f, 64, 1500);
    if (auto f = m.find("max_scans_per_burst")) {
      c.max_scans_per_burst = read_uint<std::uint32_t>(*f, 0, 512);
    }
    if (auto f = m.find("max_scans_per_sec")) {
      c.max_scans_per_sec = read_uint<std::uint32_t>(*f, 0, 10000000);
    }
    if (auto f = m.find("compile_budget_ms")) c.compile_budget_ms = read_uint<std::uint32_t>(*f, 10, 600000);
    std::optional<Field> rules = m.find("rules");
    if (!rules) return;
    const YAML::Node& list = rules->value;
    if (!list.IsSequence()) {
      fail(rules->path, rules->line, "expected a list of {name, pattern}, got " + describe(list));
    }
    if (list.size() > kMaxClassifierRules) {
      fail(rules->path, rules->line,
           "at most " + std::to_string(kMaxClassifierRules) + " rules, got " + std::to_string(list.size()));
    }
    std::uint64_t total_weight = 0;  // repeat_weight over all rules
    for (std::size_t i = 0; i < list.size(); ++i) {
      const YAML::Node item = list[i];
      const std::string path = indexed(rules->path, i);
      const int line = line_of(item) > 0 ? line_of(item) : rules->line;
      const Map rm(*this, item, path, line, {"name", "pattern"}, false);
      const Field name = rm.require("name");
      const Field pattern = rm.require("pattern");
      ClassifierConfig::Rule r;
      r.name = read_string(name);
      check_name(
          name, r.name, kMaxRuleNameBytes,
          [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'; },
          "a-z, 0-9 and _ (the name becomes a counter name)");
      if (r.name == "unmatched" || r.name == "unscanned") {
        fail(name.path, name.line, "rule name " + quote(r.name) + " is reserved for a counter");
      }
      for (std::size_t j = 0; j < c.rules.size(); ++j) {
        if (c.rules[j].name == r.name) {
          fail(name.path, name.line, "rule name " + quote(r.name) + " is also " + indexed(rules->path, j) + ".name");
        }
      }
      r.pattern = read_string(pattern);
      const std::uint64_t weight = repeat_weight(r.pattern);
      if (weight > kMaxRepeatWeight) {
        fail(pattern.path, pattern.line,
             "rule " + quote(r.name) + ": counted repeats too large to compile quickly (repeat weight " +
                 std::to_string(weight) + ", at most " + std::to_string(kMaxRepeatWeight) +
                 "); lower the {n,m} bounds");
      }
      total_weight += weight;
      if (total_weight > kMaxTotalRepeatWeight) {
        fail(pattern.path, pattern.line,
             "rule " + quote(r.name) +
                 ": the rules' counted repeats together are too large to compile quickly "
                 "(repeat weight " +
                 std::to_string(total_weight) + ", at most " + std::to_string(kMaxTotalRepeatWeight) + ")");
      }
      const std::string why = check_pattern(r.pattern);
      if (!why.empty()) fail(pattern.path, pattern.line, "rule " + quote(r.name) + ": " + why);
      c.rules.push_back(std::move(r));
    }
  }

  // Parses one classifier pattern as the gateway will compile it (Hyperscan
  // block mode, DOTALL, single match); "" if it is fine, else why not. Only
  // hs_expression_info (a parse and analysis, milliseconds): the compile
  // itself can take far longer (issue 17), so it runs in the classifier,
  // bounded by classifier.compile_budget_ms (dataplane/classifier.h), at
  // start and in gossipctl config check.
  static std::string check_pattern(const std::string& pattern) {
    if (pattern.empty() || pattern.size() > kMaxPatternBytes) {
      return "pattern must be 1.." + std::to_string(kMaxPatternBytes) + " bytes, got " + std::to_string(pattern.size());
    }
    if (pattern.find('\0') != std::string::npos) return "pattern holds a NUL byte (write \\x00)";
    hs_expr_info_t* info = nullptr;
    hs_compile_error_t* err = nullptr;
    if (hs_expression_info(pattern.c_str(), HS_FLAG_DOTALL | HS_FLAG_SINGLEMATCH, &info, &err) != HS_SUCCESS) {
      std::string why = "Hyperscan rejects the pattern " + quote(pattern) + ": ";
      why += err != nullptr && err->message != nullptr ? escape(err->message) : "unknown error";
      hs_free_compile_error(err);
      return why;
    }
    // The compile refuses these (without HS_FLAG_ALLOWEMPTY): say so here.
    const bool empty = info->min_width == 0;
    std::free(info);
    if (empty) {
      return "Hyperscan rejects the pattern " + quote(pattern) +
             ": it matches the empty string (every packet would count)";
    }
    return "";
  }

  void parse_membership(const Map& m, MembershipConfig& mc) const {
    if (std::optional<Field> f = m.find("enabled")) mc.enabled = read_bool(*f);
    if (std::optional<Field> f = m.find("preset")) {
      mc.preset = read_string(*f);
      if (mc.preset != "lan" && mc.preset != "wan" && mc.preset != "local") {
        fail(f->path, f->line, "unknown preset " + quote(mc.preset) + "; expected one of lan, wan, local");
      }
    }
    if (std::optional<Field> f = m.find("leave_timeout_ms")) {
      mc.leave_timeout_ms = read_uint<std::uint32_t>(*f, 0, 60000);
    }
    if (std::optional<Field> seeds = m.find("seeds")) {
      const YAML::Node& list = seeds->value;
      if (!list.IsSequence()) fail(seeds->path, seeds->line, "expected a list of \"IP:PORT\", got " + describe(list));
      // Every seed is asked every join round: no more than the engine asks.
      if (list.size() > MembershipConfig::kMaxSeeds) {
        fail(seeds->path, seeds->line,
             "at most " + std::to_string(MembershipConfig::kMaxSeeds) + " seeds, got " + std::to_string(list.size()) +
                 " (a join round asks at most 16 addresses, 4 of them kept for `gossipctl join`; list the " +
                 std::to_string(MembershipConfig::kMaxSeeds) + " most reliable members)");
      }
      for (std::size_t i = 0; i < list.size(); ++i) {
        const YAML::Node item = list[i];
        const Field f{indexed(seeds->path, i), line_of(item) > 0 ? line_of(item) : seeds->line, item};
        mc.seeds.push_back(parse_seed(f, read_string(f)));
      }
    }
    if (std::optional<Field> f = m.find("egress_bytes_per_sec")) {
      mc.egress_bytes_per_sec = read_uint<std::uint64_t>(*f, 0, 10'000'000'000ULL);
    }
    if (std::optional<Field> f = m.find("egress_burst_bytes")) {
      mc.egress_burst_bytes = read_uint<std::uint64_t>(*f, 1024, 1'000'000'000ULL);
    }
    if (std::optional<Field> f = m.find("egress_queue_bytes")) {
      mc.egress_queue_bytes = read_uint<std::uint64_t>(*f, 65536, 1'000'000'000ULL);
    }
    if (std::optional<Field> f = m.find("egress_max_age_ms")) {
      mc.egress_max_age_ms = read_uint<std::uint32_t>(*f, 10, 600'000);
    }
    if (std::optional<Field> f = m.find("reconnect_timeout_s")) {
      mc.reconnect_timeout_s = read_uint<std::uint64_t>(*f, 60, 365ULL * 24 * 3600);
    }
    if (std::optional<Field> f = m.find("admit_rate")) mc.admit_rate = read_uint<std::uint32_t>(*f, 1, 1000000);
    if (std::optional<Field> f = m.find("admit_burst")) mc.admit_burst = read_uint<std::uint32_t>(*f, 1, 1000000);
    if (std::optional<Field> prefixes = m.find("allowed_name_prefixes")) {
      const YAML::Node& list = prefixes->value;
      if (!list.IsSequence())
        fail(prefixes->path, prefixes->line, "expected a list of name prefixes, got " + describe(list));
      if (list.size() > 64) fail(prefixes->path, prefixes->line, "at most 64 prefixes");
      for (std::size_t i = 0; i < list.size(); ++i) {
        const YAML::Node item = list[i];
        const Field f{indexed(prefixes->path, i), line_of(item) > 0 ? line_of(item) : prefixes->line, item};
        const std::string prefix = read_string(f);
        if (prefix.empty() || prefix.size() > 128) fail(f.path, f.line, "prefixes must be 1..128 bytes");
        mc.allowed_name_prefixes.push_back(prefix);
      }
    }
    if (std::optional<Field> req = m.find("required_tags")) parse_tag_map(*req, mc.required_tags);
    if (std::optional<Field> tags = m.find("tags")) parse_tag_map(*tags, mc.tags);
  }

  void parse_tag_map(const Field& field, std::vector<std::pair<std::string, std::string>>& out) const {
    const Field* tags = &field;
    {
      const YAML::Node& map = tags->value;
      if (!map.IsMap()) fail(tags->path, tags->line, "expected a map of key: value, got " + describe(map));
      std::size_t total = 0;
      for (const auto& kv : map) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
        const Field f{join(tags->path, key), line_of(kv.second) > 0 ? line_of(kv.second) : tags->line, kv.second};
        if (key.empty() || key.size() > 64) fail(f.path, f.line, "tag keys must be 1..64 bytes");
        const std::string value = read_string(f);
        if (value.size() > 256) fail(f.path, f.line, "tag values must be at most 256 bytes");
        total += key.size() + value.size();
        if (total > 512) fail(f.path, f.line, "tags exceed 512 bytes in all");
        out.emplace_back(key, value);
      }
    }
  }

  // "10.0.0.2:7946" or "[fd00::2]:7946".
  MembershipConfig::Seed parse_seed(const Field& f, const std::string& text) const {
    const base::ParsedEndpoint p = base::parse_endpoint(text);
    switch (p.error) {
      case base::EndpointError::kNone:
        break;
      case base::EndpointError::kBrackets:
        fail(f.path, f.line, "expected \"[IPv6]:PORT\", got " + quote(text));
      case base::EndpointError::kForm:
        fail(f.path, f.line, "expected \"IP:PORT\" (IPv6 in brackets), got " + quote(text));
      case base::EndpointError::kIp:
        fail(f.path, f.line, "not an IPv4 or IPv6 address: " + quote(std::string(p.host)));
      case base::EndpointError::kPort:
        fail(f.path, f.line, "port must be 1..65535, got " + quote(std::string(p.port)));
    }
    return p.addr;
  }

  void parse_control(const Map& m, ControlConfig& c) const {
    if (std::optional<Field> dir = m.find("state_dir")) {
      c.state_dir = read_string(*dir);
      if (c.state_dir.empty() || c.state_dir.size() > 4000 || c.state_dir.find('\0') != std::string::npos ||
          c.state_dir.front() != '/') {
        fail(dir->path, dir->line, "must be an absolute directory path, got " + quote(c.state_dir));
      }
    }
    std::optional<Field> socket = m.find("socket");
    if (!socket) return;
    c.socket = read_string(*socket);
    // sockaddr_un holds 108 bytes including the terminating NUL.
    if (c.socket.empty() || c.socket.size() > 107 || c.socket.find('\0') != std::string::npos) {
      fail(socket->path, socket->line, "must be a path of 1..107 bytes, got " + std::to_string(c.socket.size()));
    }
    if (c.socket.front() != '/') {
      fail(socket->path, socket->line, "must be an absolute path, got " + quote(c.socket));
    }
  }

  void parse_metrics(const Map& m, MetricsConfig& mc) const {
    if (std::optional<Field> f = m.find("interval_ms")) mc.interval_ms = read_uint<std::uint32_t>(*f, 10, 60000);
    if (std::optional<Field> f = m.find("telemetry")) mc.telemetry = read_bool(*f);
    if (std::optional<Field> f = m.find("prometheus_port")) mc.prometheus_port = read_uint<std::uint16_t>(*f, 0, 65535);
    if (std::optional<Field> f = m.find("prometheus_address")) {
      mc.prometheus_address = read_string(*f);
      const std::optional<base::IpBytes> ip = base::parse_ip(mc.prometheus_address);
      const bool v4 = ip && ip->size() == 4;
      const bool v6 = ip && ip->size() == 16;
      const bool loopback = (v4 && (*ip)[0] == 127) || (v6 && mc.prometheus_address == "::1");
      if (!loopback) {
        fail(f->path, f->line,
             "must be a loopback address (127.x.x.x or ::1), got " + quote(mc.prometheus_address) +
                 "; metrics are for a local scraper or an exporter sidecar");
      }
    }
  }

  // events: (docs/events.md). The handler is checked now, so a typo fails at
  // start rather than at the first member event.
  void parse_events(const Map& m, EventsConfig& ev, const std::string& cluster_name) const {
    if (std::optional<Field> f = m.find("handler")) {
      ev.handler = read_string(*f);
      if (ev.handler.find('\0') != std::string::npos) fail(f->path, f->line, "must not contain NUL bytes");
      if (!ev.handler.empty()) {
        if (ev.handler.front() != '/') fail(f->path, f->line, "must be an absolute path, got " + quote(ev.handler));
        struct stat st {};
        if (::stat(ev.handler.c_str(), &st) != 0) {
          fail(f->path, f->line, "cannot stat " + quote(ev.handler) + ": " + std::system_category().message(errno));
        }
        if (!S_ISREG(st.st_mode)) fail(f->path, f->line, "not a regular file: " + quote(ev.handler));
        if (::access(ev.handler.c_str(), X_OK) != 0) fail(f->path, f->line, "not executable: " + quote(ev.handler));
      }
    }
    if (std::optional<Field> args = m.find("handler_args")) {
      const YAML::Node& list = args->value;
      if (!list.IsSequence()) fail(args->path, args->line, "expected a list of strings, got " + describe(list));
      if (list.size() > 16) fail(args->path, args->line, "at most 16 arguments, got " + std::to_string(list.size()));
      for (std::size_t i = 0; i < list.size(); ++i) {
        const YAML::Node item = list[i];
        const Field f{indexed(args->path, i), line_of(item) > 0 ? line_of(item) : args->line, item};
        std::string arg = read_string(f);
        if (arg.size() > 1024 || arg.find('\0') != std::string::npos) {
          fail(f.path, f.line, "must be at most 1024 bytes without NUL");
        }
        ev.handler_args.push_back(std::move(arg));
      }
    }
    if (std::optional<Field> f = m.find("max_concurrent")) ev.max_concurrent = read_uint<std::uint32_t>(*f, 1, 64);
    if (std::optional<Field> f = m.find("queue")) ev.queue = read_uint<std::uint32_t>(*f, 1, 1048576);
    if (std::optional<Field> f = m.find("timeout_ms")) ev.timeout_ms = read_uint<std::uint32_t>(*f, 10, 3600000);
    if (std::optional<Field> f = m.find("coalesce_ms")) ev.coalesce_ms = read_uint<std::uint32_t>(*f, 0, 60000);
    if (std::optional<Field> f = m.find("hosts_min_interval_ms")) {
      ev.hosts_min_interval_ms = read_uint<std::uint32_t>(*f, 0, 3600000);
    }
    if (std::optional<Field> hf = m.find("hosts_file")) {
      const Map h(*this, hf->value, hf->path, hf->line, {"path", "tag", "include_self", "managed_block", "aliases"},
                  true);
      const Field path = h.require("path");
      ev.hosts_file.path = read_string(path);
      if (ev.hosts_file.path.empty() || ev.hosts_file.path.front() != '/' || ev.hosts_file.path.back() == '/' ||
          ev.hosts_file.path.find('\0') != std::string::npos) {
        fail(path.path, path.line, "must be an absolute file path, got " + quote(ev.hosts_file.path));
      }
      if (std::optional<Field> f = h.find("tag")) {
        ev.hosts_file.tag = read_string(*f);
        const std::size_t eq = ev.hosts_file.tag.find('=');
        if (!ev.hosts_file.tag.empty() &&
            (eq == std::string::npos || eq == 0 || eq > 64 || ev.hosts_file.tag.size() - eq - 1 > 256)) {
          fail(f->path, f->line,
               "expected \"key=value\" (key 1..64 bytes, value 0..256), got " + quote(ev.hosts_file.tag));
        }
      }
      if (std::optional<Field> f = h.find("include_self")) ev.hosts_file.include_self = read_bool(*f);
      if (std::optional<Field> f = h.find("managed_block")) ev.hosts_file.managed_block = read_bool(*f);
      if (ev.hosts_file.managed_block) {
        // The block goes into someone else's file: it must be there already,
        // so a typo fails now and not at the first member event.
        struct stat st {};
        if (::stat(ev.hosts_file.path.c_str(), &st) != 0) {
          fail(path.path, path.line,
               "managed_block: true edits an existing file, and " + quote(ev.hosts_file.path) +
                   " cannot be read: " + std::system_category().message(errno) +
                   " (create it, or set managed_block: false for a file of gossipgw's own)");
        }
        if (!S_ISREG(st.st_mode)) {
          fail(path.path, path.line, "managed_block: true needs a regular file, got " + quote(ev.hosts_file.path));
        }
      }
      if (std::optional<Field> f = h.find("aliases")) parse_hosts_aliases(*f, ev.hosts_file.aliases, cluster_name);
    }
  }

  // events.hosts_file.aliases: [{tag, name}] (docs/events.md, "Aliases").
  void parse_hosts_aliases(const Field& list_f, std::vector<EventsConfig::HostsAlias>& out,
                           const std::string& cluster_name) const {
    constexpr std::size_t kMaxAliases = 64;
    const YAML::Node& list = list_f.value;
    if (!list.IsSequence()) fail(list_f.path, list_f.line, "expected a list of {tag, name} maps, got " + describe(list));
    if (list.size() > kMaxAliases) {
      fail(list_f.path, list_f.line,
           "at most " + std::to_string(kMaxAliases) + " aliases, got " + std::to_string(list.size()));
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      const YAML::Node item = list[i];
      const std::string path = indexed(list_f.path, i);
      const int line = line_of(item) > 0 ? line_of(item) : list_f.line;
      const Map am(*this, item, path, line, {"tag", "name"}, false);
      const Field tag_f = am.require("tag");
      const Field name_f = am.require("name");
      EventsConfig::HostsAlias a;
      a.tag = read_string(tag_f);
      const std::size_t eq = a.tag.find('=');
      const std::size_t key_len = eq == std::string::npos ? a.tag.size() : eq;
      if (key_len == 0 || key_len > 64 || (eq != std::string::npos && (eq + 1 == a.tag.size() || a.tag.size() - eq - 1 > 256)) ||
          a.tag.find('\0') != std::string::npos) {
        fail(tag_f.path, tag_f.line,
             "expected \"key=value\" (key 1..64 bytes, value 1..256) or \"key\" (every value of it, as {value} in "
             "name), got " + quote(a.tag));
      }
      const bool per_value = eq == std::string::npos;
      const std::string raw = read_string(name_f);
      std::string name;  // {cluster} replaced
      for (std::size_t at = 0; at < raw.size();) {
        if (raw.compare(at, 9, "{cluster}") == 0) {
          name += cluster_name;
          at += 9;
        } else {
          name += raw[at++];
        }
      }
      name = lower_ascii(name);
      const std::size_t v = name.find("{value}");
      if (per_value) {
        if (v == std::string::npos || name.find("{value}", v + 1) != std::string::npos) {
          fail(name_f.path, name_f.line,
               "tag " + quote(a.tag) + " has no value, so the name must hold {value} exactly once (e.g. "
               "\"{value}.internal.{cluster}\"), got " + quote(raw));
        }
        if ((v != 0 && name[v - 1] != '.') || (v + 7 != name.size() && name[v + 7] != '.')) {
          fail(name_f.path, name_f.line, "{value} must be a whole label (between dots), got " + quote(raw));
        }
      } else if (v != std::string::npos) {
        fail(name_f.path, name_f.line,
             "{value} needs a tag without a value (\"" + a.tag.substr(0, eq) + "\"), got tag " + quote(a.tag));
      }
      // Checked with a one-byte stand-in for {value}; the writer checks each
      // real name again (a value makes it longer).
      std::string probe = name;
      if (per_value) probe.replace(v, 7, "v");
      if (const std::string why = dns_name_problem(probe); !why.empty()) {
        fail(name_f.path, name_f.line,
             quote(name) + (raw != name ? " (from " + quote(raw) + ")" : std::string()) +
                 " is not a DNS name: " + why);
      }
      a.name = std::move(name);
      out.push_back(std::move(a));
    }
  }

  void parse_log(const Map& m, LogConfig& log) const {
    std::optional<Field> level = m.find("level");
    if (!level) return;
    log.level = read_string(*level);
    // spdlog::level::from_str maps every unknown name to `off`, silently
    // disabling logging, so only names it really knows get through.
    static constexpr std::array<std::string_view, 9> kLevels = {"trace", "debug", "info",     "warn", "warning",
                                                                "err",   "error", "critical", "off"};
    if (std::find(kLevels.begin(), kLevels.end(), log.level) == kLevels.end()) {
      fail(level->path, level->line,
           "unknown level " + quote(log.level) + "; expected one of trace, debug, info, warn, error, critical, off");
    }
  }

  template <typename Allowed>
  void check_name(const Field& f, const std::string& value, std::size_t max_len, Allowed allowed,
                  const char* allowed_text) const {
    if (value.empty() || value.size() > max_len) {
      fail(f.path, f.line, "must be 1.." + std::to_string(max_len) + " bytes, got " + std::to_string(value.size()));
    }
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (!allowed(value[i])) {
        fail(f.path, f.line,
             "invalid character " + quote(value.substr(i, 1)) + " at byte " + std::to_string(i) + " of " +
                 quote(value) + "; allowed: " + allowed_text);
      }
    }
  }

  static std::string host_name() {
    // HOST_NAME_MAX is 64 on Linux; leave room and force termination, since
    // gethostname need not terminate a truncated name.
    std::array<char, 256> buf{};
    if (gethostname(buf.data(), buf.size() - 1) != 0) return {};
    buf.back() = '\0';
    return std::string(buf.data());
  }
};

}  // namespace

namespace {

std::uint64_t ceil_pow2(std::uint64_t v) noexcept {
  std::uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

std::uint64_t physical_memory_bytes() noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return UINT64_MAX;  // unknown: do not refuse
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

}  // namespace

MemoryNeed memory_needed(const Config& c) noexcept {
  const std::uint64_t workers = c.lcores.workers.size();
  if (c.mode == Mode::kMemberlist) {
    // dataplane/memberlist/filter.h: two rate_limit.h tables (UDP packets,
    // TCP connections) of bit_ceil(sources) 48-byte buckets, and the
    // inspector's scratch (a 65,507-byte plaintext buffer, max_inflated
    // bytes, LZW tables of 4,096 x 6 bytes) per worker; no hand-off rings.
    const std::uint64_t buckets = 2 * ceil_pow2(c.memberlist.sources) * 48;
    const std::uint64_t scratch = 65507 + std::uint64_t{c.memberlist.max_inflated} + 4096 * 6;
    MemoryNeed n;
    n.tables = workers * (buckets + scratch);
    return n;
  }
  // dataplane/payload_ring.h: records of whole 64-byte lines, a 48-byte
  // header then the payload rounded up to 16 bytes; capacity + 2 records.
  const std::uint64_t payload = c.limits.max_payload_bytes - 16;  // the tag is not copied
  const std::uint64_t lines = (48 + ((payload + 15) & ~std::uint64_t{15}) + 63) / 64;
  const std::uint64_t ring = (std::uint64_t{c.rings.size} + 2) * lines * 64;
  MemoryNeed n;
  n.rings = workers * 4 * ring;
  // dataplane/replay.h: slots = bit_ceil(2 x windows), a 16-byte tag, a
  // 168-byte window and (per-source shares) 4 bytes of counts each;
  // rate_limit.h: bit_ceil(sources) 48-byte buckets; FailedHeaders: 4,096 x
  // 32 bytes. The control lcore's once-only table has 4 x replay_senders
  // windows (one per class).
  constexpr std::uint64_t kReplaySlot = 16 + 168 + 4;
  const std::uint64_t replay = ceil_pow2(2 * std::uint64_t{c.limits.replay_senders}) * kReplaySlot;
  const std::uint64_t rate = ceil_pow2(c.limits.sources) * 48;
  const std::uint64_t once = ceil_pow2(2 * 4 * std::uint64_t{c.limits.replay_senders}) * kReplaySlot;
  n.tables = workers * (replay + rate + 4096 * 32) + once;
  return n;
}

void check_memory(const Config& c, std::uint64_t available, std::string_view source) {
  const MemoryNeed n = memory_needed(c);
  if (n.total() <= available) return;
  constexpr std::uint64_t kMiB = 1024 * 1024;
  if (c.mode == Mode::kMemberlist) {
    throw ConfigError(std::string(source), "memberlist.sources", 0,
                      "this config needs " + std::to_string((n.total() + kMiB - 1) / kMiB) +
                          " MiB of filter tables for " + std::to_string(c.lcores.workers.size()) +
                          " worker(s), more than the " + std::to_string(available / kMiB) +
                          " MiB this machine has; lower memberlist.sources");
  }
  throw ConfigError(std::string(source), "rings.size", 0,
                    "this config needs " + std::to_string((n.total() + kMiB - 1) / kMiB) + " MiB (hand-off rings " +
                        std::to_string(n.rings / kMiB) + " MiB for " + std::to_string(c.lcores.workers.size()) +
                        " worker(s) x 4 classes x " + std::to_string(c.rings.size) + " payloads of up to " +
                        std::to_string(c.limits.max_payload_bytes) + " bytes, guard tables " +
                        std::to_string(n.tables / kMiB) + " MiB), more than the " + std::to_string(available / kMiB) +
                        " MiB this machine has; lower rings.size, limits.max_payload_bytes or limits.replay_senders");
}

Config parse_config(std::string_view yaml_text, std::string_view source_name, std::string_view base_dir) {
  const std::string source(source_name);
  return strict::guarded<ConfigError>(source, [&] {
    Config c = Parser(source).parse(yaml_text, base_dir);
    check_memory(c, physical_memory_bytes(), source);
    return c;
  });
}

Config load_config(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
  // for ever (issue 17); it is refused below, as is anything not a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    throw ConfigError(path, "", 0, "cannot open config file: " + std::system_category().message(errno));
  }
  std::string text;
  int read_errno = 0;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    read_errno = errno;
  } else if (S_ISDIR(st.st_mode)) {
    read_errno = EISDIR;
  } else if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ConfigError(path, "", 0, "config file is not a regular file (a FIFO, device or socket)");
  } else {
    std::array<char, 65536> buf{};
    for (;;) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        read_errno = errno;
        break;
      }
      if (n == 0) break;
      text.append(buf.data(), static_cast<std::size_t>(n));
      if (text.size() > kMaxFileBytes) break;
    }
  }
  ::close(fd);
  if (read_errno != 0) {
    throw ConfigError(path, "", 0, "cannot read config file: " + std::system_category().message(read_errno));
  }
  if (text.size() > kMaxFileBytes) {
    throw ConfigError(path, "", 0, "config file is larger than 1 MiB");
  }

  // Absolute, so relative key paths survive a later chdir.
  std::error_code ec;
  std::filesystem::path file = std::filesystem::absolute(path, ec);
  if (ec) file = path;
  return parse_config(text, path, file.parent_path().string());
}

std::string resolve_path(const Config& config, const std::string& p) {
  if (p.empty() || config.base_dir.empty() || std::filesystem::path(p).is_absolute()) return p;
  return (std::filesystem::path(config.base_dir) / p).string();
}

}  // namespace gw::config
