// (IP, port) -> MAC for peers, learned by a worker from packets that passed
// the AEAD, used when that worker transmits. ARP may fill an empty slot as a
// hint (hint(); dataplane/arp.h), never overwrite one. A small direct-mapped
// table (slot chosen by the IP): bounded memory, a miss only costs a
// broadcast frame.
//
// Why the port is part of the key (issue 17, docs/ladder.md "transmit
// MACs"): the Ethernet source of an accepted frame is not authenticated. An
// outsider who re-sends a member's real datagram from its own MAC is caught
// by the replay windows only if the copy reaches the worker that saw the
// original, and RSS sends a copy with the same IP and port there; a copy
// from another source port may reach another worker and be accepted. Keyed
// by (IP, port), such a copy teaches a MAC for an endpoint we never send to
// (we send to the member's advertised address and port), and at worst
// overwrites the member's slot so its next datagrams go to broadcast until
// its own next frame: it can cost a unicast, never choose where we send.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "dataplane/api/handoff.h"

namespace gw::dp {

class Neighbors {
 public:
  static constexpr std::size_t kSlots = 1024;
  using Mac = std::array<std::uint8_t, 6>;

  // From an accepted frame: `from` is its IP source and UDP source port.
  void learn(const Endpoint& from, const std::uint8_t* mac) noexcept { put(from, mac, false); }

  // An unauthenticated hint (ARP, dataplane/arp.h; any port of `ip`): fills
  // an empty slot only, never replaces what an authenticated packet taught.
  // True if it was taken.
  bool hint(const Endpoint& ip, const std::uint8_t* mac) noexcept {
    if (slots_[index(ip)].used) return false;
    put(ip, mac, true);
    return true;
  }

  // The MAC for endpoint `to`. False if unknown, learned for another port
  // of that address, or evicted by another address in the same slot.
  bool lookup(const Endpoint& to, Mac* mac) const noexcept {
    const Slot& s = slots_[index(to)];
    if (!s.used || s.ip_len != to.ip_len || std::memcmp(s.ip.data(), to.ip.data(), to.ip_len) != 0) {
      return false;
    }
    if (!s.any_port && s.port != to.port) return false;
    *mac = s.mac;
    return true;
  }

 private:
  struct Slot {
    std::array<std::uint8_t, 16> ip{};
    Mac mac{};
    std::uint16_t port = 0;
    std::uint8_t ip_len = 0;
    bool used = false;
    bool any_port = false;  // an ARP hint: no port known
  };

  void put(const Endpoint& e, const std::uint8_t* mac, bool any_port) noexcept {
    Slot& s = slots_[index(e)];
    s.used = true;
    s.any_port = any_port;
    s.port = e.port;
    s.ip_len = e.ip_len;
    std::memcpy(s.ip.data(), e.ip.data(), e.ip_len);
    std::memcpy(s.mac.data(), mac, 6);
  }

  static std::size_t index(const Endpoint& ip) noexcept {
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over the address
    for (std::size_t i = 0; i < ip.ip_len; ++i) h = (h ^ ip.ip[i]) * 1099511628211ULL;
    return static_cast<std::size_t>(h % kSlots);
  }

  std::array<Slot, kSlots> slots_{};
};

}  // namespace gw::dp
