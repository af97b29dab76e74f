// The fixed cleartext header in front of every gossipgw datagram.
//
// All multi-byte fields are big-endian. The whole header is authenticated as
// AEAD associated data; `mac` additionally lets a receiver reject a header
// forged without the key for the cost of one SipHash, before any rate-limit
// bucket is charged or any AEAD runs (WireGuard's MAC1 idea).
//
//   offset size field
//   0      4    magic        "GSGW" (0x47 0x53 0x47 0x57)
//   4      1    version      kWireVersion (2; version 1 had no receiver binding)
//   5      1    class        priority class: 0 urgent, 1 probe, 2 gossip, 3 bulk
//   6      1    suite        AEAD suite: 1 AES-256-GCM, 2 ChaCha20-Poly1305 (IETF)
//   7      1    flags        reserved, must be 0
//   8      8    cluster_id   derive_cluster_id(cluster name)
//   16     4    key_id       derive_key_id(key) of the sealing key
//   20     4    timestamp    sender clock, seconds since the Unix epoch (replay window)
//   24     12   nonce        8-byte random sender epoch || 4-byte counter (see nonce.h)
//   36     2    payload_len  bytes after the header: ciphertext + 16-byte tag
//   38     2    receiver     receiver tag: 16 bits of the receiver's address (Receiver)
//   40     8    mac          SipHash-2-4(mac key of key_id, bytes 0..39)
//   48     ...  payload      sealed gw.proto.Compound || tag
//
// Receiver binding (version 2, issue 17): a datagram is sealed for one
// receiver, the address and port it is sent to. The AEAD's associated data
// is the header followed by the receiver's full identity (Receiver::ad,
// never sent), so only that receiver can open it; the 16-bit tag in the
// header (covered by the header MAC) lets every other receiver refuse it
// for the cost of a compare, before the MAC (a tag collision, 1 in 65,536
// pairs, still fails the AEAD).
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/priority_class.h"

namespace gw::crypto {

// The header's class byte: the shared priority classes (base/priority_class.h).
using base::kClassCount;
using base::PriorityClass;

inline constexpr std::array<std::uint8_t, 4> kWireMagic = {'G', 'S', 'G', 'W'};
inline constexpr std::uint8_t kWireVersion = 2;
inline constexpr std::size_t kHeaderBytes = 48;
inline constexpr std::size_t kMacOffset = 40;
inline constexpr std::size_t kNonceBytes = 12;
inline constexpr std::size_t kTagBytes = 16;

// AEAD suites. Numeric values are on the wire.
enum class Suite : std::uint8_t { kAes256Gcm = 1, kChaCha20Poly1305 = 2 };

using Nonce = std::array<std::uint8_t, kNonceBytes>;

// Who a datagram is for: its UDP endpoint as the sender addresses it.
// `ad` (address length, 16 address bytes zero-padded, port big-endian)
// follows the header in the AEAD's associated data; `tag` goes on the wire.
// Made by receiver_of() (crypto/keys.h). All zero: bound to nobody.
inline constexpr std::size_t kReceiverAdBytes = 19;
struct Receiver {
  std::array<std::uint8_t, kReceiverAdBytes> ad{};
  std::uint16_t tag = 0;
};

struct WireHeader {
  std::uint8_t version = kWireVersion;
  PriorityClass cls = PriorityClass::kGossip;
  Suite suite = Suite::kAes256Gcm;
  std::uint64_t cluster_id = 0;
  std::uint32_t key_id = 0;
  std::uint32_t timestamp = 0;
  Nonce nonce{};
  std::uint16_t payload_len = 0;
  std::uint16_t receiver = 0;  // Receiver::tag of whom it is for
  std::uint64_t mac = 0;
};

// Why a header was refused. The first three mean "not ours at all" (unkeyed);
// the others mean "claims to be ours but is inconsistent" (malformed).
enum class HeaderStatus : std::uint8_t {
  kOk,
  kTooShort,    // fewer than kHeaderBytes bytes: unkeyed
  kBadMagic,    // unkeyed
  kBadVersion,  // unkeyed: another version is another protocol to us
  kBadField,    // unknown class or suite, reserved bits set: malformed
  kBadLength,   // payload_len disagrees with the datagram, or too short for a tag
};

namespace detail {

inline std::uint16_t wire_be16(const std::uint8_t* p) noexcept {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}
inline std::uint32_t wire_be32(const std::uint8_t* p) noexcept {
  std::uint32_t v = 0;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap32(v);
  return v;
}
inline std::uint64_t wire_be64(const std::uint8_t* p) noexcept {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap64(v);
  return v;
}

}  // namespace detail

// The fields of a header that parse_header() accepted, read without checking
// anything again (the worker parses a header, checks a burst's MACs, then
// reads the fields of those that passed).
inline void read_header_fields(const std::uint8_t* data, WireHeader* out) noexcept {
  out->version = data[4];
  out->cls = static_cast<PriorityClass>(data[5]);
  out->suite = static_cast<Suite>(data[6]);
  out->cluster_id = detail::wire_be64(data + 8);
  out->key_id = detail::wire_be32(data + 16);
  out->timestamp = detail::wire_be32(data + 20);
  std::memcpy(out->nonce.data(), data + 24, kNonceBytes);
  out->payload_len = detail::wire_be16(data + 36);
  out->receiver = detail::wire_be16(data + 38);
  out->mac = detail::wire_be64(data + kMacOffset);
}

// Parses `len` bytes of UDP payload. Checks the datagram is exactly header +
// payload_len and that payload_len holds at least a tag. Reads only; the MAC is
// checked separately (it needs the key). Inline: the worker parses every
// datagram addressed to it, so the call and the out-parameter must fold away.
inline HeaderStatus parse_header(const std::uint8_t* data, std::size_t len, WireHeader* out) noexcept {
  if (len < kHeaderBytes) return HeaderStatus::kTooShort;
  constexpr std::uint32_t kMagicBe = (std::uint32_t{kWireMagic[0]} << 24) | (std::uint32_t{kWireMagic[1]} << 16) |
                                     (std::uint32_t{kWireMagic[2]} << 8) | std::uint32_t{kWireMagic[3]};
  if (detail::wire_be32(data) != kMagicBe) return HeaderStatus::kBadMagic;
  if (data[4] != kWireVersion) return HeaderStatus::kBadVersion;

  const std::uint8_t cls = data[5];
  const std::uint8_t suite = data[6];
  if (cls >= kClassCount) return HeaderStatus::kBadField;
  if (suite != static_cast<std::uint8_t>(Suite::kAes256Gcm) &&
      suite != static_cast<std::uint8_t>(Suite::kChaCha20Poly1305)) {
    return HeaderStatus::kBadField;
  }
  // Reserved bits set: a sender we do not understand, not a version we speak.
  if (data[7] != 0) return HeaderStatus::kBadField;

  const std::uint16_t payload_len = detail::wire_be16(data + 36);
  if (payload_len < kTagBytes || payload_len != len - kHeaderBytes) return HeaderStatus::kBadLength;

  read_header_fields(data, out);
  return HeaderStatus::kOk;
}

// Writes the 48 header bytes; `mac` is written as given.
void write_header(const WireHeader& h, std::uint8_t* out) noexcept;

}  // namespace gw::crypto
