// The operator signing key (issue 51 item 6): an Ed25519 key pair
// (libsodium crypto_sign) whose secret half stays with the operator and
// whose public half every member holds (cluster.operator_public_key).
// Cluster-wide key changes (install, use, remove on every member) are
// applied only when the operator signed them: holding the cluster key, as
// every member does, is not enough to change any keyring.
//
// The secret key file is a 32-byte seed in the cluster-key file format
// (exactly 32 random bytes, mode 0600: load_key_file/write_key_file check
// and write it); the key pair is derived from it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "crypto/keys.h"

namespace gw::crypto {

inline constexpr std::size_t kOperatorPublicKeyBytes = 32;
inline constexpr std::size_t kSignatureBytes = 64;
using OperatorPublicKey = std::array<std::uint8_t, kOperatorPublicKeyBytes>;
using Signature = std::array<std::uint8_t, kSignatureBytes>;

class OperatorSigner {
 public:
  // From the seed a secret key file holds.
  explicit OperatorSigner(const KeyBytes& seed) noexcept;
  ~OperatorSigner();
  OperatorSigner(const OperatorSigner&) = delete;
  OperatorSigner& operator=(const OperatorSigner&) = delete;

  const OperatorPublicKey& public_key() const noexcept { return pk_; }
  Signature sign(std::span<const std::uint8_t> message) const noexcept;

 private:
  std::array<std::uint8_t, 64> sk_{};
  OperatorPublicKey pk_{};
};

// True if `sig` is `pk`'s signature of `message`.
bool verify_operator_signature(const OperatorPublicKey& pk, std::span<const std::uint8_t> message,
                               const Signature& sig) noexcept;

// 64 lowercase hex digits, as the config holds it.
std::string operator_key_text(const OperatorPublicKey& pk);
// Parses 64 hex digits naming a valid Ed25519 public key; false otherwise.
bool parse_operator_key(std::string_view hex, OperatorPublicKey* out) noexcept;

}  // namespace gw::crypto
