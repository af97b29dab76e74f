// Filter mode (`mode: memberlist`, issue 54): what the gateway decides for
// every frame when it stands between the network and an unchanged memberlist
// agent (Serf, Consul, Nomad) on the same host. Pure: no DPDK, no config
// parsing, no allocation after construction, no exception, lock or log line
// on the frame path; tests and fuzzers run it on byte arrays, the filter
// worker (control/filter/) runs it on each received frame.
//
// Two directions, one FilterLcore per worker:
//   inbound  (NIC -> agent): memberlist UDP to a gossip port goes through, in
//     order, the L2-L4 parse, the source allow-list, what the first bytes
//     refuse (envelope(): length, label, version byte), the per-source
//     token bucket (all before any crypto), then inspect() (label, version, one
//     AES-GCM open per key, CRC, LZW, compound, msgpack, the probe and vsn
//     rules). TCP to a gossip port (push-pull) is passed, its new
//     connections (SYN without ACK) limited per source. Everything else
//     (ARP, IPv6 neighbour discovery, other ports) passes untouched, so the
//     agent's host keeps working.
//   outbound (agent -> NIC): UDP from a gossip port spends the egress byte
//     budget (over it: dropped and counted); everything else passes.
// A frame is never modified: what is forwarded is byte for byte what came.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/token_bucket.h"
#include "dataplane/memberlist/inspect.h"
#include "dataplane/memberlist/verdict.h"
#include "dataplane/rate_limit.h"

namespace gw::dp::ml {

// An allow-list of IPv4 and IPv6 prefixes ("10.0.0.0/8", "fd00::/8", a bare
// address is /32 or /128). IPv4-mapped IPv6 sources are folded to IPv4
// before the lookup. Immutable once built; lookups are lock-free reads.
class CidrSet {
 public:
  // nullopt and `error` naming the entry for anything that is not a prefix.
  static std::optional<CidrSet> parse(std::span<const std::string> cidrs, std::string* error);
  bool empty() const noexcept { return v4_.empty() && v6_.empty(); }
  // `ip` is 4 or 16 bytes (network order).
  bool contains(const std::uint8_t* ip, std::size_t len) const noexcept;

 private:
  struct V4 {
    std::uint32_t net = 0;  // host order, masked
    std::uint32_t mask = 0;
  };
  struct V6 {
    std::array<std::uint8_t, 16> net{};
    std::uint8_t bits = 0;
  };
  std::vector<V4> v4_;
  std::vector<V6> v6_;
};

// What happened to one frame. Every value has a counter (FilterCounters).
enum class FrameVerdict : std::uint8_t {
  kToAgent,           // inbound memberlist UDP that inspect() accepted (also ml_accepted_plaintext)
  kPassIn,            // inbound, not memberlist UDP (ARP, ND, other ports, TCP to a gossip port within its cap)
  kToNetwork,         // outbound: the agent's gossip within the budget, or anything else it sends
  kDropFrame,         // inbound to a gossip port: lengths that lie, an IP fragment (never reassembled)
  kDropNotAllowed,    // inbound gossip (UDP or TCP) from a source outside `allow`
  kDropRateLimited,   // inbound gossip UDP over the source's token bucket
  kDropTcpConnRate,   // inbound TCP SYN to a gossip port over the source's connection bucket
  kDropInspected,     // inspect() refused it; FilterResult::ml says why
  kDropEgressBudget,  // outbound gossip UDP over the egress byte budget
};
inline constexpr std::size_t kFrameVerdictCount = 9;
inline constexpr std::array<std::string_view, kFrameVerdictCount> kFrameVerdictNames = {
    "to_agent",          "pass_in",         "to_network",   "drop_frame",        "drop_not_allowed",
    "drop_rate_limited", "drop_tcp_conn_rate", "drop_inspected", "drop_egress_budget",
};

struct FilterConfig {
  // The agent's gossip ports (memberlist BindPort, 7946 for Serf LAN); UDP
  // and TCP to these are gossip. 1..4 distinct ports.
  std::vector<std::uint16_t> ports = {7946};
  // Sources that may send gossip at all; empty: any source.
  CidrSet allow;
  // Encryption rollout: sources whose packets no key opens may still be read
  // as plaintext (inspect.allow_plaintext is set per packet from this);
  // empty: plaintext is never accepted.
  CidrSet plaintext_allow;
  // Per-source token bucket for gossip UDP, charged before any crypto.
  RateBudget per_source{200, 400};
  std::size_t sources = 65536;  // buckets per worker (rate_limit.h)
  // New TCP connections (SYN) to a gossip port per source.
  RateBudget tcp_connections{4, 16};
  // Egress budget for the agent's gossip UDP, per worker: bytes per second
  // (0: no limit) and the burst above it.
  std::uint64_t egress_bytes_per_sec = 0;
  std::uint64_t egress_burst_bytes = 64 << 10;
  // The cluster's memberlist label (0..255 bytes); FilterLcore points its
  // copy of `inspect.label` here, so the label lives as long as this config.
  std::string label;
  // The inspector's own settings (limits, member lookup). FilterLcore takes
  // a copy at construction; `label` comes from above, `keyring` and
  // `allow_plaintext` are set per packet.
  Config inspect;
};

struct FilterCounters {
  std::array<std::uint64_t, kFrameVerdictCount> frames{};
  std::array<std::uint64_t, kVerdictCount> ml{};  // inspect() verdicts of gossip UDP that reached it
  std::array<std::uint64_t, Keyring::kMaxKeys> opened_by_key{};
  std::uint64_t bytes_to_agent = 0;
  std::uint64_t bytes_to_network = 0;  // the agent's gossip that went out
  std::uint64_t bytes_egress_dropped = 0;
};

struct FilterResult {
  FrameVerdict verdict = FrameVerdict::kDropFrame;
  Verdict ml = Verdict::kMalformed;  // for kToAgent and kDropInspected
};

// One worker's filter: its buckets, the inspector's scratch, its counters.
// Frames are Ethernet II with at most one 802.1Q tag; IPv4 with options, or
// IPv6 through its extension headers (hop-by-hop, routing, destination
// options, fragment), then UDP or TCP. Lengths are checked (and lies
// dropped, kDropFrame) only for traffic to a gossip port; IP fragments of
// it are dropped (a first fragment to a gossip port, or one too short to
// show its ports; later fragments cannot reassemble without it and pass).
class FilterLcore {
 public:
  // Allocates the buckets and the inspector's scratch (not on the frame
  // path). `cfg` must outlive this object. `seed` keys the buckets' hash.
  FilterLcore(const FilterConfig& cfg, std::uint64_t seed);
  // An inbound frame (Ethernet, one optional 802.1Q tag). `keys` is the
  // keyring the worker adopted for this burst (null: plaintext cluster).
  // Counts the verdict.
  FilterResult inbound(const std::uint8_t* frame, std::uint32_t len, const Keyring* keys,
                       std::uint64_t now_ns) noexcept;
  // A frame the agent sent. Counts the verdict.
  FrameVerdict outbound(const std::uint8_t* frame, std::uint32_t len, std::uint64_t now_ns) noexcept;
  const FilterCounters& counters() const noexcept { return counters_; }

 private:
  FilterResult decide_inbound(const std::uint8_t* frame, std::uint32_t len, const Keyring* keys,
                              std::uint64_t now_ns) noexcept;
  bool is_gossip_port(std::uint16_t port) const noexcept;

  const FilterConfig& cfg_;  // must outlive the FilterLcore
  Config inspect_;           // cfg_.inspect with the label; keyring set per packet
  RateLimiter udp_;
  RateLimiter tcp_;
  base::TokenBucketState egress_;
  Scratch scratch_;
  FilterCounters counters_;
};

}  // namespace gw::dp::ml
