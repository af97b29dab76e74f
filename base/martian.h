// Addresses no member can have (issue 17, issue 51): what the dataplane
// ladder refuses as a datagram's source (dataplane/ladder_inl.h: martian_v4,
// martian_v6, fused there into one branch for the fast path), as a predicate
// over an address's bytes, for the addresses a message names (an Alive's
// address, a ping's reply address, an indirect ping's target): an answer must
// never go where no member can be. Our own address and our subnet's
// broadcast and network addresses are the caller's to add (the engine knows
// its own address). tests/unit/base/martian_test.cc pins the classes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gw::base {

// IPv4 0.0.0.0/8 ("this network"), 127/8 (loopback), 224/4 multicast and
// 240/4 (reserved, with 255.255.255.255 broadcast).
constexpr bool martian_v4(const std::uint8_t* ip) noexcept { return ip[0] == 0 || ip[0] == 127 || ip[0] >= 224; }

// IPv6 :: (unspecified), ::1 (loopback), ff00::/8 multicast and
// ::ffff:0:0/96 (IPv4-mapped: never a source on the wire, RFC 4291 2.5.5.2).
constexpr bool martian_v6(const std::uint8_t* ip) noexcept {
  if (ip[0] == 0xFF) return true;
  for (std::size_t i = 0; i < 10; ++i)
    if (ip[i] != 0) return false;
  if (ip[10] == 0xFF && ip[11] == 0xFF) return true;
  if (ip[10] != 0 || ip[11] != 0) return false;
  for (std::size_t i = 12; i < 15; ++i)
    if (ip[i] != 0) return false;
  return ip[15] == 0 || ip[15] == 1;
}

// Either, by length (4 or 16 bytes); any other length is martian too.
constexpr bool martian_ip(const std::uint8_t* ip, std::size_t len) noexcept {
  return len == 4 ? martian_v4(ip) : len == 16 ? martian_v6(ip) : true;
}

}  // namespace gw::base
