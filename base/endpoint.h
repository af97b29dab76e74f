// Endpoints: an IP address and a UDP port, held inline, and their text forms
// ("10.0.0.2", "[fd00::2]:7946"). Shared vocabulary (base/): the engine's
// messages carry them (engine::Address), the config's seeds are them, and
// every parser of an address typed by an operator (config, control API) is
// here, so each accepts exactly the same spellings.
#pragma once

#include <algorithm>
#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gw::base {

// An IP address's bytes, held inline (up to 16; the codec lets only 0, 4 or 16
// in): an Address copies and compares without touching the heap, and messages
// carry one each (issue 16: no allocation per message). Reads like a
// std::vector<std::uint8_t>, and orders like one (byte by byte, then the
// shorter first).
class IpBytes {
 public:
  static constexpr std::size_t kMax = 16;
  IpBytes() = default;
  IpBytes(std::initializer_list<std::uint8_t> bytes) { assign(bytes.begin(), bytes.end()); }
  // Keeps at most kMax bytes.
  template <typename It>
  void assign(It first, It last) {
    len_ = 0;
    for (; first != last && len_ < kMax; ++first) b_[len_++] = static_cast<std::uint8_t>(*first);
  }
  void resize(std::size_t n) {
    n = std::min(n, kMax);
    for (std::size_t i = len_; i < n; ++i) b_[i] = 0;
    len_ = static_cast<std::uint8_t>(n);
  }
  void clear() { len_ = 0; }
  std::size_t size() const { return len_; }
  bool empty() const { return len_ == 0; }
  std::uint8_t* data() { return b_.data(); }
  const std::uint8_t* data() const { return b_.data(); }
  std::uint8_t* begin() { return b_.data(); }
  std::uint8_t* end() { return b_.data() + len_; }
  const std::uint8_t* begin() const { return b_.data(); }
  const std::uint8_t* end() const { return b_.data() + len_; }
  std::uint8_t& operator[](std::size_t i) { return b_[i]; }
  std::uint8_t operator[](std::size_t i) const { return b_[i]; }
  bool operator==(const IpBytes& o) const { return len_ == o.len_ && std::equal(begin(), end(), o.begin()); }
  std::strong_ordering operator<=>(const IpBytes& o) const {
    return std::lexicographical_compare_three_way(begin(), end(), o.begin(), o.end());
  }

 private:
  std::array<std::uint8_t, kMax> b_{};
  std::uint8_t len_ = 0;
};

// A member's gossip endpoint. `ip` is 4 bytes (IPv4) or 16 bytes (IPv6); an empty
// `ip` means "not given" (then the transport source address is used).
struct Address {
  IpBytes ip;
  std::uint16_t port = 0;

  bool empty() const { return ip.empty(); }
  auto operator<=>(const Address&) const = default;
  bool operator==(const Address&) const = default;
};

// An IPv4 (dotted quad) or IPv6 literal: 4 or 16 bytes. Host names are not
// resolved; text with a NUL in it is refused (inet_pton would stop there).
std::optional<IpBytes> parse_ip(std::string_view text);

// Why parse_endpoint refused a text.
enum class EndpointError : std::uint8_t {
  kNone,
  kForm,      // not "IP:PORT", or an IPv6 address without brackets
  kBrackets,  // "[" without "]:PORT"
  kIp,        // the host part is not an IP literal
  kPort,      // the port is not 1..65535
};

struct ParsedEndpoint {
  Address addr;           // set when error is kNone
  std::string_view host;  // the host part as written (a view into the text; brackets removed)
  std::string_view port;  // the port part as written
  EndpointError error = EndpointError::kNone;
};

// "10.0.0.2:7946" or "[fd00::2]:7946" (IPv6 in brackets), port 1..65535.
ParsedEndpoint parse_endpoint(std::string_view text);

// Dotted quad for 4 bytes; for 16, eight hex groups without zero compression
// (the stats document's form). Other lengths: the groups of the bytes there are.
std::string ip_text(std::span<const std::uint8_t> ip);

}  // namespace gw::base
