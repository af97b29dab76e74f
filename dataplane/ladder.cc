#include "dataplane/ladder.h"

#include <arpa/inet.h>

#include <cstring>

#include "dataplane/api/snapshot.h"
#include "dataplane/rate_limit.h"
#include "dataplane/replay.h"

namespace gw::dp {
namespace {

constexpr std::uint32_t kEthHeader = 14;
constexpr std::uint32_t kVlanTag = 4;
constexpr std::uint16_t kEtherIpv4 = 0x0800;
constexpr std::uint16_t kEtherIpv6 = 0x86DD;
constexpr std::uint16_t kEtherVlan = 0x8100;
constexpr std::uint32_t kIpv4MinHeader = 20;
constexpr std::uint32_t kIpv6Header = 40;
constexpr std::uint32_t kUdpHeader = 8;
constexpr std::uint8_t kProtoUdp = 17;

std::uint16_t be16(const std::uint8_t* p) noexcept {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

}  // namespace

bool parse_endpoint(const char* address, std::uint16_t port, LocalEndpoint* out) noexcept {
  LocalEndpoint ep;
  ep.port = port;
  if (::inet_pton(AF_INET, address, ep.ipv4.data()) == 1) {
    *out = ep;
    return true;
  }
  if (::inet_pton(AF_INET6, address, ep.ipv6_addr.data()) == 1) {
    ep.ipv6 = true;
    *out = ep;
    return true;
  }
  return false;
}

Verdict parse_l2_l4(const LocalEndpoint& local, const std::uint8_t* frame, std::uint32_t len,
                    UdpView* out) noexcept {
  if (len < kEthHeader) return Verdict::kMalformed;
  std::uint32_t off = kEthHeader;
  std::uint16_t ether = be16(frame + 12);
  if (ether == kEtherVlan) {
    if (len < kEthHeader + kVlanTag) return Verdict::kMalformed;
    ether = be16(frame + 16);
    off += kVlanTag;
  }

  // [l3, l3_end) is the IP packet as its header claims; bytes past it are
  // Ethernet padding. [l4, l3_end) is the transport segment.
  std::uint32_t l4 = 0;
  std::uint32_t l3_end = 0;
  const std::uint8_t* src_ip = nullptr;
  std::uint8_t src_ip_len = 0;
  if (ether == kEtherIpv4) {
    if (len - off < kIpv4MinHeader) return Verdict::kMalformed;
    const std::uint8_t* ip = frame + off;
    const std::uint32_t ihl = (ip[0] & 0x0F) * 4u;
    if ((ip[0] >> 4) != 4 || ihl < kIpv4MinHeader || ihl > len - off) return Verdict::kMalformed;
    const std::uint32_t total = be16(ip + 2);
    if (total < ihl || total > len - off) return Verdict::kMalformed;
    if (ip[9] != kProtoUdp) return Verdict::kNotGossip;
    if (local.ipv6 || std::memcmp(ip + 16, local.ipv4.data(), 4) != 0) return Verdict::kNotGossip;
    // More-fragments set or a non-zero offset: we never reassemble.
    if ((be16(ip + 6) & 0x3FFF) != 0) return Verdict::kMalformed;
    l4 = off + ihl;
    l3_end = off + total;
    src_ip = ip + 12;
    src_ip_len = 4;
  } else if (ether == kEtherIpv6) {
    if (len - off < kIpv6Header) return Verdict::kMalformed;
    const std::uint8_t* ip = frame + off;
    if ((ip[0] >> 4) != 6) return Verdict::kMalformed;
    const std::uint32_t payload = be16(ip + 4);
    if (payload > len - off - kIpv6Header) return Verdict::kMalformed;
    // Extension headers are not walked: gossip is sent without them.
    if (ip[6] != kProtoUdp) return Verdict::kNotGossip;
    if (!local.ipv6 || std::memcmp(ip + 24, local.ipv6_addr.data(), 16) != 0) return Verdict::kNotGossip;
    l4 = off + kIpv6Header;
    l3_end = l4 + payload;
    src_ip = ip + 8;
    src_ip_len = 16;
  } else {
    return Verdict::kNotGossip;
  }

  if (l3_end - l4 < kUdpHeader) return Verdict::kMalformed;
  const std::uint8_t* udp = frame + l4;
  if (be16(udp + 2) != local.port) return Verdict::kNotGossip;
  const std::uint32_t udp_len = be16(udp + 4);
  if (udp_len < kUdpHeader || udp_len > l3_end - l4) return Verdict::kMalformed;

  out->payload_offset = l4 + kUdpHeader;
  out->payload_len = udp_len - kUdpHeader;
  std::memcpy(out->from.ip.data(), src_ip, src_ip_len);
  out->from.ip_len = src_ip_len;
  out->from.port = be16(udp);
  return Verdict::kAccepted;
}

LadderResult run_ladder(const LadderConfig& cfg, std::uint8_t* frame, std::uint32_t len) noexcept {
  LadderState none;
  return run_ladder(cfg, none, frame, len);
}

LadderResult run_ladder(const LadderConfig& cfg, LadderState& st, std::uint8_t* frame,
                        std::uint32_t len) noexcept {
  LadderResult r;
  UdpView udp;
  r.verdict = parse_l2_l4(cfg.local, frame, len, &udp);
  if (r.verdict != Verdict::kAccepted) return r;
  const std::uint32_t off = udp.payload_offset;
  const std::uint32_t plen = udp.payload_len;

  std::uint8_t* dgram = frame + off;
  crypto::WireHeader h;
  switch (crypto::parse_header(dgram, plen, &h)) {
    case crypto::HeaderStatus::kOk:
      break;
    case crypto::HeaderStatus::kTooShort:
    case crypto::HeaderStatus::kBadMagic:
    case crypto::HeaderStatus::kBadVersion:
      r.verdict = Verdict::kUnkeyed;
      r.plaintext_offset = off;  // the classifier names what it is
      r.plaintext_len = plen;
      return r;
    case crypto::HeaderStatus::kBadField:
    case crypto::HeaderStatus::kBadLength:
      r.verdict = Verdict::kMalformed;
      return r;
  }
  if (h.payload_len > cfg.max_payload_bytes) {
    r.verdict = Verdict::kMalformed;
    return r;
  }
  if (h.cluster_id != cfg.cluster_id) {
    r.verdict = Verdict::kForeignCluster;
    return r;
  }
  const crypto::Key* key = cfg.keys->find(h.key_id);
  if (key == nullptr || key->suite() != h.suite) {
    r.verdict = Verdict::kUnknownKey;
    return r;
  }
  if (!key->verify_header_mac(dgram)) {
    r.verdict = Verdict::kBadMac;
    return r;
  }
  // Past here the header was made by a key holder, but may be a replay of
  // one: check its age and nonce before it may spend anything.
  if (st.have_clock) {
    const std::uint32_t age = h.timestamp > st.now_s ? h.timestamp - st.now_s : st.now_s - h.timestamp;
    if (age > cfg.replay_window_s) {
      r.verdict = Verdict::kStale;
      return r;
    }
  }
  std::uint32_t counter = 0;
  const ReplayKey rkey = replay_key(h.key_id, h.nonce, &counter);
  if (st.replay != nullptr && !ReplayTable::is_fresh(st.replay->find(rkey), counter)) {
    r.verdict = Verdict::kReplay;
    return r;
  }
  if (st.rate != nullptr) {
    const SourceAddress src = SourceAddress::of(udp.from);
    const bool known = st.snapshot != nullptr && st.snapshot->is_known(src);
    if (!st.rate->charge(src, known, st.now_ns)) {
      r.verdict = Verdict::kRateLimited;
      return r;
    }
  }
  if (!key->open_in_place(dgram, h.nonce, dgram + crypto::kHeaderBytes, h.payload_len)) {
    r.verdict = Verdict::kBadAuth;
    return r;
  }
  // Authentic: only now may the nonce move the sender's window.
  if (st.replay != nullptr) st.replay->commit(rkey, counter);
  r.verdict = Verdict::kAccepted;
  r.cls = h.cls;
  r.plaintext_offset = off + static_cast<std::uint32_t>(crypto::kHeaderBytes);
  r.plaintext_len = h.payload_len - static_cast<std::uint32_t>(crypto::kTagBytes);
  r.from = udp.from;
  r.key_id = h.key_id;
  return r;
}

}  // namespace gw::dp
