#include "dataplane/ladder.h"

#include <algorithm>
#include <optional>

#include "base/endpoint.h"

namespace gw::dp {

bool parse_endpoint(const char* address, std::uint16_t port, LocalEndpoint* out) noexcept {
  LocalEndpoint ep;
  ep.port = port;
  const std::optional<base::IpBytes> ip = base::parse_ip(address);
  if (!ip) return false;
  if (ip->size() == 4) {
    std::copy(ip->begin(), ip->end(), ep.ipv4.begin());
    ep.receiver = crypto::receiver_of(ep.ipv4.data(), ep.ipv4.size(), port);
    ep.ipv4_bcast = ep.ipv4;
    ep.ipv4_net = ep.ipv4;
    *out = ep;
    return true;
  }
  std::copy(ip->begin(), ip->end(), ep.ipv6_addr.begin());
  ep.ipv6 = true;
  ep.receiver = crypto::receiver_of(ep.ipv6_addr.data(), ep.ipv6_addr.size(), port);
  *out = ep;
  return true;
}

void set_ipv4_subnet(LocalEndpoint* ep, unsigned prefix_len) noexcept {
  ep->ipv4_bcast = ep->ipv4;
  ep->ipv4_net = ep->ipv4;
  // Unknown, or /31 and /32 (RFC 3021): no subnet broadcast to refuse.
  if (ep->ipv6 || prefix_len == 0 || prefix_len > 30) return;
  std::uint32_t a = 0;
  for (std::uint8_t b : ep->ipv4) a = (a << 8) | b;
  const std::uint32_t host_mask = 0xFFFF'FFFFu >> prefix_len;
  const std::uint32_t bcast = a | host_mask;
  const std::uint32_t net = a & ~host_mask;
  for (int i = 0; i < 4; ++i) {
    ep->ipv4_bcast[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(bcast >> (24 - 8 * i));
    ep->ipv4_net[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(net >> (24 - 8 * i));
  }
}

LadderResult run_ladder(const LadderConfig& cfg, std::uint8_t* frame, std::uint32_t len) noexcept {
  LadderState none;
  return run_ladder(cfg, none, frame, len);
}

}  // namespace gw::dp
