// Where the transmitting worker sends a datagram for endpoint (IP, port): the
// destination MAC. Ethernet source addresses and ARP are not authenticated,
// so what decides it must be something an outsider cannot forge into
// (issue 17 item 6; docs/ladder.md "transmit MACs" states what is relied on).
// Three sources, in the order lookup() trusts them:
//
//  1. Pinned neighbours (config dataplane.neighbors): set by the operator
//     before the workers run, for an IP and any port. Nothing received ever
//     replaces or shadows them.
//  2. Learned: the Ethernet source of a frame that passed the whole ladder
//     (header MAC, receiver tag, replay window, watermark, AEAD) on this
//     worker, for its IP source *and UDP source port*. Keyed by both, so a
//     copy of a member's datagram from another source port (which RSS may
//     take to a worker whose windows never saw it) lands in another slot and
//     neither redirects nor evicts the member's binding (unless the two
//     endpoints' slots collide: then the member's datagrams go to broadcast,
//     counted, until its next frame). A newer authenticated frame replaces
//     the binding (a member may change its MAC), so an on-path attacker must
//     win the race against every real datagram anew.
//  3. ARP hints (only with dataplane.arp_hints: true; off by default): the
//     sender of an ARP request or reply addressed to us, for an IP never
//     learned or pinned. Never replaces anything; an authenticated frame
//     from that IP removes it and keeps further hints for it out.
//
// Unknown: the caller sends to broadcast (tx_broadcast_unknown_mac), which
// reaches the member and nobody in particular. Small direct-mapped tables:
// bounded memory, a miss only costs a broadcast frame.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "dataplane/api/handoff.h"
#include "dataplane/hash.h"

namespace gw::dp {

class Neighbors {
 public:
  static constexpr std::size_t kSlots = 1024;
  // Most pinned neighbours (config dataplane.neighbors); a power of two at
  // least twice that for the probe table.
  static constexpr std::size_t kMaxPinned = 256;
  using Mac = std::array<std::uint8_t, 6>;

  // Before the worker runs (main lcore). `ip`'s port is ignored. False if
  // the table is full or the MAC is not a unicast address.
  bool pin(const Endpoint& ip, const std::uint8_t* mac) noexcept {
    if (pinned_ >= kMaxPinned || !unicast(mac)) return false;
    std::size_t i = ip_index(ip) % kPinSlots;
    while (pins_[i].used && !same_ip(pins_[i], ip)) i = (i + 1) % kPinSlots;
    if (!pins_[i].used) ++pinned_;
    fill(pins_[i], ip, mac);
    return true;
  }

  // Before the worker runs and before any pin(): keys the slot hash with a
  // random seed (hash.h), so nobody can choose addresses whose slots collide
  // with a member's.
  void set_hash_seed(std::uint64_t seed) noexcept { key_ = table_key(seed); }

  // Before the worker runs: take ARP hints at all (config dataplane.arp_hints).
  void allow_hints(bool on) noexcept { hints_allowed_ = on; }

  // From an accepted frame: `from` is its IP source and UDP source port.
  void learn(const Endpoint& from, const std::uint8_t* mac) noexcept {
    if (pinned_ != 0 && find_pin(from) != nullptr) return;  // the operator's word stands
    if (!unicast(mac)) return;
    const std::uint64_t ih = ip_index(from);  // one hash for both tables
    fill(learned_[endpoint_index(ih, from.port)], from, mac);
    // The address is now known from an authenticated frame: its hint goes,
    // and a mark in its place keeps later hints for it out (for any port).
    Slot& h = hints_[ih % kSlots];
    if (!(h.used && h.mark && same_ip(h, from))) {
      fill(h, from, mac);
      h.mark = true;
    }
  }

  // An unauthenticated hint (ARP, dataplane/arp.h; any port of `ip`): only
  // when hints are allowed, for an address neither pinned nor learned, into
  // an empty slot. True if it was taken.
  bool hint(const Endpoint& ip, const std::uint8_t* mac) noexcept {
    if (!hints_allowed_ || !unicast(mac)) return false;
    if (pinned_ != 0 && find_pin(ip) != nullptr) return false;
    Slot& s = hints_[ip_index(ip) % kSlots];
    if (s.used) return false;
    fill(s, ip, mac);
    return true;
  }

  // The MAC for endpoint `to`: pinned, else learned for exactly that IP and
  // port, else an ARP hint for the IP. False if unknown.
  bool lookup(const Endpoint& to, Mac* mac) const noexcept {
    if (pinned_ != 0) {
      if (const Slot* p = find_pin(to)) {
        *mac = p->mac;
        return true;
      }
    }
    const std::uint64_t ih = ip_index(to);
    const Slot& s = learned_[endpoint_index(ih, to.port)];
    if (s.used && same_ip(s, to) && s.port == to.port) {
      *mac = s.mac;
      return true;
    }
    if (hints_allowed_) {
      const Slot& h = hints_[ih % kSlots];
      if (h.used && !h.mark && same_ip(h, to)) {
        *mac = h.mac;
        return true;
      }
    }
    return false;
  }

  std::size_t pinned() const noexcept { return pinned_; }

 private:
  static constexpr std::size_t kPinSlots = 2 * kMaxPinned;

  struct Slot {
    std::array<std::uint8_t, 16> ip{};
    Mac mac{};
    std::uint16_t port = 0;
    std::uint8_t ip_len = 0;
    bool used = false;
    bool mark = false;  // hints table: this IP was learned, take no hint for it
  };

  static bool unicast(const std::uint8_t* mac) noexcept {
    static constexpr std::uint8_t kZero[6] = {};
    return (mac[0] & 0x01) == 0 && std::memcmp(mac, kZero, 6) != 0;
  }

  static bool same_ip(const Slot& s, const Endpoint& e) noexcept {
    return s.ip_len == e.ip_len && std::memcmp(s.ip.data(), e.ip.data(), e.ip_len) == 0;
  }

  static void fill(Slot& s, const Endpoint& e, const std::uint8_t* mac) noexcept {
    s.used = true;
    s.mark = false;
    s.port = e.port;
    s.ip_len = e.ip_len;
    s.ip = {};
    std::memcpy(s.ip.data(), e.ip.data(), e.ip_len);
    std::memcpy(s.mac.data(), mac, 6);
  }

  const Slot* find_pin(const Endpoint& ip) const noexcept {
    std::size_t i = ip_index(ip) % kPinSlots;
    for (std::size_t n = 0; n < kPinSlots && pins_[i].used; ++n, i = (i + 1) % kPinSlots) {
      if (same_ip(pins_[i], ip)) return &pins_[i];
    }
    return nullptr;
  }

  std::uint64_t ip_index(const Endpoint& ip) const noexcept {
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    std::memcpy(&lo, ip.ip.data(), 8);
    std::memcpy(&hi, ip.ip.data() + 8, 8);
    return keyed_hash(key_, lo, hi ^ ip.ip_len);
  }

  static std::size_t endpoint_index(std::uint64_t ip_hash, std::uint16_t port) noexcept {
    return static_cast<std::size_t>(mix64(ip_hash ^ port) % kSlots);
  }

  std::array<Slot, kSlots> learned_{};
  std::array<Slot, kSlots> hints_{};
  std::array<Slot, kPinSlots> pins_{};
  std::size_t pinned_ = 0;
  bool hints_allowed_ = false;
  crypto::SipKey key_ = table_key(0);
};

}  // namespace gw::dp
