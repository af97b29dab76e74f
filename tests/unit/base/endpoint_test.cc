// base/endpoint.h: inline address bytes, and the one parser of addresses an
// operator types (config seeds and addresses, the control API's join).
#include "base/endpoint.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gw::base {
namespace {

// The inline address bytes behave as the std::vector<std::uint8_t> they
// replace: same equality, same order (byte by byte, then the shorter first),
// capped at 16 bytes.
TEST(IpBytes, OrdersAndComparesLikeAVector) {
  const std::vector<std::vector<std::uint8_t>> cases = {
      {}, {10}, {10, 0, 0, 1}, {10, 0, 0, 2}, {10, 0, 1}, {9, 255, 255, 255}, {10, 0, 0, 1, 0}};
  for (const auto& a : cases) {
    for (const auto& b : cases) {
      IpBytes x, y;
      x.assign(a.begin(), a.end());
      y.assign(b.begin(), b.end());
      EXPECT_EQ(x == y, a == b);
      EXPECT_EQ(x < y, a < b);
      EXPECT_EQ(x.size(), a.size());
    }
  }
  const std::vector<std::uint8_t> long_input(40, 7);
  IpBytes capped;
  capped.assign(long_input.begin(), long_input.end());
  EXPECT_EQ(capped.size(), IpBytes::kMax);
  capped.resize(4);
  EXPECT_EQ(capped, (IpBytes{7, 7, 7, 7}));
  capped.resize(6);
  EXPECT_EQ(capped, (IpBytes{7, 7, 7, 7, 0, 0}));
}

TEST(ParseIp, TakesIpv4AndIpv6LiteralsOnly) {
  EXPECT_EQ(parse_ip("10.0.0.2"), (IpBytes{10, 0, 0, 2}));
  const std::optional<IpBytes> v6 = parse_ip("fd00::2");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->size(), 16u);
  EXPECT_EQ((*v6)[0], 0xfd);
  EXPECT_EQ((*v6)[15], 2);
  EXPECT_EQ(parse_ip("::ffff:10.0.0.2")->size(), 16u);
  for (const char* bad : {"", "host", "10.0.0", "10.0.0.256", "10.0.0.1 ", " 10.0.0.1", "fd00::2::1", "[fd00::2]"}) {
    EXPECT_FALSE(parse_ip(bad)) << bad;
  }
  // inet_pton would stop at the NUL and accept the address before it.
  EXPECT_FALSE(parse_ip(std::string("10.0.0.1\0junk", 13)));
}

TEST(ParseEndpoint, IpColonPortOrBracketedIpv6) {
  ParsedEndpoint p = parse_endpoint("10.0.0.2:7946");
  EXPECT_EQ(p.error, EndpointError::kNone);
  EXPECT_EQ(p.addr, (Address{{10, 0, 0, 2}, 7946}));
  EXPECT_EQ(p.host, "10.0.0.2");
  p = parse_endpoint("[fd00::2]:65535");
  EXPECT_EQ(p.error, EndpointError::kNone);
  EXPECT_EQ(p.addr, (Address{*parse_ip("fd00::2"), 65535}));
  EXPECT_EQ(p.host, "fd00::2");
}

TEST(ParseEndpoint, SaysWhatIsWrong) {
  EXPECT_EQ(parse_endpoint("10.0.0.2").error, EndpointError::kForm);
  EXPECT_EQ(parse_endpoint("fd00::2:7946").error, EndpointError::kForm);  // IPv6 needs brackets
  EXPECT_EQ(parse_endpoint("").error, EndpointError::kForm);
  EXPECT_EQ(parse_endpoint("[fd00::2]7946").error, EndpointError::kBrackets);
  EXPECT_EQ(parse_endpoint("[fd00::2]:").error, EndpointError::kPort);
  EXPECT_EQ(parse_endpoint("[fd00::2").error, EndpointError::kBrackets);
  EXPECT_EQ(parse_endpoint("host:7946").error, EndpointError::kIp);
  EXPECT_EQ(parse_endpoint(":7946").error, EndpointError::kIp);
  const ParsedEndpoint bad_ip = parse_endpoint("[host]:7946");
  EXPECT_EQ(bad_ip.error, EndpointError::kIp);
  EXPECT_EQ(bad_ip.host, "host");
  for (const char* port : {"0", "65536", "", "79x6", "-1", "+80", "000007946"}) {
    const std::string text = std::string("10.0.0.2:") + port;
    const ParsedEndpoint p = parse_endpoint(text);
    EXPECT_EQ(p.error, EndpointError::kPort) << port;
    EXPECT_EQ(p.port, port);
  }
  EXPECT_EQ(parse_endpoint("10.0.0.2:00080").addr.port, 80);
  EXPECT_EQ(parse_endpoint(std::string("10.0.0.2\0:80", 12)).error, EndpointError::kIp);
}

TEST(IpText, DottedQuadOrUncompressedHexGroups) {
  const IpBytes v4{192, 168, 1, 20};
  EXPECT_EQ(ip_text(std::span(v4.data(), v4.size())), "192.168.1.20");
  const IpBytes v6 = *parse_ip("fd00::2");
  EXPECT_EQ(ip_text(std::span(v6.data(), v6.size())), "fd00:0:0:0:0:0:0:2");
  EXPECT_EQ(ip_text({}), "");
}

}  // namespace
}  // namespace gw::base
