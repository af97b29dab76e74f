#include "dataplane/memberlist/filter.h"

#include <algorithm>
#include <cstring>

namespace gw::dp::ml {

namespace {

constexpr std::uint16_t kEtherIpv4 = 0x0800;
constexpr std::uint16_t kEtherIpv6 = 0x86DD;
constexpr std::uint16_t kEtherVlan = 0x8100;
constexpr std::uint8_t kProtoTcp = 6;
constexpr std::uint8_t kProtoUdp = 17;
// IPv6 extension headers the kernel walks before it reaches UDP or TCP.
constexpr std::uint8_t kIp6HopByHop = 0;
constexpr std::uint8_t kIp6Routing = 43;
constexpr std::uint8_t kIp6Fragment = 44;
constexpr std::uint8_t kIp6DestOpts = 60;
// More extension headers than any honest sender uses; a longer chain to
// anywhere is dropped rather than walked without bound.
constexpr int kMaxIp6ExtHeaders = 8;
constexpr std::uint32_t kUdpHeader = 8;
constexpr std::uint32_t kTcpHeader = 20;
constexpr std::uint8_t kTcpSyn = 0x02;
constexpr std::uint8_t kTcpAck = 0x10;

std::uint16_t be16(const std::uint8_t* p) noexcept {
  return static_cast<std::uint16_t>((std::uint16_t{p[0]} << 8) | p[1]);
}

std::uint32_t be32(const std::uint8_t* p) noexcept {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// ::ffff:a.b.c.d
bool v4_mapped(const std::uint8_t* ip) noexcept {
  static constexpr std::uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(ip, kPrefix, sizeof kPrefix) == 0;
}

// What the L2-L4 parse found, in the terms the verdicts need.
struct Frame {
  enum class Kind : std::uint8_t {
    kOther,  // not UDP or TCP whose ports we can read: passes (ARP, ICMP, later fragments, ...)
    kUdp,
    kTcp,
  };
  Kind kind = Kind::kOther;
  // An IP fragment that carries the L4 header (IPv4 offset 0 with MF, any
  // IPv6 fragment header at offset 0): never reassembled here, so never
  // inspected whole. With kind kOther: a UDP/TCP first fragment too short
  // to show its ports (the tiny-fragment trick), dropped whatever its port.
  bool fragment = false;
  bool lengths_ok = false;            // IP and L4 lengths agree with each other and the frame
  const std::uint8_t* src = nullptr;  // source IP, in the frame
  std::uint8_t src_len = 0;           // 4 or 16
  std::uint16_t sport = 0;
  std::uint16_t dport = 0;
  const std::uint8_t* l4 = nullptr;  // the UDP or TCP header
  std::uint32_t l4_len = 0;          // what the IP header says is L4, when lengths_ok
};

// The L4 header at `l4` of protocol `proto`: `avail` bytes of it are in the
// frame, the IP header says `ip_l4_len` (`ip_ok`: that claim fits the frame).
void read_l4(Frame& f, std::uint8_t proto, const std::uint8_t* l4, std::uint32_t avail, std::uint32_t ip_l4_len,
             bool ip_ok) noexcept {
  if (avail < 4) return;  // no ports: the kernel drops it too (a fragment: see Frame::fragment)
  f.kind = proto == kProtoUdp ? Frame::Kind::kUdp : Frame::Kind::kTcp;
  f.sport = be16(l4);
  f.dport = be16(l4 + 2);
  f.l4 = l4;
  if (!ip_ok || ip_l4_len > avail) return;
  if (proto == kProtoUdp) {
    // Exactly what IP carries: with a shorter UDP length the kernel would
    // trim, with a longer one drop; the filter inspects what the agent reads.
    f.lengths_ok = ip_l4_len >= kUdpHeader && be16(l4 + 4) == ip_l4_len;
  } else if (ip_l4_len >= kTcpHeader) {
    const std::uint32_t doff = std::uint32_t{l4[12]} >> 4 << 2;
    f.lengths_ok = doff >= kTcpHeader && doff <= ip_l4_len;
  }
  f.l4_len = f.lengths_ok ? ip_l4_len : 0;
}

void parse_ipv4(Frame& f, const std::uint8_t* ip, std::uint32_t avail) noexcept {
  if (avail < 20 || (ip[0] >> 4) != 4) return;
  const std::uint32_t ihl = std::uint32_t{ip[0] & 0x0fu} * 4;
  if (ihl < 20 || ihl > avail) return;  // the kernel drops it
  const std::uint8_t proto = ip[9];
  if (proto != kProtoUdp && proto != kProtoTcp) return;
  const std::uint16_t frag = be16(ip + 6);
  // A later fragment carries no L4 header and cannot reassemble without the
  // first, which is checked: it passes.
  if ((frag & 0x1fff) != 0) return;
  f.src = ip + 12;
  f.src_len = 4;
  f.fragment = (frag & 0x2000) != 0;
  const std::uint32_t total = be16(ip + 2);
  const bool ip_ok = total >= ihl && total <= avail;
  read_l4(f, proto, ip + ihl, avail - ihl, ip_ok ? total - ihl : 0, ip_ok);
}

void parse_ipv6(Frame& f, const std::uint8_t* ip, std::uint32_t avail) noexcept {
  if (avail < 40 || (ip[0] >> 4) != 6) return;
  const std::uint32_t payload = be16(ip + 4);
  // Payload length 0 (a jumbogram) leaves no L4 bytes within `end`: behind
  // a hop-by-hop header it is dropped below, without one it passes as the
  // empty datagram the kernel reads it as.
  const bool ip_ok = 40 + payload <= avail;
  const std::uint32_t end = ip_ok ? 40 + payload : avail;
  std::uint8_t next = ip[6];
  std::uint32_t at = 40;
  // The kernel walks these before it reaches UDP or TCP, so the filter does.
  for (int n = 0;; ++n) {
    if (next == kProtoUdp || next == kProtoTcp) break;
    if (next != kIp6HopByHop && next != kIp6Routing && next != kIp6DestOpts && next != kIp6Fragment) {
      f.fragment = false;  // not UDP or TCP (ICMPv6, ESP, ...): passes, fragmented or not
      return;
    }
    if (n == kMaxIp6ExtHeaders || at + 8 > end) {
      // Too long a chain, or a header that does not fit: the kernel would
      // drop the latter; neither can be shown not to be gossip.
      f.src = ip + 8;
      f.src_len = 16;
      f.fragment = true;
      return;
    }
    const std::uint8_t* h = ip + at;
    if (next == kIp6Fragment) {
      if ((be16(h + 2) & 0xfff8) != 0) {
        f.fragment = false;  // a later fragment: passes (see parse_ipv4)
        return;
      }
      f.fragment = true;
      at += 8;
    } else {
      at += (std::uint32_t{h[1]} + 1) * 8;
    }
    next = h[0];
  }
  f.src = ip + 8;
  f.src_len = 16;
  if (at > end) {
    f.fragment = true;  // cannot show its ports
    return;
  }
  read_l4(f, next, ip + at, end - at, ip_ok ? end - at : 0, ip_ok);
}

// Ethernet II with at most one 802.1Q tag.
Frame parse(const std::uint8_t* frame, std::uint32_t len) noexcept {
  Frame f;
  if (len < 14) return f;
  std::uint32_t at = 12;
  std::uint16_t type = be16(frame + at);
  if (type == kEtherVlan) {
    if (len < 18) return f;
    at += 4;
    type = be16(frame + at);
  }
  at += 2;
  if (type == kEtherIpv4) {
    parse_ipv4(f, frame + at, len - at);
  } else if (type == kEtherIpv6) {
    parse_ipv6(f, frame + at, len - at);
  }
  return f;
}

}  // namespace

// ---- CidrSet ----------------------------------------------------------------

std::optional<CidrSet> CidrSet::parse(std::span<const std::string> cidrs, std::string* error) {
  CidrSet set;
  for (std::size_t i = 0; i < cidrs.size(); ++i) {
    const std::string& text = cidrs[i];
    const auto fail = [&](const std::string& why) {
      if (error != nullptr) *error = "[" + std::to_string(i) + "]: " + why + ", got \"" + text + "\"";
      return std::nullopt;
    };
    const std::size_t slash = text.find('/');
    const std::optional<base::IpBytes> ip = base::parse_ip(std::string_view(text).substr(0, slash));
    if (!ip) return fail("expected an IPv4 or IPv6 prefix such as \"10.0.0.0/8\" or \"fd00::/8\"");
    const unsigned max_bits = static_cast<unsigned>(ip->size() * 8);
    unsigned bits = max_bits;
    if (slash != std::string::npos) {
      const std::string_view len = std::string_view(text).substr(slash + 1);
      if (len.empty() || len.size() > 3 ||
          !std::all_of(len.begin(), len.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return fail("prefix length must be 0.." + std::to_string(max_bits));
      }
      bits = 0;
      for (char c : len) bits = bits * 10 + static_cast<unsigned>(c - '0');
      if (bits > max_bits) return fail("prefix length must be 0.." + std::to_string(max_bits));
    }
    for (unsigned b = bits; b < max_bits; ++b) {
      if (((*ip)[b / 8] >> (7 - b % 8)) & 1) return fail("host bits set below the prefix length");
    }
    if (ip->size() == 16 && bits >= 96 && v4_mapped(ip->data())) {
      // Sources are folded to IPv4 before the lookup; so is the prefix.
      V4 v;
      v.mask = bits == 96 ? 0 : ~std::uint32_t{0} << (128 - bits);
      v.net = be32(ip->data() + 12) & v.mask;
      set.v4_.push_back(v);
    } else if (ip->size() == 4) {
      V4 v;
      v.mask = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
      v.net = be32(ip->data()) & v.mask;
      set.v4_.push_back(v);
    } else {
      V6 v;
      std::copy(ip->begin(), ip->end(), v.net.begin());
      v.bits = static_cast<std::uint8_t>(bits);
      set.v6_.push_back(v);
    }
  }
  return set;
}

bool CidrSet::contains(const std::uint8_t* ip, std::size_t len) const noexcept {
  if (len == 16 && v4_mapped(ip)) {
    ip += 12;
    len = 4;
  }
  if (len == 4) {
    const std::uint32_t a = be32(ip);
    for (const V4& v : v4_) {
      if ((a & v.mask) == v.net) return true;
    }
    return false;
  }
  if (len != 16) return false;
  for (const V6& v : v6_) {
    const unsigned full = v.bits / 8;
    const unsigned rest = v.bits % 8;
    if (std::memcmp(ip, v.net.data(), full) != 0) continue;
    if (rest != 0) {
      const std::uint8_t mask = static_cast<std::uint8_t>(0xff << (8 - rest));
      if ((ip[full] & mask) != v.net[full]) continue;
    }
    return true;
  }
  return false;
}

// ---- FilterLcore -------------------------------------------------------------

namespace {

constexpr std::uint64_t kMaxBucketValue = 0xffffffffULL;  // base/token_bucket.h bounds

std::size_t index(FrameVerdict v) noexcept { return static_cast<std::size_t>(v); }

}  // namespace

FilterLcore::FilterLcore(const FilterConfig& cfg, std::uint64_t seed)
    : cfg_(cfg),
      inspect_(cfg.inspect),
      udp_(cfg.sources, cfg.per_source, cfg.per_source, seed),
      tcp_(cfg.sources, cfg.tcp_connections, cfg.tcp_connections, seed ^ 0x9e3779b97f4a7c15ULL),
      scratch_(cfg.inspect) {
  inspect_.label = cfg_.label;
  inspect_.keyring = nullptr;
  inspect_.allow_plaintext = false;
  // The egress bucket starts full: the agent's first burst goes out.
  egress_.scaled = std::min(cfg_.egress_burst_bytes, kMaxBucketValue) * token_bucket::kScale;
  egress_.last_ns = 0;
}

FilterResult FilterLcore::inbound(const std::uint8_t* frame, std::uint32_t len, const Keyring* keys,
                                  std::uint64_t now_ns) noexcept {
  FilterResult r = decide_inbound(frame, len, keys, now_ns);
  ++counters_.frames[index(r.verdict)];
  if (r.verdict == FrameVerdict::kToAgent) counters_.bytes_to_agent += len;
  return r;
}

bool FilterLcore::is_gossip_port(std::uint16_t port) const noexcept {
  for (const std::uint16_t p : cfg_.ports) {
    if (p == port) return true;
  }
  return false;
}

FilterResult FilterLcore::decide_inbound(const std::uint8_t* frame, std::uint32_t len, const Keyring* keys,
                                         std::uint64_t now_ns) noexcept {
  FilterResult r;
  const Frame f = parse(frame, len);
  if (f.kind == Frame::Kind::kOther) {
    r.verdict = f.fragment ? FrameVerdict::kDropFrame : FrameVerdict::kPassIn;
    return r;
  }
  if (!is_gossip_port(f.dport)) {
    r.verdict = FrameVerdict::kPassIn;
    return r;
  }
  if (f.fragment || !f.lengths_ok) {
    r.verdict = FrameVerdict::kDropFrame;
    return r;
  }
  // Everything below keys on the source as memberlist sees it: an
  // IPv4-mapped IPv6 address is the IPv4 address.
  base::Address src;
  src.ip.assign(f.src, f.src + f.src_len);
  src.port = f.sport;
  src = fold_v4_mapped(src);
  if (!cfg_.allow.empty() && !cfg_.allow.contains(src.ip.data(), src.ip.size())) {
    r.verdict = FrameVerdict::kDropNotAllowed;
    return r;
  }
  SourceAddress bucket_key;
  std::copy(src.ip.begin(), src.ip.end(), bucket_key.ip.begin());
  bucket_key.ip_len = static_cast<std::uint8_t>(src.ip.size());

  if (f.kind == Frame::Kind::kTcp) {
    // Push-pull is passed whole; only new connections cost the source.
    const std::uint8_t flags = f.l4[13];
    const bool syn = (flags & (kTcpSyn | kTcpAck)) == kTcpSyn;
    r.verdict = syn && !tcp_.charge(bucket_key, false, now_ns) ? FrameVerdict::kDropTcpConnRate : FrameVerdict::kPassIn;
    return r;
  }
  inspect_.keyring = keys;
  inspect_.allow_plaintext =
      !cfg_.plaintext_allow.empty() && cfg_.plaintext_allow.contains(src.ip.data(), src.ip.size());
  // Cheapest check first: what the first bytes refuse (a plaintext flood
  // into an encrypted cluster, a wrong label) needs no table lookup.
  if (const Verdict v = envelope(f.l4 + kUdpHeader, f.l4_len - kUdpHeader, inspect_); v != Verdict::kAccepted) {
    ++counters_.ml[static_cast<std::size_t>(v)];
    r.ml = v;
    r.verdict = FrameVerdict::kDropInspected;
    return r;
  }
  // The bucket before any crypto: a flood costs a table lookup per packet,
  // never an AES-GCM open per key.
  if (!udp_.charge(bucket_key, false, now_ns)) {
    r.verdict = FrameVerdict::kDropRateLimited;
    return r;
  }
  const Result res = inspect(f.l4 + kUdpHeader, f.l4_len - kUdpHeader, src, inspect_, scratch_);
  ++counters_.ml[static_cast<std::size_t>(res.verdict)];
  if (res.key_index >= 0 && static_cast<std::size_t>(res.key_index) < counters_.opened_by_key.size()) {
    ++counters_.opened_by_key[static_cast<std::size_t>(res.key_index)];
  }
  r.ml = res.verdict;
  r.verdict = accepted(res.verdict) ? FrameVerdict::kToAgent : FrameVerdict::kDropInspected;
  return r;
}

FrameVerdict FilterLcore::outbound(const std::uint8_t* frame, std::uint32_t len, std::uint64_t now_ns) noexcept {
  FrameVerdict v = FrameVerdict::kToNetwork;
  const Frame f = parse(frame, len);
  if (f.kind == Frame::Kind::kUdp && is_gossip_port(f.sport)) {
    // The agent's gossip spends the budget by whole frame: what the wire carries.
    bool within = true;
    if (cfg_.egress_bytes_per_sec != 0) {
      token_bucket::refill(egress_, now_ns, std::min(cfg_.egress_bytes_per_sec, kMaxBucketValue),
                           std::min(cfg_.egress_burst_bytes, kMaxBucketValue) * token_bucket::kScale);
      const std::uint64_t cost = std::uint64_t{len} * token_bucket::kScale;
      within = egress_.scaled >= cost;
      if (within) egress_.scaled -= cost;
    }
    if (within) {
      counters_.bytes_to_network += len;
    } else {
      v = FrameVerdict::kDropEgressBudget;
      counters_.bytes_egress_dropped += len;
    }
  }
  ++counters_.frames[index(v)];
  return v;
}

}  // namespace gw::dp::ml
