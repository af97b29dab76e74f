#include "dataplane/ladder.h"

#include <arpa/inet.h>

namespace gw::dp {

bool parse_endpoint(const char* address, std::uint16_t port, LocalEndpoint* out) noexcept {
  LocalEndpoint ep;
  ep.port = port;
  if (::inet_pton(AF_INET, address, ep.ipv4.data()) == 1) {
    ep.receiver = crypto::receiver_of(ep.ipv4.data(), ep.ipv4.size(), port);
    *out = ep;
    return true;
  }
  if (::inet_pton(AF_INET6, address, ep.ipv6_addr.data()) == 1) {
    ep.ipv6 = true;
    ep.receiver = crypto::receiver_of(ep.ipv6_addr.data(), ep.ipv6_addr.size(), port);
    *out = ep;
    return true;
  }
  return false;
}

LadderResult run_ladder(const LadderConfig& cfg, std::uint8_t* frame, std::uint32_t len) noexcept {
  LadderState none;
  return run_ladder(cfg, none, frame, len);
}

}  // namespace gw::dp
