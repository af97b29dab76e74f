// The cluster's keys as a config names them: the cipher suite it selects on
// this CPU and every key file it lists. Shared by gossipgw (at start) and
// gossipctl (`config check`); no DPDK, no EAL.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "config/config.h"
#include "crypto/keys.h"
#include "crypto/operator_key.h"

namespace gw::config {

// The suite a config selects on this CPU; throws std::runtime_error naming
// `cluster.suite` if AES-256-GCM is asked for and the CPU cannot run it.
crypto::Suite resolve_suite(const Config& cfg);

// Loads every key file; throws crypto::KeyError naming the file. With
// `material`, also returns each key's bytes by id (to persist the keyring).
crypto::Keyring load_keyring(const Config& cfg, std::map<std::uint32_t, crypto::KeyBytes>* material = nullptr);

// The operator signing key's public half (cluster.operator_public_key), or
// none when the config has none; throws crypto::KeyError naming the field if
// it is not a valid Ed25519 public key.
std::optional<crypto::OperatorPublicKey> load_operator_key(const Config& cfg);

}  // namespace gw::config
