// DNS names as hosts files and DNS servers accept them (RFC 1123 host names):
// the config loader checks alias names with it, and the hosts file writer the
// names it makes from tag values that arrive from the network. Header-only,
// no dependencies.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gw::config {

inline constexpr std::size_t kDnsLabelMax = 63;
inline constexpr std::size_t kDnsNameMax = 253;

// Why `label` is not a DNS label (1..63 bytes of a-z A-Z 0-9 '-', '-' neither
// first nor last), or "" when it is one.
inline std::string dns_label_problem(std::string_view label) {
  if (label.empty()) return "an empty label";
  if (label.size() > kDnsLabelMax) return "a label of " + std::to_string(label.size()) + " bytes (at most 63)";
  for (std::size_t i = 0; i < label.size(); ++i) {
    const char c = label[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) {
      const auto u = static_cast<unsigned char>(c);
      std::string shown;
      if (u > 0x20 && u < 0x7f) {
        shown = std::string("'") + c + "'";
      } else {
        static constexpr char kHex[] = "0123456789ABCDEF";
        shown = std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
      }
      return shown + " at byte " + std::to_string(i) + " of a label (allowed: a-z A-Z 0-9 -)";
    }
  }
  if (label.front() == '-' || label.back() == '-') return "a label that starts or ends with '-'";
  return "";
}

// Why `name` is not a DNS name (labels joined by '.', no trailing dot, 253
// bytes at most), or "" when it is one.
inline std::string dns_name_problem(std::string_view name) {
  if (name.empty()) return "an empty name";
  if (name.size() > kDnsNameMax) return std::to_string(name.size()) + " bytes (at most 253)";
  std::size_t start = 0;
  for (;;) {
    const std::size_t dot = name.find('.', start);
    const std::string_view label = name.substr(start, dot == std::string_view::npos ? name.npos : dot - start);
    std::string why = dns_label_problem(label);
    if (!why.empty()) return why;
    if (dot == std::string_view::npos) return "";
    start = dot + 1;
  }
}

inline std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace gw::config
