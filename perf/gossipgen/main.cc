// gossipgen: crafted gossip traffic as a pcap file plus the ground truth the
// gateway's counters must match.
//
//   gossipgen --out FILE.pcap --truth FILE.json [--seed N] [--mix kind=count,...]
//             [--size BYTES] [--config gossipgw.yaml]
//             [--cluster NAME --key FILE [--key FILE2 ...] --suite SUITE
//              --dst-ip IP --dst-port P] [--src-ip IP] [--dst-mac MAC] [--timestamp UNIX_SECONDS]
//             [--corpus capture.pcap] [--foreign-cluster NAME] [--max-payload BYTES] [--nonce-epochs N]
//
// With --config the cluster, keys (primary first), suite, destination and
// payload limit come from the gateway's config; explicit flags override them.
// Same options and seed give byte-identical outputs.
//
// The truth file:
//   { "seed": N, "packets": TOTAL, "kinds": {"valid": n, ... every kind},
//     "expected": {"rx_total", "accepted", "drop_*" per verdict, "drop_ring_full": 0,
//                  "msg_<type>" per message type, "msg_decode_error": 0},
//     "classes": {"urgent", "probe", "gossip", "bulk"},    (accepted packets by class)
//     "unkeyed": {built-in classifier rule names..., "unmatched"} }  (drop_unkeyed by
//                what the gateway's built-in signatures call it)
//
// With --config, stale packets lie outside its limits.replay_window_s and
// flood packets past its limits.unknown_burst are expected rate-limited
// (defaults 30 and 200 otherwise); the gateway must run with
// --freeze-clock at --timestamp for those to be exact.
//
// Exit status: 0 on success, 2 on a bad option, a bad input file or an output
// that cannot be written (one line on stderr), 1 if libsodium cannot start.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "config/loader.h"
#include "crypto/keys.h"
#include "perf/gossipgen/generator.h"
#include "perf/gossipgen/pcap_io.h"

namespace {

using gw::perf::GenError;

constexpr int kExitUsage = 2;

struct Flags {
  std::string out;
  std::string truth;
  std::uint64_t seed = 1;
  std::string mix;
  std::size_t size = 0;
  std::string config;
  std::string cluster;
  std::vector<std::string> keys;
  std::string suite;
  std::string dst_ip;
  std::uint32_t dst_port = 0;
  std::string src_ip;
  std::string dst_mac;
  std::uint32_t timestamp = 1700000000;
  std::string corpus;
  std::string foreign_cluster = "other-cluster";
  std::size_t max_payload = 0;
  std::uint32_t nonce_epochs = 1;
};

gw::crypto::Suite suite_from_name(const std::string& name) {
  if (name == "aes256gcm") return gw::crypto::Suite::kAes256Gcm;
  if (name == "chacha20poly1305") return gw::crypto::Suite::kChaCha20Poly1305;
  // auto, as the gateway resolves it.
  return gw::crypto::aes256gcm_available() ? gw::crypto::Suite::kAes256Gcm : gw::crypto::Suite::kChaCha20Poly1305;
}

gw::perf::IpAddr ip_flag(const std::string& flag, const std::string& text) {
  const auto ip = gw::perf::parse_ip(text);
  if (!ip) throw GenError(flag + ": '" + text + "' is not an IPv4 or IPv6 address");
  return *ip;
}

// "02:47:57:00:00:01" -> bytes; throws GenError naming the flag.
gw::perf::MacAddr mac_flag(const std::string& flag, const std::string& text) {
  gw::perf::MacAddr mac{};
  unsigned b[6];
  char tail = 0;
  if (std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6 ||
      text.size() != 17) {
    throw GenError(flag + ": '" + text + "' is not a MAC address like 02:00:00:00:00:01");
  }
  for (int i = 0; i < 6; ++i) mac[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(b[i]);
  return mac;
}

// Turns flags (and the config they may name) into generator options. Throws
// GenError, gw::config::ConfigError, gw::crypto::KeyError or gw::perf::PcapError.
gw::perf::GenOptions resolve(const Flags& f) {
  gw::perf::GenOptions o;
  o.seed = f.seed;
  o.timestamp = f.timestamp;
  o.foreign_cluster = f.foreign_cluster;
  o.nonce_epochs = f.nonce_epochs;

  std::vector<std::string> key_files;
  std::string suite_name;
  std::string dst_ip;
  std::uint32_t dst_port = 0;
  o.max_payload = 1400;
  if (!f.config.empty()) {
    const gw::config::Config cfg = gw::config::load_config(f.config);
    o.cluster = cfg.cluster.name;
    // Primary first: it is what valid packets are sealed with.
    for (const auto& k : cfg.cluster.keys) {
      if (k.primary) key_files.push_back(gw::config::resolve_path(cfg, k.file));
    }
    for (const auto& k : cfg.cluster.keys) {
      if (!k.primary) key_files.push_back(gw::config::resolve_path(cfg, k.file));
    }
    switch (cfg.cluster.suite) {
      case gw::config::SuiteChoice::kAuto:
        suite_name = "auto";
        break;
      case gw::config::SuiteChoice::kAes256Gcm:
        suite_name = "aes256gcm";
        break;
      case gw::config::SuiteChoice::kChaCha20Poly1305:
        suite_name = "chacha20poly1305";
        break;
    }
    dst_ip = cfg.node.address;
    dst_port = cfg.node.port;
    o.max_payload = cfg.limits.max_payload_bytes;
    o.replay_window_s = cfg.limits.replay_window_s;
    o.unknown_burst = cfg.limits.unknown_burst;
  }
  if (!f.cluster.empty()) o.cluster = f.cluster;
  if (!f.keys.empty()) key_files = f.keys;
  if (!f.suite.empty()) suite_name = f.suite;
  if (!f.dst_ip.empty()) dst_ip = f.dst_ip;
  if (f.dst_port != 0) dst_port = f.dst_port;
  if (f.max_payload != 0) o.max_payload = f.max_payload;

  if (o.cluster.empty()) throw GenError("no cluster: give --cluster or --config");
  if (key_files.empty()) throw GenError("no key: give --key or --config");
  if (suite_name.empty()) throw GenError("no suite: give --suite or --config");
  if (dst_ip.empty()) throw GenError("no destination: give --dst-ip or --config");
  if (dst_port == 0) throw GenError("no destination port: give --dst-port or --config");

  o.suite = suite_from_name(suite_name);
  o.dst_ip = ip_flag("--dst-ip", dst_ip);
  o.dst_port = static_cast<std::uint16_t>(dst_port);
  if (!f.src_ip.empty()) o.src_ip = ip_flag("--src-ip", f.src_ip);
  if (!f.dst_mac.empty()) o.dst_mac = mac_flag("--dst-mac", f.dst_mac);
  for (const auto& path : key_files) o.keys.push_back(gw::crypto::load_key_file(path));

  if (!f.corpus.empty()) o.corpus = gw::perf::read_udp_payloads(f.corpus);
  o.mix = f.mix.empty() ? gw::perf::default_mix(!f.corpus.empty()) : gw::perf::parse_mix(f.mix);
  o.frame_size = f.size;
  return o;
}

void write_truth(const std::string& path, const nlohmann::ordered_json& truth) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw GenError(path + ": cannot open for writing");
  out << truth.dump(2) << '\n';
  out.flush();
  if (!out) throw GenError(path + ": write failed");
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"gossipgen: crafted gossip traffic as pcap with a JSON ground truth", "gossipgen"};
  app.add_option("--out", f.out, "pcap file to write")->required();
  app.add_option("--truth", f.truth, "ground-truth JSON file to write")->required();
  app.add_option("--seed", f.seed, "random seed (same seed and options: same bytes)");
  app.add_option("--mix", f.mix, "kind=count,... (kinds left out: 0)");
  app.add_option("--size", f.size, "target frame length in bytes for sealed and random payloads")
      ->check(CLI::Range(std::size_t{1}, std::size_t{65535}));
  app.add_option("--config", f.config, "gateway config: cluster, keys, suite, node address/port");
  app.add_option("--cluster", f.cluster, "cluster name");
  app.add_option("--key", f.keys, "key file; repeat for more, primary first");
  app.add_option("--suite", f.suite, "aes256gcm | chacha20poly1305 | auto")
      ->check(CLI::IsMember({"aes256gcm", "chacha20poly1305", "auto"}));
  app.add_option("--dst-ip", f.dst_ip, "gateway address (IPv4 or IPv6)");
  app.add_option("--dst-port", f.dst_port, "gateway UDP port")->check(CLI::Range(1, 65535));
  app.add_option("--src-ip", f.src_ip, "base of the sources' /24 (default 10.0.0.2 / fd00::2)");
  app.add_option("--dst-mac", f.dst_mac,
                 "destination MAC of every frame, e.g. the gateway's port (default 02:00:00:00:00:01)");
  app.add_option("--timestamp", f.timestamp, "header and pcap time, Unix seconds");
  app.add_option("--corpus", f.corpus, "pcap whose UDP payloads unkeyed_memberlist replays");
  app.add_option("--foreign-cluster", f.foreign_cluster, "cluster name of foreign packets");
  app.add_option("--max-payload", f.max_payload, "gateway payload limit in bytes (default: config's limits, else 1400)")
      ->check(CLI::Range(std::size_t{64}, std::size_t{9000}));
  app.add_option("--nonce-epochs", f.nonce_epochs,
                 "sender nonce epochs used in turn by sealed packets (default 1; benchmarks: many)")
      ->check(CLI::Range(1, 1000000));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "gossipgen: " << e.what() << " (see --help)\n";
    return kExitUsage;
  }

  if (!gw::crypto::init()) {
    std::cerr << "gossipgen: cannot initialise libsodium\n";
    return 1;
  }
  try {
    const gw::perf::GenOptions opts = resolve(f);
    // Refuse bad options before creating any output file.
    gw::perf::check_options(opts);
    gw::perf::PcapWriter pcap(f.out, opts.timestamp);
    gw::perf::TruthCounts truth;
    gw::perf::generate(opts, [&](const gw::perf::Packet& p) {
      pcap.write(p.frame);
      truth.add(p);
    });
    pcap.close();
    write_truth(f.truth, truth.json(opts.seed));
  } catch (const std::exception& e) {
    // Config, key, corpus and option errors all name their source already.
    std::cerr << "gossipgen: " << e.what() << '\n';
    return kExitUsage;
  }
  return 0;
}
