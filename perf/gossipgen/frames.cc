#include "perf/gossipgen/frames.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "base/endpoint.h"

namespace gw::perf {
namespace {

constexpr std::uint8_t kTtl = 64;
constexpr std::uint16_t kIpv4DontFragment = 0x4000;

void put_eth(Frame& f, const MacAddr& src, const MacAddr& dst, std::uint16_t ether_type) {
  f.insert(f.end(), dst.begin(), dst.end());
  f.insert(f.end(), src.begin(), src.end());
  f.resize(f.size() + 2);
  store_be16(f.data() + f.size() - 2, ether_type);
}

// Appends an IP header for `l4_len` bytes of protocol `proto`.
void put_ip(Frame& f, const Flow& flow, std::uint8_t proto, std::size_t l4_len) {
  const std::size_t at = f.size();
  if (flow.dst.v6) {
    f.resize(at + kIpv6HeaderBytes, 0);
    std::uint8_t* h = f.data() + at;
    h[0] = 0x60;
    store_be16(h + 4, static_cast<std::uint16_t>(l4_len));
    h[6] = proto;
    h[7] = kTtl;
    std::memcpy(h + 8, flow.src.bytes.data(), 16);
    std::memcpy(h + 24, flow.dst.bytes.data(), 16);
  } else {
    f.resize(at + kIpv4HeaderBytes, 0);
    std::uint8_t* h = f.data() + at;
    h[0] = 0x45;
    store_be16(h + 2, static_cast<std::uint16_t>(kIpv4HeaderBytes + l4_len));
    store_be16(h + 4, flow.ip_id);
    store_be16(h + 6, kIpv4DontFragment);
    h[8] = kTtl;
    h[9] = proto;
    std::memcpy(h + 12, flow.src.bytes.data(), 4);
    std::memcpy(h + 16, flow.dst.bytes.data(), 4);
    store_be16(h + 10, internet_checksum(h, kIpv4HeaderBytes));
  }
}

// One's-complement sum of the pseudo-header, not yet folded or inverted.
std::uint32_t pseudo_header_sum(const Flow& flow, std::uint8_t proto, std::size_t l4_len) {
  std::uint32_t sum = 0;
  const std::size_t n = flow.dst.v6 ? 16 : 4;
  for (std::size_t i = 0; i < n; i += 2) {
    sum += load_be16(flow.src.bytes.data() + i);
    sum += load_be16(flow.dst.bytes.data() + i);
  }
  sum += proto;
  sum += static_cast<std::uint32_t>(l4_len & 0xFFFF);
  sum += static_cast<std::uint32_t>(l4_len >> 16);
  return sum;
}

void pad_to_minimum(Frame& f) {
  if (f.size() < kMinFrameBytes) f.resize(kMinFrameBytes, 0);
}

}  // namespace

std::optional<IpAddr> parse_ip(std::string_view text) {
  const std::optional<base::IpBytes> parsed = base::parse_ip(text);
  if (!parsed) return std::nullopt;
  IpAddr ip;
  ip.v6 = parsed->size() == 16;
  std::copy(parsed->begin(), parsed->end(), ip.bytes.begin());
  return ip;
}

std::string format_ip(const IpAddr& ip) {
  char buf[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(ip.v6 ? AF_INET6 : AF_INET, ip.bytes.data(), buf, sizeof buf);
  return buf;
}

std::uint16_t internet_checksum(const std::uint8_t* data, std::size_t len, std::uint32_t initial) noexcept {
  std::uint64_t sum = initial;
  std::size_t i = 0;
  for (; i + 1 < len; i += 2) sum += load_be16(data + i);
  if (i < len) sum += static_cast<std::uint64_t>(data[i]) << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum & 0xFFFF);
}

void fix_ipv4_checksum(Frame& frame) noexcept {
  std::uint8_t* h = frame.data() + kEthHeaderBytes;
  store_be16(h + 10, 0);
  store_be16(h + 10, internet_checksum(h, kIpv4HeaderBytes));
}

Frame build_udp_frame(const Flow& flow, std::span<const std::uint8_t> payload) {
  const std::size_t udp_len = kUdpHeaderBytes + payload.size();
  Frame f;
  f.reserve(udp_payload_offset(flow.dst.v6) + payload.size());
  put_eth(f, flow.src_mac, flow.dst_mac, flow.dst.v6 ? kEtherTypeIpv6 : kEtherTypeIpv4);
  put_ip(f, flow, kIpProtoUdp, udp_len);
  const std::size_t at = f.size();
  f.resize(at + kUdpHeaderBytes, 0);
  f.insert(f.end(), payload.begin(), payload.end());
  std::uint8_t* u = f.data() + at;
  store_be16(u, flow.src_port);
  store_be16(u + 2, flow.dst_port);
  store_be16(u + 4, static_cast<std::uint16_t>(udp_len));
  std::uint16_t csum = internet_checksum(u, udp_len, pseudo_header_sum(flow, kIpProtoUdp, udp_len));
  // A computed 0 is sent as 0xFFFF: 0 means "no checksum" (and is invalid in IPv6).
  if (csum == 0) csum = 0xFFFF;
  store_be16(u + 6, csum);
  pad_to_minimum(f);
  return f;
}

Frame build_tcp_syn_frame(const Flow& flow, std::uint32_t seq) {
  Frame f;
  put_eth(f, flow.src_mac, flow.dst_mac, flow.dst.v6 ? kEtherTypeIpv6 : kEtherTypeIpv4);
  put_ip(f, flow, kIpProtoTcp, kTcpHeaderBytes);
  const std::size_t at = f.size();
  f.resize(at + kTcpHeaderBytes, 0);
  std::uint8_t* t = f.data() + at;
  store_be16(t, flow.src_port);
  store_be16(t + 2, flow.dst_port);
  store_be16(t + 4, static_cast<std::uint16_t>(seq >> 16));
  store_be16(t + 6, static_cast<std::uint16_t>(seq));
  t[12] = 5 << 4;  // data offset: 5 words
  t[13] = 0x02;    // SYN
  store_be16(t + 14, 64240);
  store_be16(t + 16, internet_checksum(t, kTcpHeaderBytes, pseudo_header_sum(flow, kIpProtoTcp, kTcpHeaderBytes)));
  pad_to_minimum(f);
  return f;
}

Frame build_icmp_echo_frame(const Flow& flow, std::uint16_t ident, std::uint16_t seq,
                            std::span<const std::uint8_t> payload) {
  const std::size_t len = 8 + payload.size();
  const std::uint8_t proto = flow.dst.v6 ? kIpProtoIcmpv6 : kIpProtoIcmp;
  Frame f;
  put_eth(f, flow.src_mac, flow.dst_mac, flow.dst.v6 ? kEtherTypeIpv6 : kEtherTypeIpv4);
  put_ip(f, flow, proto, len);
  const std::size_t at = f.size();
  f.resize(at + 8, 0);
  f.insert(f.end(), payload.begin(), payload.end());
  std::uint8_t* c = f.data() + at;
  c[0] = flow.dst.v6 ? 128 : 8;  // echo request
  store_be16(c + 4, ident);
  store_be16(c + 6, seq);
  // ICMPv6 includes the pseudo-header in its checksum; ICMPv4 does not.
  const std::uint32_t initial = flow.dst.v6 ? pseudo_header_sum(flow, proto, len) : 0;
  store_be16(c + 2, internet_checksum(c, len, initial));
  pad_to_minimum(f);
  return f;
}

Frame build_arp_request(const Flow& flow) {
  constexpr MacAddr kBroadcast = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  Frame f;
  put_eth(f, flow.src_mac, kBroadcast, kEtherTypeArp);
  const std::size_t at = f.size();
  f.resize(at + 28, 0);
  std::uint8_t* a = f.data() + at;
  store_be16(a, 1);  // hardware: Ethernet
  store_be16(a + 2, kEtherTypeIpv4);
  a[4] = 6;
  a[5] = 4;
  store_be16(a + 6, 1);  // request
  std::memcpy(a + 8, flow.src_mac.data(), 6);
  const std::size_t ip_at = flow.dst.v6 ? 12 : 0;
  std::memcpy(a + 14, flow.src.bytes.data() + ip_at, 4);
  std::memcpy(a + 24, flow.dst.bytes.data() + ip_at, 4);
  pad_to_minimum(f);
  return f;
}

Frame build_ethernet_frame(const MacAddr& src, const MacAddr& dst, std::uint16_t ether_type,
                           std::span<const std::uint8_t> payload) {
  Frame f;
  put_eth(f, src, dst, ether_type);
  f.insert(f.end(), payload.begin(), payload.end());
  pad_to_minimum(f);
  return f;
}

}  // namespace gw::perf
