// gossipgw configuration: one YAML file, loaded and validated before EAL starts.
//
// Every field documents its unit and default. The loader (config/loader.h)
// rejects unknown fields, wrong types and out-of-range values with the field
// path and line, so a bad file never reaches the dataplane.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/endpoint.h"

namespace gw::config {

// Which AEAD seals the cluster's payloads. Every member of a cluster must use
// the same suite; `kAuto` resolves to AES-256-GCM where the CPU has AES-NI and
// PCLMUL, ChaCha20-Poly1305 otherwise, so mixed fleets should name one.
// AES-256-GCM runs on ipsec-mb (crypto/aes_gcm.h), ChaCha20-Poly1305 on
// libsodium; both are the standard constructions, byte for byte.
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
  // The operator signing key's public half (Ed25519, 64 hex digits), from
  // `gossipctl operator-keygen`. Cluster-wide key changes (gossipctl
  // keys install|use|remove --cluster) are applied only when signed by its
  // secret half, which no member holds. Empty (default): cluster-wide key
  // changes are refused; node-local ones work as before.
  std::string operator_public_key;
};

struct NodeConfig {
  // This member's name, unique in the cluster. Default: the host name.
  // 1..128 bytes, printable ASCII without spaces.
  std::string name;
  // IPv4 or IPv6 literal that gossip is addressed to. Required.
  std::string address;
  // UDP port gossip is addressed to. Default 7946; 1..65535.
  std::uint16_t port = 7946;
  // Prefix length of an IPv4 address's local subnet, e.g. 24 for
  // 10.0.0.1/24. When set, the subnet's broadcast (10.0.0.255) and network
  // (10.0.0.0) addresses are martian sources (drop_martian): a member never
  // has them. 0 (default): unknown; 31 and 32 have no broadcast (RFC 3021).
  // 0..32, IPv4 only.
  std::uint8_t prefix_len = 0;
};

struct LcoreConfig {
  // EAL lcore id that runs the control plane. Default 0.
  unsigned control = 0;
  // EAL lcore ids of the dataplane workers, one per rx queue. Default [1].
  // 1..64 entries, distinct, none equal to `control`.
  std::vector<unsigned> workers = {1};
};

// The largest limits.max_payload_bytes (issue 17): what one receive mbuf
// holds. Frames arrive in single 2048-byte mbufs (RTE_MBUF_DEFAULT_DATAROOM;
// dataplane/port.cc) and a multi-segment frame is malformed, so the UDP
// payload may take 2048 - 14 (Ethernet) - 4 (VLAN) - 40 (IPv6) - 8 (UDP)
// = 1982 bytes, of which 48 are the gateway header: 1934 bytes of
// ciphertext and tag. A larger setting (up to 9000 was accepted) only made
// every such frame drop_malformed.
inline constexpr std::uint32_t kMaxPayloadBytes = 1934;

struct RingConfig {
  // Capacity in messages of each per-worker, per-class ring to the control
  // lcore. Power of two, 64..1048576. Default 4096. Each message is a copy
  // of up to limits.max_payload_bytes in whole cache lines; the memory is
  // sized for `size` messages of the largest size (dataplane/payload_ring.h).
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
  // Where datagrams for a member go on the wire (docs/ladder.md, "transmit
  // MACs"). Pinned neighbours: the destination MAC for an IP (any port),
  // never replaced by anything received; for members (or the router in
  // front of them) on a segment outsiders share. 0..256 entries, distinct
  // addresses, unicast MACs. Default none: MACs are learned from frames
  // that passed the whole check ladder, per (IP, UDP port).
  struct Neighbor {
    std::string address;                // IPv4 or IPv6 literal
    std::array<std::uint8_t, 6> mac{};  // "02:00:00:00:00:02" in the file
  };
  std::vector<Neighbor> neighbors;
  // Also take the sender of an ARP request or reply addressed to us as the
  // MAC of an address nothing authenticated has taught yet (until its first
  // accepted frame). ARP is unauthenticated: an outsider on the segment
  // could then choose where our first datagrams to that address go. Default
  // false (unknown MACs get broadcast frames, counted as
  // tx_broadcast_unknown_mac).
  bool arp_hints = false;
};

struct LimitsConfig {
  // Largest sealed payload (header excluded) a worker accepts, in bytes;
  // longer ones are dropped as malformed. 64..kMaxPayloadBytes (1934). Default 1400.
  std::uint32_t max_payload_bytes = 1400;
  // Replay protection. A header timestamp further than this from the
  // worker's clock, in seconds, is dropped as stale (so members' clocks must
  // agree this well). 1..3600. Default 30.
  std::uint32_t replay_window_s = 30;
  // Senders (key id and nonce epoch) whose 1024-packet nonce window each
  // worker (and the control lcore) keeps. Windows whose newest datagram is
  // older than replay_window_s age out (replay_table_expired); when the
  // table is full, a new sender evicts the window with the oldest newest
  // datagram among a few (replay_table_evict), and senders without a
  // window stamped at or before it are refused from then on (drop_replay);
  // when none is older than the newcomer, it is refused
  // (drop_replay_table_full). 64..1048576. Default 4096.
  std::uint32_t replay_senders = 4096;
  // Most of those windows one source address may open (its share): a new
  // sender from an address holding this many is drop_replay_table_full. A
  // member uses one per key it seals with and restart within
  // replay_window_s. 1..replay_senders. Default 16.
  std::uint32_t replay_senders_per_source = 16;
  // Per-source token buckets, charged after the AEAD opened: packets per
  // second and bucket depth in packets, for members the control plane knows
  // and for other sources. 1..10000000 each. Defaults: known 2000/s, burst
  // 4000; unknown 100/s, burst 200.
  std::uint32_t known_rate_pps = 2000;
  std::uint32_t known_burst = 4000;
  std::uint32_t unknown_rate_pps = 100;
  std::uint32_t unknown_burst = 200;
  // Source addresses each worker keeps a bucket for; when full, the least
  // recently used is evicted and counted (ratelimit_table_evict).
  // 64..1048576. Default 65536.
  std::uint32_t sources = 65536;
};

// Names what arrives on the gossip port without our header (drop_unkeyed),
// for the unkeyed.* counters. The verdict is the same either way.
struct ClassifierConfig {
  // Scan unkeyed packets at all. Default true.
  bool enabled = true;
  // Include the built-in signatures (memberlist, Serf, weave mesh).
  // Default true.
  bool builtins = true;
  // Bytes of the UDP payload scanned. 64..1500. Default 64.
  std::uint32_t scan_bytes = 64;
  // Unkeyed packets scanned per rx burst at most; the rest count as
  // unscanned, so a flood of unkeyed traffic costs a bounded share of each
  // burst. 0 (scan all) .. 512. Default 4 (one Hyperscan call costs about
  // what receiving a packet does; 4 of a 32-packet burst keeps an unkeyed
  // flood within the budget of 0.8x the port's receive ceiling).
  std::uint32_t max_scans_per_burst = 4;
  // Unkeyed packets scanned per second per worker lcore at most (a token
  // bucket refilled from the burst clock, one tenth of a second deep); the
  // rest count as unscanned. Below the rate every unkeyed packet is named;
  // in a flood the scans are a sample and cost a bounded share of the core
  // (100,000 scans of ~30 ns: 0.3 %). 0 (no limit) .. 10,000,000. Default 100000.
  std::uint32_t max_scans_per_sec = 100000;
  // Operator signatures, checked after the built-ins: a counter name
  // (1..48 bytes of a-z, 0-9, _) and a Hyperscan pattern (PCRE subset,
  // bytes as \xNN, '.' matches any byte; 1..1024 bytes). 0..32 rules.
  // Default none.
  struct Rule {
    std::string name;
    std::string pattern;
  };
  std::vector<Rule> rules;
  // How long compiling the classifier (built-ins and rules) may take at
  // start, in ms; past it the start fails (exit 2) naming the rule being
  // compiled (dataplane/classifier.h). gossipctl config check compiles the
  // same way. 10..600000. Default 10000.
  std::uint32_t compile_budget_ms = 10000;
};

// The membership engine hosted on the control lcore.
struct MembershipConfig {
  // Run the engine (probe, gossip, answer). false: only count messages, as a
  // pure filter in front of another membership implementation. Default true.
  bool enabled = true;
  // Timing preset: lan (1 s probes), wan (5 s probes), local (loopback,
  // fast). Default lan.
  std::string preset = "lan";
  // Members to join through, "IP:PORT" ("[IPv6]:PORT"; base/endpoint.h
  // parses them). 0..kMaxSeeds entries, default none (wait to be joined).
  // Every join round asks every one of them: the engine asks at most 16
  // addresses a round (control/engine/joining.h), 4 of which are kept for
  // the addresses of `gossipctl join` (control/host/engine_host.h); more
  // seeds are refused at load rather than silently left out
  // (control/gateway/adapters.cc holds the three numbers together).
  using Seed = base::Address;
  static constexpr std::size_t kMaxSeeds = 12;
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
  // How long a datagram may wait in the egress queue before it is dropped
  // (counted as expired), in ms: the queue is bounded in time as well as in
  // bytes (at a tight budget a full queue is minutes of stale traffic). The
  // engine sizes what it sends to egress_bytes_per_sec, so in steady running
  // nothing waits this long. 10..600000. Default 5000.
  std::uint32_t egress_max_age_ms = 5000;
  // How long a graceful stop waits for the leave broadcast, in ms. 0..60000.
  // Default 3000.
  std::uint32_t leave_timeout_ms = 3000;
  // How long a member that failed stays a candidate for reconnects (a split
  // of up to this long heals), in seconds. 60..31536000 (a year). Default
  // 86400 (24 h, as Serf's reconnect_timeout). A member given up is logged
  // and counted (gossipgw_engine_reconnect_give_ups_total{reason="expired"}).
  std::uint64_t reconnect_timeout_s = 86400;
};

// The local control API that gossipctl talks to (members, stats, keys, join,
// leave, tags, log level). Served by the control lcore, never by a worker.
struct ControlConfig {
  // Unix socket path; created mode 0600 (owner only), its directory 0700 if
  // missing. A stale socket is replaced; one that answers is an error.
  // Empty: no API. Default empty; config/examples/gossipgw.yaml sets
  // /run/gossipgw/gossipgw.sock, which is gossipctl's default.
  std::string socket;
  // Directory for state that must survive a restart: the keyring and this
  // member's tags as changed at run time (keyring.json, tags.json, mode
  // 0600; the directory is created 0700). When they exist they are loaded
  // instead of cluster.keys and membership.tags (the config's seed the very
  // first start only; docs/operations.md, "Rotating keys"). A change that
  // cannot be saved is refused. Must be writable, or creatable (checked at
  // start and by gossipctl config check: exit 2). Absolute path. Empty
  // (default): nothing is persisted. config/examples/gossipgw.yaml sets
  // /var/lib/gossipgw (the unit's StateDirectory).
  std::string state_dir;
};

// Counter export: DPDK telemetry (dpdk-telemetry.py) and Prometheus text.
struct MetricsConfig {
  // How often the control lcore publishes a counter snapshot for the
  // exporters, in ms. 10..60000 (10: perf/bench times a 1M-frame pass). Default 1000.
  std::uint32_t interval_ms = 1000;
  // Register /gossipgw/* commands with DPDK telemetry. Default true.
  bool telemetry = true;
  // Prometheus text at http://ADDRESS:PORT/metrics. Port 0 (the default):
  // off. The address must be a loopback IPv4 or IPv6 literal (metrics name
  // members and addresses). Default 127.0.0.1.
  std::string prometheus_address = "127.0.0.1";
  std::uint16_t prometheus_port = 0;
};

// Member events for local consumers (docs/events.md): a handler executable run
// for member join/leave/failed/update events, and a hosts-style file of the
// members that carry a tag. Both are off unless configured.
struct EventsConfig {
  // Absolute path of an executable file, run without a shell (name a shell
  // here, with handler_args ["-c", "..."], to get one). Empty (default): no
  // handler.
  std::string handler;
  // Arguments after argv[0] (which is `handler`). 0..16 entries of at most
  // 1024 bytes. Default none.
  std::vector<std::string> handler_args;
  // Handlers running at once. 1..64. Default 2.
  std::uint32_t max_concurrent = 2;
  // Events waiting for a free handler; more are dropped and counted, the
  // control lcore never waits. 1..1048576. Default 1024.
  std::uint32_t queue = 1024;
  // How long one handler may run, in ms; then SIGTERM to its process group,
  // SIGKILL 1000 ms later. 10..3600000. Default 5000.
  std::uint32_t timeout_ms = 5000;
  // How long the first event of a batch waits for more of the same kind
  // before its handler starts, in ms. 0..60000. Default 0 (events that queue
  // behind busy handlers are still merged).
  std::uint32_t coalesce_ms = 0;
  // A stable DNS-style name for every live member with a tag, e.g. every
  // role=master member as api.internal.<cluster> (docs/events.md, "Aliases").
  struct HostsAlias {
    // "key=value": members with exactly this tag get `name`. "key" alone:
    // members with any value V of that key get `name` with {value} replaced by
    // V, when V is a DNS label (others are refused and counted).
    std::string tag;
    // A DNS name: dot-separated labels of 1..63 letters, digits and '-' (not
    // first or last), 253 bytes at most, stored in lower case; {cluster} is
    // replaced by cluster.name at load. With a key-only tag it holds {value}
    // once, as a whole label.
    std::string name;
  };
  struct HostsFile {
    // Absolute path of the hosts-style file to maintain. Empty (default): off.
    std::string path;
    // Only members with this tag, "key=value". Empty (default): every member.
    std::string tag;
    // List this node too (when it matches the tag, or an alias's). Default true.
    bool include_self = true;
    // false (default): gossipgw writes the whole file. true: `path` is an
    // existing file (e.g. /etc/hosts) in which gossipgw replaces only the
    // lines between its BEGIN/END markers, atomically, leaving the rest as is.
    bool managed_block = false;
    // 0..64 aliases. Default none.
    std::vector<HostsAlias> aliases;
  };
  HostsFile hosts_file;
  // Least time between two rewrites of the hosts file, in ms; the last
  // change is always written once it has passed. 0..3600000. Default 1000.
  std::uint32_t hosts_min_interval_ms = 1000;
};

struct LogConfig {
  // spdlog level: trace, debug, info, warn, error, critical, off. Default info.
  std::string level = "info";
};

// What the gateway is (issue 54). native: the gateway of its own gossip
// protocol (every section above). memberlist: a filter in front of an
// unchanged memberlist agent (Serf, Consul, Nomad) on the same host
// (docs/filter-mode.md); only lcores, dataplane (without neighbors and
// arp_hints), metrics, log and memberlist apply, and the loader refuses the
// native-only sections and fields (control included: no control API in this
// mode yet) by name rather than ignore them. Default native; in native mode a memberlist section is refused.
enum class Mode : std::uint8_t { kNative, kMemberlist };

// mode: memberlist (docs/filter-mode.md). Every inbound gossip packet passes,
// in order, the source allow-list, the per-source token bucket (before any
// crypto), then the packet inspector (dataplane/memberlist/inspect.h).
struct MemberlistConfig {
  // The agent's gossip ports (memberlist BindPort; Serf LAN 7946, Serf WAN
  // 7302, Consul 8301/8302); UDP and TCP to them are gossip. 1..4 distinct
  // ports of 1..65535. Default [7946].
  std::vector<std::uint16_t> ports = {7946};
  // DPDK port id of the exception path to the local agent (a net_tap or
  // virtio_user vdev the operator gives in the EAL arguments). 0..65535,
  // must differ from dataplane.port_id. Default 1.
  std::uint16_t agent_port_id = 1;
  // Sources that may send gossip at all: IPv4 and IPv6 prefixes
  // ("10.0.0.0/8", "fd00::/8"; a bare address is /32 or /128). 0..1024
  // entries. Default empty: ANY source may send (the per-source buckets and
  // the inspector still apply); list the cluster's subnets where you can.
  std::vector<std::string> allow_cidrs;
  // Encryption rollout (memberlist GossipVerifyIncoming = false): sources
  // whose packets no key opens are still read as plaintext (and counted
  // ml_accepted_plaintext). Same form as allow_cidrs, 0..1024 entries.
  // Default empty: plaintext is never accepted from anyone while a keyring
  // is set.
  std::vector<std::string> allow_plaintext_cidrs;
  // The cluster's keyring file: a JSON array of base64 keys (16, 24 or 32
  // bytes each), primary first, 1..16 keys; the format of
  // `serf agent -keyring-file` and Consul's local.keyring
  // (config/ml_keyring.h reads it). Relative paths against the config's
  // directory. Default empty: a plaintext cluster.
  std::string keyring_file;
  // The cluster's memberlist label (memberlist Config.Label), 0..255 bytes.
  // Default empty: packets must carry no label.
  std::string label;
  // Per-source token bucket for gossip UDP, packets per second and depth in
  // packets, charged before any crypto. 1..10000000 each. Defaults 200, 400.
  std::uint32_t per_source_pps = 200;
  std::uint32_t per_source_burst = 400;
  // Sources each worker keeps a bucket for (UDP and TCP each); when full the
  // least recently used is evicted. 64..1048576. Default 65536.
  std::uint32_t sources = 65536;
  // New TCP connections (SYN without ACK) to a gossip port per source:
  // connections per second and depth. 1..1000000 each. Defaults 4, 16.
  std::uint32_t tcp_connections_per_sec = 4;
  std::uint32_t tcp_connections_burst = 16;
  // Egress budget for the agent's gossip UDP (from a gossip port), per
  // worker: bytes per second of whole frames, 0 for no limit
  // (0..4294967295); the burst above it in bytes (9216..4294967295, default
  // 65536). A frame larger than the burst never goes out (counted
  // drop_egress_budget), hence the floor of one jumbo frame.
  std::uint64_t egress_bytes_per_sec = 0;
  std::uint64_t egress_burst_bytes = 64 << 10;
  // Bytes a compressed command may expand to. 1024..16777216. Default 65536.
  std::uint32_t max_inflated = 64 * 1024;
  // Bytes of a message's Node, From and SourceNode. 1..65535. Default 128.
  std::uint32_t max_name = 128;
  // Ping, indirect ping, ack or nack messages per packet (memberlist sends
  // one). 1..255. Default 1.
  std::uint32_t max_probe_messages = 1;
  // The agent's own UDP gossip port, where an indirect ping with Port 0 is
  // aimed (memberlist BindPort). 1..65535. Default 7946.
  std::uint16_t agent_udp_port = 7946;
};

struct Config {
  // Not a section: the top-level `mode:` field.
  Mode mode = Mode::kNative;
  ClusterConfig cluster;
  NodeConfig node;
  LcoreConfig lcores;
  RingConfig rings;
  DataplaneConfig dataplane;
  LimitsConfig limits;
  ClassifierConfig classifier;
  MembershipConfig membership;
  ControlConfig control;
  MetricsConfig metrics;
  EventsConfig events;
  LogConfig log;
  MemberlistConfig memberlist;  // mode: memberlist only
  // Directory of the loaded file, for resolving relative paths. Not a YAML field.
  std::string base_dir;
};

}  // namespace gw::config
