// The membership engine's configuration from the gateway's config: the one
// adapter gossipgw (before EAL) and `gossipctl config check` both run, so a
// configuration the engine refuses fails the same way in both. Pure: links
// the config, the engine and the dataplane's pure library only.
#pragma once

#include <string>

#include "config/config.h"
#include "control/engine/config.h"
#include "control/engine/messages.h"
#include "dataplane/ladder.h"

namespace gw::cp {

// An address as the engine spells it.
engine::Address engine_address(const dp::LocalEndpoint& ep);

// The build every member announces (Alive, syncs): the version and git
// revision `gossipgw --version` prints, as "0.1.0+aa83e72b1c2d" (at most
// engine::kMaxBuildBytes).
std::string gateway_build();

// membership.preset with node.* and membership.* over it, checked with
// EngineConfig::validate(): throws std::invalid_argument("membership: <field>:
// <why>") for a configuration the engine cannot run. `local` is our address
// (dp::ladder_config(cfg).local).
engine::EngineConfig engine_config(const config::Config& cfg, const dp::LocalEndpoint& local);

// The same for a caller without the ladder (gossipctl): our address from
// node.address and node.port, already checked by the config loader.
engine::EngineConfig engine_config(const config::Config& cfg);

}  // namespace gw::cp
