// gossipctl: the operator's command for a gossipgw node.
//
//   gossipctl keygen --out FILE [--force]   write a new random key (mode 0600)
//   gossipctl keyid FILE...                 print the key id of key files
//   gossipctl config check --config FILE    validate the config and load every key file
//   gossipctl config eal-args --config FILE [--no-huge] [--vdev SPEC]... [--allow PCI]...
//                             [--file-prefix P] [--memory-mb N]
//                                           print gossipgw's EAL arguments, one per line:
//       -l CONTROL,WORKERS... --main-lcore CONTROL --file-prefix P
//       (--huge-unlink | --no-huge) -m MB [-a PCI]... [--vdev SPEC]... [--no-pci]
//
// `config` is what scripts/launch.sh builds on, so that no shell script ever
// parses YAML: the same loader as gossipgw decides what the file means.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "config/loader.h"
#include "crypto/keys.h"
#include "dataplane/setup.h"

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

// What the gateway's pools and rings need, in MiB, rounded up to whole 2 MiB
// pages: the one number an operator must reserve hugepages for.
std::uint64_t estimate_memory_mb(const gw::config::Config& cfg) {
  const std::uint64_t workers = cfg.lcores.workers.size();
  const std::uint64_t pools = workers * cfg.dataplane.mbufs * kBytesPerMbuf;
  const std::uint64_t rings = workers * gw::crypto::kClassCount * std::uint64_t{cfg.rings.size} * sizeof(void*);
  std::uint64_t mb = (pools + rings + kMiB - 1) / kMiB + kEalOverheadMb;
  mb += mb % 2;
  return std::max(mb, kMinMemoryMb);
}

// The node name may hold any printable character, but the prefix names files
// under /var/run/dpdk, so anything but [A-Za-z0-9._-] becomes '_'.
std::string default_file_prefix(const gw::config::Config& cfg) {
  std::string prefix = "gossipgw-" + cfg.node.name;
  for (char& c : prefix) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                       c == '_' || c == '-';
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
void check_config(const std::string& path) {
  const gw::config::Config cfg = gw::config::load_config(path);
  (void)gw::dp::load_keyring(cfg);  // every key file: present, 32 bytes, mode 0600, no duplicates
  (void)gw::dp::ladder_config(cfg);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gossipctl: operate a gossipgw node"};
  app.require_subcommand(1);

  std::string out;
  bool force = false;
  CLI::App* keygen = app.add_subcommand("keygen", "write a new random 32-byte key file with mode 0600");
  keygen->add_option("--out,-o", out, "key file to create")->required();
  keygen->add_flag("--force", force, "replace an existing file");

  std::vector<std::string> files;
  CLI::App* keyid = app.add_subcommand("keyid", "print the key id of each key file");
  keyid->add_option("files", files, "key files")->required();

  CLI::App* config = app.add_subcommand("config", "check a gateway config; derive gossipgw's EAL arguments from it");
  config->require_subcommand(1);
  std::string check_path;
  CLI::App* check = config->add_subcommand(
      "check", "validate the config and load every key file as gossipgw would; print 'ok' or the error (exit 2)");
  check->add_option("--config", check_path, "gateway YAML config")->required();

  EalOptions eal;
  CLI::App* eal_cmd = config->add_subcommand(
      "eal-args", "print gossipgw's EAL arguments for the config, one per line (lcores, memory, devices, file prefix)");
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
  eal_cmd->add_option("--memory-mb", eal.memory_mb, "memory for EAL in MiB (default: estimated from the config, >= 512)")
      ->check(CLI::Range(std::uint64_t{64}, std::uint64_t{1} << 20));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "gossipctl: %s (try --help)\n", e.what());
    return kExitUsage;
  }

  if (!gw::crypto::init()) return fail(kExitRuntime, "libsodium failed to initialise");
  try {
    if (*keygen) {
      const std::uint32_t id = gw::crypto::write_key_file(out, force);
      std::printf("%s: key id %u\n", out.c_str(), id);
    } else if (*keyid) {
      for (const std::string& f : files) {
        std::printf("%s: key id %u\n", f.c_str(), gw::crypto::derive_key_id(gw::crypto::load_key_file(f)));
      }
    } else if (*check) {
      check_config(check_path);
      std::printf("ok\n");
    } else if (*eal_cmd) {
      for (const std::string& a : eal_args(eal)) std::printf("%s\n", a.c_str());
    }
  } catch (const gw::crypto::KeyError& e) {
    return fail(kExitUsage, e.what());
  } catch (const gw::config::ConfigError& e) {
    return fail(kExitUsage, e.what());
  } catch (const std::invalid_argument& e) {
    return fail(kExitUsage, e.what());
  } catch (const std::runtime_error& e) {
    // resolve_suite and ladder_config: a field the CPU or the parser refuses.
    return fail(kExitUsage, e.what());
  }
  return 0;
}
