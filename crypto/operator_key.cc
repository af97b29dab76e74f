#include "crypto/operator_key.h"

#include <sodium.h>

namespace gw::crypto {

OperatorSigner::OperatorSigner(const KeyBytes& seed) noexcept {
  static_assert(crypto_sign_SEEDBYTES == kKeyBytes && crypto_sign_PUBLICKEYBYTES == kOperatorPublicKeyBytes &&
                crypto_sign_SECRETKEYBYTES == 64 && crypto_sign_BYTES == kSignatureBytes);
  crypto_sign_seed_keypair(pk_.data(), sk_.data(), seed.data());
}

OperatorSigner::~OperatorSigner() { sodium_memzero(sk_.data(), sk_.size()); }

Signature OperatorSigner::sign(std::span<const std::uint8_t> message) const noexcept {
  Signature sig{};
  crypto_sign_detached(sig.data(), nullptr, message.data(), message.size(), sk_.data());
  return sig;
}

bool verify_operator_signature(const OperatorPublicKey& pk, std::span<const std::uint8_t> message,
                               const Signature& sig) noexcept {
  return crypto_sign_verify_detached(sig.data(), message.data(), message.size(), pk.data()) == 0;
}

std::string operator_key_text(const OperatorPublicKey& pk) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::uint8_t b : pk) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

bool parse_operator_key(std::string_view hex, OperatorPublicKey* out) noexcept {
  if (hex.size() != 2 * kOperatorPublicKeyBytes) return false;
  const auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  OperatorPublicKey pk{};
  for (std::size_t i = 0; i < pk.size(); ++i) {
    const int hi = nibble(hex[2 * i]);
    const int lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    pk[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  // A point not on the curve (or of small order) can verify nothing useful.
  if (crypto_core_ed25519_is_valid_point(pk.data()) != 1) return false;
  *out = pk;
  return true;
}

}  // namespace gw::crypto
