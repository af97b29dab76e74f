// IP -> MAC for peers, learned by a worker from packets that passed the AEAD
// (so an outsider cannot poison it), used when that worker transmits. ARP may
// fill an empty slot as a hint (hint(); dataplane/arp.h), never overwrite one.
// A small direct-mapped table: bounded memory, a miss only costs a broadcast frame.
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

  void learn(const Endpoint& ip, const std::uint8_t* mac) noexcept {
    Slot& s = slots_[index(ip)];
    s.used = true;
    s.ip_len = ip.ip_len;
    std::memcpy(s.ip.data(), ip.ip.data(), ip.ip_len);
    std::memcpy(s.mac.data(), mac, 6);
  }

  // An unauthenticated hint (ARP, dataplane/arp.h): fills an empty slot only,
  // never replaces what an authenticated packet taught. True if it was taken.
  bool hint(const Endpoint& ip, const std::uint8_t* mac) noexcept {
    if (slots_[index(ip)].used) return false;
    learn(ip, mac);
    return true;
  }

  // False if unknown (or evicted by another address in the same slot).
  bool lookup(const Endpoint& ip, Mac* mac) const noexcept {
    const Slot& s = slots_[index(ip)];
    if (!s.used || s.ip_len != ip.ip_len || std::memcmp(s.ip.data(), ip.ip.data(), ip.ip_len) != 0) {
      return false;
    }
    *mac = s.mac;
    return true;
  }

 private:
  struct Slot {
    std::array<std::uint8_t, 16> ip{};
    Mac mac{};
    std::uint8_t ip_len = 0;
    bool used = false;
  };

  static std::size_t index(const Endpoint& ip) noexcept {
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over the address
    for (std::size_t i = 0; i < ip.ip_len; ++i) h = (h ^ ip.ip[i]) * 1099511628211ULL;
    return static_cast<std::size_t>(h % kSlots);
  }

  std::array<Slot, kSlots> slots_{};
};

}  // namespace gw::dp
