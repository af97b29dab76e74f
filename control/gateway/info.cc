#include "control/gateway/info.h"

#include <nlohmann/json.hpp>

#include <cstdio>

#include "base/clock.h"
#include "config/keys.h"
#include "control/version.h"
#include "crypto/aes_gcm.h"

namespace gw::cp {

const char* suite_text(crypto::Suite s) { return s == crypto::Suite::kAes256Gcm ? "aes256gcm" : "chacha20poly1305"; }

std::string info_json(const InfoSources& s) {
  const config::Config& cfg = *s.cfg;
  nlohmann::ordered_json j;
  j["version"] = GW_VERSION;
  j["commit"] = GW_COMMIT;
  j["node"] = cfg.node.name;
  j["cluster"] = cfg.cluster.name;
  j["address"] = cfg.node.address;
  j["port"] = cfg.node.port;
  j["config"] = s.config_path;
  j["config_sha256"] = s.config_sha256;
  j["started_unix"] = s.started_unix_s;
  j["uptime_s"] = base::unix_seconds() - s.started_unix_s;
  j["driver"] = s.driver;
  j["workers"] = s.workers;
  if (s.host != nullptr) {
    j["incarnation"] = s.host->engine().incarnation();
    j["live_members"] = s.host->engine().num_live();
    j["health_score"] = s.host->engine().health_score();
    j["joined"] = s.host->engine().joined();
  }
  const crypto::Keyring& ring = s.snapshots->current().keys;
  nlohmann::ordered_json keys = nlohmann::ordered_json::array();
  for (std::uint32_t id : ring.ids()) keys.push_back(crypto::key_id_text(id));
  j["keys"] = std::move(keys);
  if (ring.primary() != nullptr) {
    j["primary_key"] = crypto::key_id_text(ring.primary()->id());
  }
  j["keyring_source"] = s.keyring_source;
  j["suite"] = suite_text(config::resolve_suite(cfg));
  j["aead_aes256gcm"] = crypto::aes256gcm_impl_name();
  j["aead_chacha20poly1305"] = crypto::chacha20poly1305_impl_name();
  // Queue depths now: the hand-off rings per class (all workers), the
  // egress shaper per class, and the transmit ring.
  static constexpr const char* kClasses[] = {"urgent", "probe", "gossip", "bulk"};
  nlohmann::ordered_json rq, eq;
  for (std::size_t c = 0; c < crypto::kClassCount; ++c) {
    std::size_t depth = 0;
    for (std::size_t w = 0; w < s.workers; ++w) depth += s.rings->depth(w, static_cast<crypto::PriorityClass>(c));
    rq[kClasses[c]] = depth;
    if (s.host != nullptr) eq[kClasses[c]] = s.host->shaper().queued(static_cast<crypto::PriorityClass>(c));
  }
  j["queues"] = {{"handoff", rq}, {"egress", eq}, {"tx_ring", rte_ring_count(s.tx_ring)}};
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace gw::cp
