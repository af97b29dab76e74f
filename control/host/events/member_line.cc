#include "control/host/events/member_line.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <array>
#include <span>

namespace gw::cp::events {

namespace {

void append_line(std::string& out, std::string_view name, const engine::Address& addr, const char* state,
                 std::uint64_t incarnation, std::span<const engine::Tag> tags) {
  append_escaped(out, name);
  out += '\t';
  const std::string text = address_text(addr);
  // Never an empty field but the last: `read` with IFS=TAB would merge it.
  out += text.empty() ? std::string("-") : text;
  out += '\t';
  out += std::to_string(addr.port);
  out += '\t';
  out += state;
  out += '\t';
  out += std::to_string(incarnation);
  out += '\t';
  bool first = true;
  for (const engine::Tag& t : tags) {
    if (!first) out += ',';
    first = false;
    append_escaped(out, t.key);
    out += '=';
    append_escaped(out, t.value);
  }
  out += '\n';
}

}  // namespace

const char* event_name(engine::EventKind kind) {
  switch (kind) {
    case engine::EventKind::kJoin:
      return "member-join";
    case engine::EventKind::kLeave:
      return "member-leave";
    case engine::EventKind::kFailed:
      return "member-failed";
    case engine::EventKind::kUpdate:
      return "member-update";
  }
  return "member-unknown";
}

engine::MemberStatus implied_state(engine::EventKind kind) {
  switch (kind) {
    case engine::EventKind::kLeave:
      return engine::MemberStatus::kLeft;
    case engine::EventKind::kFailed:
      return engine::MemberStatus::kDead;
    case engine::EventKind::kJoin:
    case engine::EventKind::kUpdate:
      break;
  }
  return engine::MemberStatus::kAlive;
}

std::string address_text(const engine::Address& addr) {
  std::array<char, INET6_ADDRSTRLEN> buf{};
  if (addr.ip.size() == 4) {
    if (inet_ntop(AF_INET, addr.ip.data(), buf.data(), buf.size()) != nullptr) return buf.data();
  } else if (addr.ip.size() == 16) {
    if (inet_ntop(AF_INET6, addr.ip.data(), buf.data(), buf.size()) != nullptr) return buf.data();
  }
  return {};
}

void append_escaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    const bool special = u <= 0x20 || u >= 0x7f || c == '%' || c == ',' || c == '=' || c == '\\';
    if (!special) {
      out += c;
      continue;
    }
    out += '%';
    out += kHex[u >> 4];
    out += kHex[u & 0xf];
  }
}

std::string member_line(const engine::Member& m) {
  std::string out;
  append_line(out, m.name.str(), m.addr(), engine::status_name(m.status), m.incarnation, m.tags());
  return out;
}

std::string member_line(const engine::MemberEvent& e) {
  std::string out;
  append_line(out, e.node, e.addr, engine::status_name(implied_state(e.kind)), e.incarnation, e.tags);
  return out;
}

}  // namespace gw::cp::events
