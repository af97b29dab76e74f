#include "crypto/wire_header.h"

#include <cstring>

namespace gw::crypto {
namespace {

std::uint16_t load_be16(const std::uint8_t* p) noexcept {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

std::uint32_t load_be32(const std::uint8_t* p) noexcept {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
         (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

std::uint64_t load_be64(const std::uint8_t* p) noexcept {
  return (std::uint64_t{load_be32(p)} << 32) | load_be32(p + 4);
}

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

HeaderStatus parse_header(const std::uint8_t* data, std::size_t len, WireHeader* out) noexcept {
  if (len < kHeaderBytes) return HeaderStatus::kTooShort;
  if (std::memcmp(data, kWireMagic.data(), kWireMagic.size()) != 0) return HeaderStatus::kBadMagic;
  if (data[4] != kWireVersion) return HeaderStatus::kBadVersion;

  const std::uint8_t cls = data[5];
  const std::uint8_t suite = data[6];
  if (cls >= kClassCount) return HeaderStatus::kBadField;
  if (suite != static_cast<std::uint8_t>(Suite::kAes256Gcm) &&
      suite != static_cast<std::uint8_t>(Suite::kChaCha20Poly1305)) {
    return HeaderStatus::kBadField;
  }
  // Reserved bits set: a sender we do not understand, not a version we speak.
  if (data[7] != 0 || data[38] != 0 || data[39] != 0) return HeaderStatus::kBadField;

  const std::uint16_t payload_len = load_be16(data + 36);
  if (payload_len < kTagBytes || payload_len != len - kHeaderBytes) return HeaderStatus::kBadLength;

  out->version = data[4];
  out->cls = static_cast<PriorityClass>(cls);
  out->suite = static_cast<Suite>(suite);
  out->cluster_id = load_be64(data + 8);
  out->key_id = load_be32(data + 16);
  out->timestamp = load_be32(data + 20);
  std::memcpy(out->nonce.data(), data + 24, kNonceBytes);
  out->payload_len = payload_len;
  out->mac = load_be64(data + kMacOffset);
  return HeaderStatus::kOk;
}

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
  out[38] = 0;
  out[39] = 0;
  store_be64(out + kMacOffset, h.mac);
}

}  // namespace gw::crypto
