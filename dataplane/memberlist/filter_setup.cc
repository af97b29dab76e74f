#include "dataplane/memberlist/filter_setup.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "config/loader.h"
#include "config/ml_keyring.h"

namespace gw::dp::ml {

std::optional<FilterConfig> make_filter_config(const config::Config& c, std::string* error) {
  const config::MemberlistConfig& m = c.memberlist;
  FilterConfig f;
  f.ports = m.ports;
  std::string why;
  std::optional<CidrSet> allow = CidrSet::parse(m.allow_cidrs, &why);
  if (!allow) {
    if (error != nullptr) *error = "memberlist.allow_cidrs" + why;
    return std::nullopt;
  }
  std::optional<CidrSet> plaintext = CidrSet::parse(m.allow_plaintext_cidrs, &why);
  if (!plaintext) {
    if (error != nullptr) *error = "memberlist.allow_plaintext_cidrs" + why;
    return std::nullopt;
  }
  f.allow = std::move(*allow);
  f.plaintext_allow = std::move(*plaintext);
  f.per_source = RateBudget{m.per_source_pps, m.per_source_burst};
  f.sources = m.sources;
  f.tcp_connections = RateBudget{m.tcp_connections_per_sec, m.tcp_connections_burst};
  f.egress_bytes_per_sec = m.egress_bytes_per_sec;
  f.egress_burst_bytes = m.egress_burst_bytes;
  f.label = m.label;
  f.inspect.max_inflated = m.max_inflated;
  f.inspect.max_name = m.max_name;
  f.inspect.max_probe_messages = m.max_probe_messages;
  f.inspect.agent_port = m.agent_udp_port;
  return f;
}

std::unique_ptr<Keyring> load_filter_keyring(const config::Config& c, std::string* error, std::string* warning) {
  if (warning != nullptr) warning->clear();
  std::vector<std::vector<std::uint8_t>> keys;
  if (!c.memberlist.keyring_file.empty()) {
    std::string why;
    std::optional<config::MlKeys> loaded =
        config::load_ml_keyring(config::resolve_path(c, c.memberlist.keyring_file), &why, warning);
    if (!loaded) {
      if (error != nullptr) *error = "memberlist.keyring_file: " + why;
      return nullptr;
    }
    keys = std::move(*loaded);
  }
  std::vector<std::span<const std::uint8_t>> spans(keys.begin(), keys.end());
  std::string why;
  std::unique_ptr<Keyring> ring = Keyring::make(spans, &why);
  for (std::vector<std::uint8_t>& k : keys) std::fill(k.begin(), k.end(), std::uint8_t{0});
  if (ring == nullptr && error != nullptr) *error = "memberlist.keyring_file: " + why;
  return ring;
}

}  // namespace gw::dp::ml
