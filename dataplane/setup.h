// Turning a validated Config into what the dataplane runs with: the keyring
// and the ladder's fixed inputs. Runs before EAL starts.
#pragma once

#include <map>
#include <stdexcept>
#include <string>

#include "config/config.h"
#include "crypto/keys.h"
#include "dataplane/ladder.h"
#include "dataplane/neighbors.h"

namespace gw::dp {

// The suite a config selects on this CPU; throws std::runtime_error naming
// `cluster.suite` if AES-256-GCM is asked for and the CPU cannot run it.
crypto::Suite resolve_suite(const config::Config& cfg);

// Loads every key file; throws crypto::KeyError naming the file. With
// `material`, also returns each key's bytes by id (to persist the keyring).
crypto::Keyring load_keyring(const config::Config& cfg,
                             std::map<std::uint32_t, crypto::KeyBytes>* material = nullptr);

// Fills everything but `keys`.
LadderConfig ladder_config(const config::Config& cfg);

// The transmit MAC table's configured part: dataplane.neighbors pinned,
// dataplane.arp_hints applied. Main lcore, before the workers run; throws
// std::runtime_error for an entry it cannot take.
void setup_neighbors(Neighbors& n, const config::Config& cfg);

}  // namespace gw::dp
