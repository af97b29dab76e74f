#include "crypto/wire_header.h"

#include <cstring>

namespace gw::crypto {
namespace {

void store_be16(std::uint8_t* p, std::uint16_t v) noexcept {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

void store_be32(std::uint8_t* p, std::uint32_t v) noexcept {
  for (int i = 3; i >= 0; --i) {
    p[i] = static_cast<std::uint8_t>(v);
    v >>= 8;
  }
}

void store_be64(std::uint8_t* p, std::uint64_t v) noexcept {
  store_be32(p, static_cast<std::uint32_t>(v >> 32));
  store_be32(p + 4, static_cast<std::uint32_t>(v));
}

}  // namespace

void write_header(const WireHeader& h, std::uint8_t* out) noexcept {
  std::memcpy(out, kWireMagic.data(), kWireMagic.size());
  out[4] = h.version;
  out[5] = static_cast<std::uint8_t>(h.cls);
  out[6] = static_cast<std::uint8_t>(h.suite);
  out[7] = 0;
  store_be64(out + 8, h.cluster_id);
  store_be32(out + 16, h.key_id);
  store_be32(out + 20, h.timestamp);
  std::memcpy(out + 24, h.nonce.data(), kNonceBytes);
  store_be16(out + 36, h.payload_len);
  store_be16(out + 38, h.receiver);
  store_be64(out + kMacOffset, h.mac);
}

}  // namespace gw::crypto
