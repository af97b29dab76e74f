#include "base/endpoint.h"

#include <arpa/inet.h>

#include <cstdio>

namespace gw::base {

std::optional<IpBytes> parse_ip(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) return std::nullopt;
  const std::string s(text);
  std::array<std::uint8_t, IpBytes::kMax> buf{};
  IpBytes ip;
  if (::inet_pton(AF_INET, s.c_str(), buf.data()) == 1) {
    ip.assign(buf.begin(), buf.begin() + 4);
    return ip;
  }
  if (::inet_pton(AF_INET6, s.c_str(), buf.data()) == 1) {
    ip.assign(buf.begin(), buf.end());
    return ip;
  }
  return std::nullopt;
}

ParsedEndpoint parse_endpoint(std::string_view text) {
  ParsedEndpoint out;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      out.error = EndpointError::kBrackets;
      return out;
    }
    out.host = text.substr(1, close - 1);
    out.port = text.substr(close + 2);
  } else {
    // One colon only: an IPv6 address needs its brackets.
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      out.error = EndpointError::kForm;
      return out;
    }
    out.host = text.substr(0, colon);
    out.port = text.substr(colon + 1);
  }
  const std::optional<IpBytes> ip = parse_ip(out.host);
  if (!ip) {
    out.error = EndpointError::kIp;
    return out;
  }
  unsigned port = 0;
  bool digits = !out.port.empty() && out.port.size() <= 5;
  for (char c : out.port) {
    if (c < '0' || c > '9') {
      digits = false;
      break;
    }
    port = port * 10 + static_cast<unsigned>(c - '0');
  }
  if (!digits || port < 1 || port > 65535) {
    out.error = EndpointError::kPort;
    return out;
  }
  out.addr = Address{*ip, static_cast<std::uint16_t>(port)};
  return out;
}

std::string ip_text(std::span<const std::uint8_t> ip) {
  char buf[64] = "";
  if (ip.size() == 4) {
    std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", ip[0], ip[1], ip[2], ip[3]);
    return buf;
  }
  std::string s;
  for (std::size_t i = 0; i + 1 < ip.size(); i += 2) {
    std::snprintf(buf, sizeof buf, "%s%x", i == 0 ? "" : ":", (ip[i] << 8) | ip[i + 1]);
    s += buf;
  }
  return s;
}

}  // namespace gw::base
