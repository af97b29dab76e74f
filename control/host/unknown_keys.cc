#include "control/host/unknown_keys.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <set>

namespace gw::cp {
namespace {

std::string key_id_hex(std::uint32_t id) {
  char b[9];
  std::snprintf(b, sizeof b, "%08x", id);
  return b;
}

std::string id_list(const std::vector<std::uint32_t>& ids) {
  std::string out;
  for (std::uint32_t id : ids) out += (out.empty() ? "" : " ") + key_id_hex(id);
  return "[" + out + "]";
}

constexpr const char* kDoc = "docs/operations.md, \"A member that missed a key rotation\"";

}  // namespace

std::string endpoint_text(const dp::Endpoint& e) {
  char ip[INET6_ADDRSTRLEN] = "?";
  if (e.ip_len == 4) {
    ::inet_ntop(AF_INET, e.ip.data(), ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(e.port);
  }
  if (e.ip_len == 16) ::inet_ntop(AF_INET6, e.ip.data(), ip, sizeof ip);
  return "[" + std::string(ip) + "]:" + std::to_string(e.port);
}

void UnknownKeyWatch::add(const dp::UnknownKeySighting& s, std::uint64_t now_ns, const Resolve& who) {
  for (Entry& e : entries_) {
    if (e.s == s) {
      e.last_ns = now_ns;
      return;
    }
  }
  // Bounded: a flood of spoofed sources replaces the least recently heard.
  if (entries_.size() >= kMaxSenders) {
    const auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                         [](const Entry& a, const Entry& b) { return a.last_ns < b.last_ns; });
    entries_.erase(oldest);
  }
  entries_.push_back({s, who ? who(s.from) : Who{}, now_ns, now_ns});
}

std::vector<std::string> UnknownKeyWatch::report(std::uint64_t now_ns, const Resolve& who,
                                                 const std::vector<std::uint32_t>& ours, std::uint64_t drops_total,
                                                 bool alone) {
  std::vector<std::string> lines;
  if (now_ns < next_report_ns_) return lines;
  // Heard since the last report (all of it before the first).
  std::vector<Entry*> fresh;
  for (Entry& e : entries_) {
    if (!reported_ || e.last_ns > last_report_ns_) fresh.push_back(&e);
  }
  if (fresh.empty()) return lines;
  // Names change (a member joins our view, or dies): asked again now.
  if (who) {
    for (Entry* e : fresh) e->who = who(e->s.from);
  }
  std::sort(fresh.begin(), fresh.end(), [](const Entry* a, const Entry* b) { return a->first_ns < b->first_ns; });

  const std::string keyring = id_list(ours);
  std::size_t member_lines = 0;
  std::size_t members_unnamed = 0;
  std::vector<const Entry*> others;
  for (const Entry* e : fresh) {
    if (e->who.kind != Kind::kMember) {
      others.push_back(e);
      continue;
    }
    if (member_lines == kMaxNamed) {
      ++members_unnamed;
      continue;
    }
    ++member_lines;
    lines.push_back("member " + e->who.name + " (" + endpoint_text(e->s.from) + ", " + e->who.state +
                    ") sends under key id " + key_id_hex(e->s.key_id) + ", which this node's keyring " + keyring +
                    " lacks: it or this node missed a key rotation (" + kDoc + ")");
  }
  if (members_unnamed > 0) {
    lines.push_back("... and " + std::to_string(members_unnamed) + " more member(s) send under keys this node lacks");
  }
  if (!others.empty()) {
    std::set<std::uint32_t> ids;
    std::string from;
    std::size_t listed = 0;
    std::set<std::string> seen;
    for (const Entry* e : others) {
      ids.insert(e->s.key_id);
      const std::string where = endpoint_text(e->s.from) + (e->who.kind == Kind::kSeed ? " (seed)" : "");
      if (!seen.insert(where).second) continue;
      if (listed < kMaxNamed) {
        from += (from.empty() ? "" : ", ") + where;
        ++listed;
      }
    }
    if (seen.size() > listed) from += " and " + std::to_string(seen.size() - listed) + " more";
    std::string id_text;
    for (std::uint32_t id : ids) id_text += (id_text.empty() ? "" : " ") + key_id_hex(id);
    lines.push_back("hears datagrams of this cluster claiming key id(s) " + id_text + " from " + from +
                    ", which this node's keyring " + keyring + " lacks (" +
                    std::to_string(drops_total - drops_at_report_) + " drop_unknown_key since " +
                    (reported_ ? "the last report" : "the start") + ")" + (alone ? ", while alone" : "") +
                    ": if this node was down during a key rotation, install the cluster's current key here (" + kDoc +
                    ")");
  }
  reported_ = true;
  last_report_ns_ = now_ns;
  next_report_ns_ = now_ns + kLogEveryNs;
  drops_at_report_ = drops_total;
  return lines;
}

UnknownKeyWatch::Senders UnknownKeyWatch::senders(std::uint64_t now_ns) const {
  // Distinct sources (one source under two key ids counts once).
  std::set<std::pair<int, std::string>> distinct;
  for (const Entry& e : entries_) {
    if (now_ns > e.last_ns && now_ns - e.last_ns > kWindowNs) continue;
    distinct.emplace(static_cast<int>(e.who.kind), endpoint_text(e.s.from));
  }
  Senders out;
  for (const auto& [kind, where] : distinct) {
    switch (static_cast<Kind>(kind)) {
      case Kind::kMember:
        ++out.member;
        break;
      case Kind::kSeed:
        ++out.seed;
        break;
      case Kind::kOther:
        ++out.other;
        break;
    }
  }
  return out;
}

}  // namespace gw::cp
