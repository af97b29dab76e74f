#include "dataplane/setup.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "base/endpoint.h"
#include "dataplane/api/config_check.h"

namespace gw::dp {

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

std::unique_ptr<Classifier> make_classifier(const config::Config& cfg) {
  if (!cfg.classifier.enabled) return nullptr;
  std::vector<ClassifierRule> rules;
  for (const auto& r : cfg.classifier.rules) rules.push_back({r.name, r.pattern});
  return std::make_unique<Classifier>(rules, cfg.classifier.builtins, cfg.classifier.scan_bytes,
                                      cfg.classifier.compile_budget_ms);
}

void check_config(const config::Config& cfg) {
  (void)ladder_config(cfg);
  (void)make_classifier(cfg);
}

void setup_neighbors(Neighbors& n, const config::Config& cfg) {
  n.allow_hints(cfg.dataplane.arp_hints);
  for (const config::DataplaneConfig::Neighbor& nb : cfg.dataplane.neighbors) {
    const std::optional<base::IpBytes> ip = base::parse_ip(nb.address);
    if (!ip) throw std::runtime_error("dataplane.neighbors: '" + nb.address + "' is not an IPv4 or IPv6 address");
    Endpoint e;
    std::copy(ip->begin(), ip->end(), e.ip.begin());
    e.ip_len = static_cast<std::uint8_t>(ip->size());
    if (!n.pin(e, nb.mac.data())) {
      throw std::runtime_error("dataplane.neighbors: cannot pin '" + nb.address + "' (table full or not unicast)");
    }
  }
}

}  // namespace gw::dp
