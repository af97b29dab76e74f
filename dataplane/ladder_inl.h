// Inline definitions of the check ladder (declared in dataplane/ladder.h).
// Include dataplane/ladder.h, not this file.
#pragma once

#include <bit>
#include <cstddef>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dataplane/api/snapshot.h"
#include "dataplane/ladder.h"
#include "dataplane/rate_limit.h"
#include "dataplane/replay.h"

namespace gw::dp {
namespace ladder_detail {

inline constexpr std::uint32_t kEthHeader = 14;
inline constexpr std::uint32_t kVlanTag = 4;
inline constexpr std::uint16_t kEtherIpv4 = 0x0800;
inline constexpr std::uint16_t kEtherIpv6 = 0x86DD;
inline constexpr std::uint16_t kEtherVlan = 0x8100;
inline constexpr std::uint32_t kIpv4MinHeader = 20;
inline constexpr std::uint32_t kIpv6Header = 40;
inline constexpr std::uint32_t kUdpHeader = 8;
inline constexpr std::uint8_t kProtoUdp = 17;

inline std::uint16_t be16(const std::uint8_t* p) noexcept { return static_cast<std::uint16_t>((p[0] << 8) | p[1]); }
// Raw loads in memory order, compared against constants laid out the same way.
inline std::uint32_t load32(const std::uint8_t* p) noexcept {
  std::uint32_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline std::uint16_t load16(const std::uint8_t* p) noexcept {
  std::uint16_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline std::uint64_t load64(const std::uint8_t* p) noexcept {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// A host-order 16-bit value as load16() reads it from the wire.
constexpr std::uint16_t raw16(std::uint16_t v) noexcept {
  const std::uint8_t b[2] = {static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)};
  return std::endian::native == std::endian::little ? static_cast<std::uint16_t>(b[0] | (b[1] << 8))
                                                    : static_cast<std::uint16_t>((b[0] << 8) | b[1]);
}
// Bytes 12..14 of an untagged IPv4 frame without options (EtherType 0x0800,
// version 4, IHL 5) as load32() reads them; the fourth byte (TOS) is masked.
inline constexpr std::uint32_t kEthIpv4Ihl5 = std::endian::native == std::endian::little ? 0x0045'0008u : 0x0800'4500u;
inline constexpr std::uint32_t kEthIpv4Mask = std::endian::native == std::endian::little ? 0x00FF'FFFFu : 0xFFFF'FF00u;
// The header's magic and version (bytes 0..4) as load64() reads them.
inline constexpr std::uint64_t kMagicVersionMask =
    std::endian::native == std::endian::little ? 0x0000'00FF'FFFF'FFFFULL : 0xFFFF'FFFF'FF00'0000ULL;
inline constexpr std::uint64_t kMagicVersion =
    std::endian::native == std::endian::little ? 0x0000'0002'5747'5347ULL : 0x4753'4757'0200'0000ULL;
static_assert(crypto::kWireMagic[0] == 'G' && crypto::kWireMagic[1] == 'S' && crypto::kWireMagic[2] == 'G' &&
                  crypto::kWireMagic[3] == 'W' && crypto::kWireVersion == 2,
              "kMagicVersion spells the wire magic and version");

// Sources no member can have, so answers must never go there (issue 17):
// IPv4 0.0.0.0/8 ("this network"), 127/8 (loopback), 224/4 multicast and
// 240/4 (reserved, with 255.255.255.255 broadcast), our own address, and,
// when node.prefix_len gives our subnet, its broadcast and network addresses
// (a subnet-directed broadcast source would have our answers broadcast).
inline bool martian_v4(const std::uint8_t* src, const LocalEndpoint& local) noexcept {
  // One branch for all the tests (the fast path runs this per packet).
  const unsigned first = src[0];
  const std::uint32_t s = load32(src);
  const unsigned hit = static_cast<unsigned>(first == 0) | static_cast<unsigned>(first == 127) |
                       static_cast<unsigned>(first >= 224) | static_cast<unsigned>(s == load32(local.ipv4.data())) |
                       static_cast<unsigned>(s == load32(local.ipv4_bcast.data())) |
                       static_cast<unsigned>(s == load32(local.ipv4_net.data()));
  return hit != 0;
}
// IPv6 :: (unspecified), ::1 (loopback), ff00::/8 multicast, ::ffff:0:0/96
// (IPv4-mapped: never a source on the wire, RFC 4291 2.5.5.2) and our own
// address.
inline bool martian_v6(const std::uint8_t* src, const std::uint8_t* ours) noexcept {
  const std::uint64_t hi = load64(src);
  const std::uint64_t lo = load64(src + 8);
  static constexpr std::uint8_t kOne[8] = {0, 0, 0, 0, 0, 0, 0, 1};
  static constexpr std::uint8_t kMapped[4] = {0, 0, 0xFF, 0xFF};
  if (src[0] == 0xFF) return true;
  if (hi == 0 && (lo == 0 || lo == load64(kOne) || load32(src + 8) == load32(kMapped))) return true;
  return hi == load64(ours) && lo == load64(ours + 8);
}

// The fast path reads frame bytes 12..43 as two 16-byte words.
inline constexpr std::uint32_t kFastFrame = 44;

// True when bytes 12..43 of the frame are those of an untagged IPv4 (IHL 5)
// UDP datagram to our address and port that is not a fragment: EtherType,
// version and IHL, the fragment bits, the protocol, the destination address
// and port. Lengths, the source and the payload are not looked at.
inline bool fast_fields_match(const std::uint8_t* frame, const LocalEndpoint& local) noexcept {
#if defined(__SSE2__)
  // Bytes 12..27: EtherType 0x0800, 0x45, (TOS, length, id), flags and
  // fragment offset 0 but for DF, (TTL), protocol 17, (checksum, source).
  alignas(16) static constexpr std::uint8_t kWantLo[16] = {0x08, 0x00, 0x45, 0,         0, 0, 0, 0,
                                                           0,    0,    0,    kProtoUdp, 0, 0, 0, 0};
  alignas(16) static constexpr std::uint8_t kMaskLo[16] = {0xFF, 0xFF, 0xFF, 0,    0, 0, 0, 0,
                                                           0x3F, 0xFF, 0,    0xFF, 0, 0, 0, 0};
  // Bytes 28..43: (source), destination address, (source port),
  // destination port, (UDP length, checksum, payload).
  alignas(16) static constexpr std::uint8_t kMaskHi[16] = {0,    0,    0xFF, 0xFF, 0xFF, 0xFF, 0, 0,
                                                           0xFF, 0xFF, 0,    0,    0,    0,    0, 0};
  const __m128i want_hi = _mm_insert_epi16(
      _mm_slli_si128(_mm_cvtsi32_si128(static_cast<int>(load32(local.ipv4.data()))), 2), raw16(local.port), 4);
  const __m128i lo = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(frame + 12)),
                                   _mm_load_si128(reinterpret_cast<const __m128i*>(kWantLo)));
  const __m128i hi = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(frame + 28)), want_hi);
  const __m128i diff = _mm_or_si128(_mm_and_si128(lo, _mm_load_si128(reinterpret_cast<const __m128i*>(kMaskLo))),
                                    _mm_and_si128(hi, _mm_load_si128(reinterpret_cast<const __m128i*>(kMaskHi))));
  return _mm_movemask_epi8(_mm_cmpeq_epi8(diff, _mm_setzero_si128())) == 0xFFFF;
#else
  const std::uint32_t bad = ((load32(frame + 12) ^ kEthIpv4Ihl5) & kEthIpv4Mask) |
                            (load32(frame + 30) ^ load32(local.ipv4.data())) |
                            static_cast<std::uint32_t>(frame[23] ^ kProtoUdp) |
                            static_cast<std::uint32_t>(load16(frame + 36) ^ raw16(local.port)) |
                            static_cast<std::uint32_t>(load16(frame + 20) & raw16(0x3FFF));
  return bad == 0;
#endif
}

}  // namespace ladder_detail

inline Endpoint UdpView::from() const noexcept {
  // The address as one 16-byte store and ip_len and port as one 4-byte store:
  // copies of the Endpoint then load exactly what was stored, where
  // field-by-field stores made every copy stall on store forwarding.
  using Ip16 = std::uint64_t __attribute__((vector_size(16)));
  const Ip16 ip = src_ip_len == 16 ? Ip16{ladder_detail::load64(src_ip), ladder_detail::load64(src_ip + 8)}
                                   : Ip16{ladder_detail::load32(src_ip), 0};
  Endpoint e;
  std::memcpy(e.ip.data(), &ip, sizeof ip);
  if constexpr (std::endian::native == std::endian::little && offsetof(Endpoint, ip_len) == 16 &&
                offsetof(Endpoint, port) == 18 && sizeof(Endpoint) == 20) {
    const std::uint32_t tail = std::uint32_t{src_ip_len} | (std::uint32_t{src_port} << 16);
    std::memcpy(reinterpret_cast<std::uint8_t*>(&e) + 16, &tail, sizeof tail);
  } else {
    e.ip_len = src_ip_len;
    e.port = src_port;
  }
  return e;
}

[[gnu::always_inline]] inline Verdict parse_l2_l4_general(const LocalEndpoint& local, const std::uint8_t* frame,
                                                          std::uint32_t len, UdpView* out) noexcept {
  using namespace ladder_detail;
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
  // A source no member can have: dropped before anything reads the payload,
  // so nothing is ever answered there.
  if (src_ip_len == 4 ? martian_v4(src_ip, local) : martian_v6(src_ip, local.ipv6_addr.data())) {
    return Verdict::kMartian;
  }

  out->payload_offset = l4 + kUdpHeader;
  out->payload_len = udp_len - kUdpHeader;
  out->src_ip = src_ip;
  out->src_ip_len = src_ip_len;
  out->src_port = be16(udp);
  return Verdict::kAccepted;
}

// always_inline: GCC judges the ladder too large to inline into the burst
// loop, and the result struct then round-trips through the stack (a
// store-forwarding stall per packet that cost more than the checks).
[[gnu::always_inline]] inline Verdict parse_l2_l4(const LocalEndpoint& local, const std::uint8_t* frame,
                                                  std::uint32_t len, UdpView* out) noexcept {
  using namespace ladder_detail;
  // Fast path: an untagged IPv4 datagram without options or fragments, UDP
  // to our address and port, its UDP length exactly what the IP header
  // leaves. Anything else (or any check failing) takes the general path
  // below, which decides; for what the fast path takes it gives the same
  // answer.
  if (!local.ipv6 && len >= kFastFrame) [[likely]] {
    if (fast_fields_match(frame, local)) [[likely]] {
      const std::uint32_t total = be16(frame + 16);
      const std::uint32_t udp_len = be16(frame + 38);
      const unsigned bad_len = static_cast<unsigned>(udp_len + kIpv4MinHeader != total) |
                               static_cast<unsigned>(total > len - kEthHeader) |
                               static_cast<unsigned>(udp_len < kUdpHeader);
      if (bad_len == 0) [[likely]] {
        if (martian_v4(frame + 26, local)) [[unlikely]]
          return Verdict::kMartian;
        out->payload_offset = kEthHeader + kIpv4MinHeader + kUdpHeader;
        out->payload_len = udp_len - kUdpHeader;
        out->src_ip = frame + 26;
        out->src_ip_len = 4;
        out->src_port = be16(frame + 34);
        return Verdict::kAccepted;
      }
    }
  }

  return parse_l2_l4_general(local, frame, len, out);
}

[[gnu::always_inline]] inline FrontResult ladder_front(const LadderConfig& cfg, std::uint8_t* frame, std::uint32_t len,
                                                       LadderFront* out) noexcept {
  FrontResult r;
  UdpView udp;  // in registers; copied to `out` only for packets that name our key
  r.verdict = parse_l2_l4(cfg.local, frame, len, &udp);
  if (r.verdict != Verdict::kAccepted) return r;
  const std::uint32_t off = udp.payload_offset;
  const std::uint32_t plen = udp.payload_len;

  std::uint8_t* dgram = frame + off;
  // Cheapest first: magic and version (else unkeyed), then the cluster id
  // (else foreign, whatever the rest of the header holds), before the rest
  // of the header is parsed.
  if (plen < crypto::kHeaderBytes ||
      (ladder_detail::load64(dgram) & ladder_detail::kMagicVersionMask) != ladder_detail::kMagicVersion) {
    r.verdict = Verdict::kUnkeyed;
    r.payload_offset = off;  // the classifier names what it is
    r.payload_len = plen;
    return r;
  }
  if (crypto::detail::wire_be64(dgram + 8) != cfg.cluster_id) {
    r.verdict = Verdict::kForeignCluster;
    return r;
  }
  crypto::WireHeader h;  // in registers: ladder_back reads the fields again from the frame
  switch (crypto::parse_header(dgram, plen, &h)) {
    case crypto::HeaderStatus::kOk:
      break;
    case crypto::HeaderStatus::kTooShort:
    case crypto::HeaderStatus::kBadMagic:
    case crypto::HeaderStatus::kBadVersion:  // not reached: checked above
      r.verdict = Verdict::kUnkeyed;
      r.payload_offset = off;
      r.payload_len = plen;
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
  // Sealed for another receiver (a member's datagram for someone else,
  // sniffed and sent here): one compare. The tag is under the header MAC;
  // a colliding tag still fails the AEAD, whose associated data holds our
  // whole receiver identity.
  if (h.receiver != cfg.local.receiver.tag) {
    r.verdict = Verdict::kWrongReceiver;
    return r;
  }
  const crypto::Key* key = cfg.keys->find(h.key_id);
  if (key == nullptr || key->suite() != h.suite) {
    r.verdict = Verdict::kUnknownKey;
    r.payload_offset = off;  // the header: the worker may sample its key id and source
    r.payload_len = plen;
    return r;
  }
  out->udp = udp;
  out->key = key;
  out->dgram = dgram;
  return r;  // kAccepted: the header MAC is next
}

[[gnu::always_inline]] inline Verdict ladder_back(const LadderConfig& cfg, LadderState& st, const LadderFront& f,
                                                  LadderResult* out) noexcept {
  crypto::WireHeader h;
  // Parsed (and found consistent) by ladder_front; only the fields are read again.
  crypto::read_header_fields(f.dgram, &h);
  // Past here the header was made by a key holder, but may be a replay of
  // one: check its age and nonce before it may spend anything.
  if (st.have_clock) {
    const std::uint32_t age = h.timestamp > st.now_s ? h.timestamp - st.now_s : st.now_s - h.timestamp;
    if (age > cfg.replay_window_s) return Verdict::kStale;
  }
  // Sealed before we started: an earlier run of this gateway may have
  // accepted it, and its windows did not survive the restart.
  // The watermark is the start instant: a clock that was wrong at start and
  // was stepped since moves it by as much (st.wall_step_s).
  if (cfg.not_before_s != 0 &&
      static_cast<std::int64_t>(h.timestamp) < static_cast<std::int64_t>(cfg.not_before_s) + st.wall_step_s) {
    return Verdict::kBeforeStart;
  }
  std::uint32_t counter = 0;
  const ReplayKey rkey = replay_key(h.key_id, h.nonce, &counter);
  const Endpoint from = f.udp.from();
  const SourceAddress src = SourceAddress::of(from);
  if (st.replay != nullptr) {
    // Seen, older than its window, or stamped before what the table forgot:
    // replay. A new sender whose source holds its share of windows, or with
    // the table full of windows newer than it: no room (replay.h).
    switch (st.replay->check(rkey, counter, h.timestamp, &src)) {
      case ReplayCheck::kFresh:
        break;
      case ReplayCheck::kReplay:
        return Verdict::kReplay;
      case ReplayCheck::kNoRoom:
        return Verdict::kReplayTableFull;
    }
  }
  // A header that already failed its AEAD here is not tried again: one
  // sniffed header buys an outsider one AEAD, not one per tampered copy.
  if (st.failed != nullptr && st.failed->contains(rkey, counter)) return Verdict::kAuthRetry;
  // The bucket is only asked here; it is charged after the AEAD opened the
  // payload, so a tampered copy sent from a member's address costs the
  // member nothing (issue 17).
  bool known = false;
  if (st.rate != nullptr) {
    known = st.snapshot != nullptr && st.snapshot->is_known(src);
    if (!st.rate->would_allow(src, known, st.now_ns)) return Verdict::kRateLimited;
  }
  if (!f.key->open_in_place(f.dgram, h.nonce, f.dgram + crypto::kHeaderBytes, h.payload_len, cfg.local.receiver)) {
    if (st.failed != nullptr) st.failed->add(rkey, counter);
    return Verdict::kBadAuth;
  }
  // Authentic: only now may the nonce move the sender's window and the
  // source's bucket be charged (would_allow said it has a token).
  if (st.replay != nullptr && !st.replay->commit(rkey, counter, h.timestamp, &src)) {
    return Verdict::kReplayTableFull;  // not reached: the pre-check saw room
  }
  if (st.rate != nullptr) st.rate->charge(src, known, st.now_ns);
  out->verdict = Verdict::kAccepted;
  out->cls = h.cls;
  out->plaintext_offset = f.udp.payload_offset + static_cast<std::uint32_t>(crypto::kHeaderBytes);
  out->plaintext_len = h.payload_len - static_cast<std::uint32_t>(crypto::kTagBytes);
  out->from = from;
  out->key_id = h.key_id;
  out->stamp = ReplayStamp{rkey.epoch, counter, h.timestamp};
  return Verdict::kAccepted;
}

[[gnu::always_inline]] inline LadderResult run_ladder(const LadderConfig& cfg, LadderState& st, std::uint8_t* frame,
                                                      std::uint32_t len) noexcept {
  LadderFront f;
  const FrontResult front = ladder_front(cfg, frame, len, &f);
  if (front.verdict != Verdict::kAccepted) {
    LadderResult r;
    r.verdict = front.verdict;
    r.plaintext_offset = front.payload_offset;
    r.plaintext_len = front.payload_len;
    return r;
  }
  if (!f.key->verify_header_mac(f.dgram)) {
    LadderResult bad;
    bad.verdict = Verdict::kBadMac;
    return bad;
  }
  LadderResult r;
  r.verdict = ladder_back(cfg, st, f, &r);
  return r;
}

}  // namespace gw::dp
