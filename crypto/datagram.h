// Building and opening whole gossipgw datagrams (header + sealed payload).
#pragma once

#include <cstddef>
#include <cstdint>

#include "crypto/keys.h"
#include "crypto/nonce.h"
#include "crypto/wire_header.h"

namespace gw::crypto {

struct SealParams {
  std::uint64_t cluster_id = 0;
  PriorityClass cls = PriorityClass::kGossip;
  std::uint32_t timestamp = 0;  // seconds since the Unix epoch, from the caller's clock
  Receiver to;                  // whom it is for (receiver_of its destination); only it can open it
};

// Largest payload a datagram can carry (payload_len is 16 bits).
inline constexpr std::size_t kMaxPlaintextBytes = 0xFFFF - kTagBytes;

// Writes header + sealed `plaintext` to `out` and returns the datagram length,
// or 0 if it does not fit in `out_cap` or exceeds kMaxPlaintextBytes.
std::size_t seal_datagram(const Key& key, const SealParams& params, NonceSource& nonces, const std::uint8_t* plaintext,
                          std::size_t len, std::uint8_t* out, std::size_t out_cap) noexcept;

}  // namespace gw::crypto
