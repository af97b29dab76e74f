#include "dataplane/setup.h"

#include "config/loader.h"

#include <arpa/inet.h>

namespace gw::dp {

crypto::Suite resolve_suite(const config::Config& cfg) {
  switch (cfg.cluster.suite) {
    case config::SuiteChoice::kAes256Gcm:
      if (!crypto::aes256gcm_available()) {
        throw std::runtime_error(
            "cluster.suite: aes256gcm needs AES-NI and PCLMUL, which this CPU lacks; the whole cluster must use chacha20poly1305");
      }
      return crypto::Suite::kAes256Gcm;
    case config::SuiteChoice::kChaCha20Poly1305:
      return crypto::Suite::kChaCha20Poly1305;
    case config::SuiteChoice::kAuto:
      break;
  }
  return crypto::aes256gcm_available() ? crypto::Suite::kAes256Gcm : crypto::Suite::kChaCha20Poly1305;
}

crypto::Keyring load_keyring(const config::Config& cfg, std::map<std::uint32_t, crypto::KeyBytes>* material) {
  const crypto::Suite suite = resolve_suite(cfg);
  crypto::Keyring ring;
  for (const config::KeyConfig& k : cfg.cluster.keys) {
    const std::string path = config::resolve_path(cfg, k.file);
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

LadderConfig ladder_config(const config::Config& cfg) {
  LadderConfig lc;
  if (!parse_endpoint(cfg.node.address.c_str(), cfg.node.port, &lc.local)) {
    throw std::runtime_error("node.address: '" + cfg.node.address + "' is not an IPv4 or IPv6 address");
  }
  set_ipv4_subnet(&lc.local, cfg.node.prefix_len);
  lc.cluster_id = crypto::derive_cluster_id(cfg.cluster.name);
  lc.max_payload_bytes = cfg.limits.max_payload_bytes;
  lc.replay_window_s = cfg.limits.replay_window_s;
  return lc;
}

void setup_neighbors(Neighbors& n, const config::Config& cfg) {
  n.allow_hints(cfg.dataplane.arp_hints);
  for (const config::DataplaneConfig::Neighbor& nb : cfg.dataplane.neighbors) {
    Endpoint e;
    if (::inet_pton(AF_INET, nb.address.c_str(), e.ip.data()) == 1) {
      e.ip_len = 4;
    } else if (::inet_pton(AF_INET6, nb.address.c_str(), e.ip.data()) == 1) {
      e.ip_len = 16;
    } else {
      throw std::runtime_error("dataplane.neighbors: '" + nb.address + "' is not an IPv4 or IPv6 address");
    }
    if (!n.pin(e, nb.mac.data())) {
      throw std::runtime_error("dataplane.neighbors: cannot pin '" + nb.address + "' (table full or not unicast)");
    }
  }
}

}  // namespace gw::dp
