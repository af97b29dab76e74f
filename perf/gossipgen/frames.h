// Ethernet/IPv4/IPv6/UDP frame builders for gossipgen.
//
// Everything here builds well-formed frames with correct checksums (IPv4
// header checksum, UDP checksum for both families, TCP and ICMP checksums);
// the generator breaks them on purpose afterwards where a kind asks for it.
// No I/O and no randomness: the same arguments always give the same bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gw::perf {

using Frame = std::vector<std::uint8_t>;
using MacAddr = std::array<std::uint8_t, 6>;

inline constexpr std::size_t kEthHeaderBytes = 14;
inline constexpr std::size_t kIpv4HeaderBytes = 20;
inline constexpr std::size_t kIpv6HeaderBytes = 40;
inline constexpr std::size_t kUdpHeaderBytes = 8;
inline constexpr std::size_t kTcpHeaderBytes = 20;
// Largest Ethernet II frame without FCS and without jumbo frames.
inline constexpr std::size_t kMaxFrameBytes = 1514;
// Shortest Ethernet frame without FCS: a NIC pads anything shorter.
inline constexpr std::size_t kMinFrameBytes = 60;

inline constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr std::uint16_t kEtherTypeArp = 0x0806;
inline constexpr std::uint16_t kEtherTypeIpv6 = 0x86DD;
inline constexpr std::uint8_t kIpProtoTcp = 6;
inline constexpr std::uint8_t kIpProtoUdp = 17;
inline constexpr std::uint8_t kIpProtoIcmp = 1;
inline constexpr std::uint8_t kIpProtoIcmpv6 = 58;

// An IPv4 (first 4 bytes used) or IPv6 address, in network byte order.
struct IpAddr {
  bool v6 = false;
  std::array<std::uint8_t, 16> bytes{};

  bool operator==(const IpAddr&) const = default;
};

// Parses an IPv4 or IPv6 literal (base::parse_ip); nullopt if it is neither.
std::optional<IpAddr> parse_ip(std::string_view text);
std::string format_ip(const IpAddr& ip);

// Bytes from the Ethernet header to the start of the L4 header.
inline constexpr std::size_t l4_offset(bool v6) noexcept {
  return kEthHeaderBytes + (v6 ? kIpv6HeaderBytes : kIpv4HeaderBytes);
}
// Bytes of Ethernet + IP + UDP headers in front of a UDP payload.
inline constexpr std::size_t udp_payload_offset(bool v6) noexcept { return l4_offset(v6) + kUdpHeaderBytes; }

// The addresses of one IP flow.
struct Flow {
  MacAddr src_mac{};
  MacAddr dst_mac{};
  IpAddr src;  // must be the same family as dst
  IpAddr dst;
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = 0;
  std::uint16_t ip_id = 0;  // IPv4 identification (ignored for IPv6)
};

// RFC 1071 one's-complement sum folded to 16 bits and inverted.
std::uint16_t internet_checksum(const std::uint8_t* data, std::size_t len, std::uint32_t initial = 0) noexcept;

// Recomputes the IPv4 header checksum of the 20-byte header at `frame[14]`.
// `frame` must hold at least 34 bytes.
void fix_ipv4_checksum(Frame& frame) noexcept;

// Ethernet II + IPv4/IPv6 (by the family of flow.dst) + UDP carrying `payload`,
// with correct checksums, padded to kMinFrameBytes like a NIC would.
Frame build_udp_frame(const Flow& flow, std::span<const std::uint8_t> payload);
// Same, TCP SYN (no payload) from src_port to dst_port.
Frame build_tcp_syn_frame(const Flow& flow, std::uint32_t seq);
// ICMP echo request (ICMPv6 for IPv6) with `payload`.
Frame build_icmp_echo_frame(const Flow& flow, std::uint16_t ident, std::uint16_t seq,
                            std::span<const std::uint8_t> payload);
// ARP who-has dst (IPv4 only: for an IPv6 flow the low 4 bytes of the
// addresses are used, which is still an ARP request and still not gossip).
Frame build_arp_request(const Flow& flow);
// Ethernet II with an arbitrary EtherType and payload.
Frame build_ethernet_frame(const MacAddr& src, const MacAddr& dst, std::uint16_t ether_type,
                           std::span<const std::uint8_t> payload);

// Big-endian helpers, shared with the generator and the tests.
inline void store_be16(std::uint8_t* p, std::uint16_t v) noexcept {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}
inline std::uint16_t load_be16(const std::uint8_t* p) noexcept {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

}  // namespace gw::perf
