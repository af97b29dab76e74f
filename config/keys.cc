#include "config/keys.h"

#include <stdexcept>
#include <string>

#include "config/loader.h"

namespace gw::config {

crypto::Suite resolve_suite(const Config& cfg) {
  switch (cfg.cluster.suite) {
    case SuiteChoice::kAes256Gcm:
      if (!crypto::aes256gcm_available()) {
        throw std::runtime_error(
            "cluster.suite: aes256gcm needs AES-NI and PCLMUL, which this CPU lacks; the whole cluster must use "
            "chacha20poly1305");
      }
      return crypto::Suite::kAes256Gcm;
    case SuiteChoice::kChaCha20Poly1305:
      return crypto::Suite::kChaCha20Poly1305;
    case SuiteChoice::kAuto:
      break;
  }
  return crypto::aes256gcm_available() ? crypto::Suite::kAes256Gcm : crypto::Suite::kChaCha20Poly1305;
}

crypto::Keyring load_keyring(const Config& cfg, std::map<std::uint32_t, crypto::KeyBytes>* material) {
  const crypto::Suite suite = resolve_suite(cfg);
  crypto::Keyring ring;
  for (const KeyConfig& k : cfg.cluster.keys) {
    const std::string path = resolve_path(cfg, k.file);
    const crypto::KeyBytes bytes = crypto::load_key_file(path);
    const crypto::Key key(bytes, suite);
    if (ring.find(key.id()) != nullptr) {
      throw crypto::KeyError("key file '" + path + "': the same key is listed twice in cluster.keys");
    }
    ring.add(key, k.primary);
    if (material != nullptr) (*material)[key.id()] = bytes;
  }
  return ring;
}

std::optional<crypto::OperatorPublicKey> load_operator_key(const Config& cfg) {
  if (cfg.cluster.operator_public_key.empty()) return std::nullopt;
  crypto::OperatorPublicKey pk{};
  if (!crypto::parse_operator_key(cfg.cluster.operator_public_key, &pk)) {
    throw crypto::KeyError(
        "cluster.operator_public_key: not a valid Ed25519 public key (print the right one with: "
        "gossipctl operator-key FILE)");
  }
  return pk;
}

}  // namespace gw::config
