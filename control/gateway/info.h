// The `info` reply of the control API (gossipctl info): what this gateway is,
// what it started with, and its queue depths now. Control lcore.
#pragma once

#include <rte_ring.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "control/host/engine_host.h"
#include "dataplane/api/snapshot.h"
#include "dataplane/handoff_rings.h"

namespace gw::cp {

struct InfoSources {
  const config::Config* cfg = nullptr;
  std::string config_path;
  std::string config_sha256;  // the config file as read at start
  std::uint32_t started_unix_s = 0;
  std::string driver;  // the port's PMD
  std::size_t workers = 0;
  std::string keyring_source;        // cluster.keys, or the state file the keyring came from
  const EngineHost* host = nullptr;  // null: membership disabled
  const dp::SnapshotExchange* snapshots = nullptr;
  const dp::HandoffRings* rings = nullptr;
  const rte_ring* tx_ring = nullptr;
};

// A JSON object's text.
std::string info_json(const InfoSources& s);

// The suite as cluster.suite spells it.
const char* suite_text(crypto::Suite s);

}  // namespace gw::cp
