// gossipgw configuration: one YAML file, loaded and validated before EAL starts.
//
// Every field documents its unit and default. The loader (config/loader.h)
// rejects unknown fields, wrong types and out-of-range values with the field
// path and line, so a bad file never reaches the dataplane.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gw::config {

// Which AEAD seals the cluster's payloads. Every member of a cluster must use
// the same suite; `kAuto` resolves to AES-256-GCM where the CPU has AES-NI and
// PCLMUL, ChaCha20-Poly1305 otherwise, so mixed fleets should name one.
enum class SuiteChoice : std::uint8_t { kAuto, kAes256Gcm, kChaCha20Poly1305 };

struct KeyConfig {
  // Path of a 32-byte key file (mode 0600). Relative paths are resolved
  // against the directory of the config file.
  std::string file;
  // The key used to seal what this node sends. Exactly one key is primary;
  // the others are accepted on receive (rotation).
  bool primary = false;
};

struct ClusterConfig {
  // Cluster name; its cluster id (sent in cleartext, authenticated) is derived
  // from it. Required, 1..64 bytes of [A-Za-z0-9._-].
  std::string name;
  // AEAD suite. Default: auto.
  SuiteChoice suite = SuiteChoice::kAuto;
  // 1..8 keys, exactly one primary.
  std::vector<KeyConfig> keys;
};

struct NodeConfig {
  // This member's name, unique in the cluster. Default: the host name.
  // 1..128 bytes, printable ASCII without spaces.
  std::string name;
  // IPv4 or IPv6 literal that gossip is addressed to. Required.
  std::string address;
  // UDP port gossip is addressed to. Default 7946; 1..65535.
  std::uint16_t port = 7946;
};

struct LcoreConfig {
  // EAL lcore id that runs the control plane. Default 0.
  unsigned control = 0;
  // EAL lcore ids of the dataplane workers, one per rx queue. Default [1].
  // 1..64 entries, distinct, none equal to `control`.
  std::vector<unsigned> workers = {1};
};

struct RingConfig {
  // Capacity in messages of each per-worker, per-class ring to the control
  // lcore. Power of two, 64..1048576. Default 4096.
  std::uint32_t size = 4096;
};

struct DataplaneConfig {
  // DPDK port id the gateway owns. Default 0.
  std::uint16_t port_id = 0;
  // mbufs in the receive pool, per worker. 1024..1048576. Default 16384.
  std::uint32_t mbufs = 16384;
  // Packets per rx burst. 1..512. Default 32.
  std::uint16_t burst = 32;
  // rx and tx descriptors per queue. 64..16384. Default 1024.
  std::uint16_t rx_descriptors = 1024;
  std::uint16_t tx_descriptors = 1024;
  // Microseconds a worker sleeps after an empty poll, so several busy-polling
  // processes can share few cores. 0 (pure busy poll) .. 100000. Default 0.
  std::uint32_t idle_backoff_us = 0;
};

struct LimitsConfig {
  // Largest sealed payload (header excluded) a worker accepts, in bytes;
  // longer ones are dropped as malformed. 64..9000. Default 1400.
  std::uint32_t max_payload_bytes = 1400;
};

// The membership engine hosted on the control lcore.
struct MembershipConfig {
  // Run the engine (probe, gossip, answer). false: only count messages, as a
  // pure filter in front of another membership implementation. Default true.
  bool enabled = true;
  // Timing preset: lan (1 s probes), wan (5 s probes), local (loopback,
  // fast). Default lan.
  std::string preset = "lan";
  // Members to join through, "IP:PORT" ("[IPv6]:PORT"). 0..64 entries,
  // default none (wait to be joined).
  struct Seed {
    std::string ip;
    std::uint16_t port = 0;
  };
  std::vector<Seed> seeds;
  // key=value metadata carried in our Alive messages, e.g. role: control-plane.
  // Keys 1..64 bytes, values 0..256, at most 512 bytes in all. Default none.
  std::vector<std::pair<std::string, std::string>> tags;
  // Admission policy for new members: names must start with one of these
  // prefixes (empty: any name; 0..64 entries of 1..128 bytes), and carry all
  // of these tags (empty: none required).
  std::vector<std::string> allowed_name_prefixes;
  std::vector<std::pair<std::string, std::string>> required_tags;
  // New (never seen) members admitted per second, and the burst above that
  // rate. 1..1000000. Defaults 100 and 200.
  std::uint32_t admit_rate = 100;
  std::uint32_t admit_burst = 200;
  // Egress budget: sealed bytes per second this node may send, 0 for no
  // limit (0..10^10, default 1048576); the burst above it (1024..10^9,
  // default 65536); and how many bytes may wait before the lowest classes
  // are dropped (65536..10^9, default 4194304). Urgent goes first.
  std::uint64_t egress_bytes_per_sec = 1 << 20;
  std::uint64_t egress_burst_bytes = 64 << 10;
  std::uint64_t egress_queue_bytes = 4 << 20;
  // How long a graceful stop waits for the leave broadcast, in ms. 0..60000.
  // Default 3000.
  std::uint32_t leave_timeout_ms = 3000;
};

struct LogConfig {
  // spdlog level: trace, debug, info, warn, error, critical, off. Default info.
  std::string level = "info";
};

struct Config {
  ClusterConfig cluster;
  NodeConfig node;
  LcoreConfig lcores;
  RingConfig rings;
  DataplaneConfig dataplane;
  LimitsConfig limits;
  MembershipConfig membership;
  LogConfig log;
  // Directory of the loaded file, for resolving relative paths. Not a YAML field.
  std::string base_dir;
};

}  // namespace gw::config
