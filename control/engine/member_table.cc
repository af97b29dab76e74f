#include "control/engine/member_table.h"

#include "control/engine/rng.h"

namespace gw::cp::engine {
namespace {
bool is_live(MemberStatus s) { return s == MemberStatus::kAlive || s == MemberStatus::kSuspect; }

// FNV-1a: a fixed function, so graveyard hits do not depend on the library.
std::uint64_t name_hash(const std::string& name) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}
}  // namespace

std::uint64_t MemberTable::view_digest() const {
  std::uint64_t d = 0;
  for (const auto& [name, m] : members_) {
    if (!is_live(m.status) || m.probation) continue;
    // splitmix64 over the name's hash and the incarnation.
    std::uint64_t x = name_hash(name) + 0x9e3779b97f4a7c15ULL * m.incarnation;
    d ^= Rng::splitmix64(x);
  }
  return d != 0 ? d : 1;
}

void MemberTable::trace(std::uint64_t h, std::uint64_t incarnation, bool overwrite) {
  auto [it, fresh] = graveyard_.try_emplace(h, incarnation);
  if (fresh) {
    graveyard_order_.push_back(h);
  } else if (overwrite || incarnation > it->second) {
    it->second = incarnation;
  }
  // Bounded: the oldest trace goes first. (A trace is never removed otherwise:
  // a member back with a newer incarnation passes it anyway, and a later death
  // overwrites it in place.)
  while (graveyard_.size() > graveyard_capacity_) {
    graveyard_.erase(graveyard_order_.front());
    graveyard_order_.pop_front();
    ++graveyard_evictions_;
  }
}

void MemberTable::bury(const std::string& name, std::uint64_t incarnation) {
  trace(name_hash(name), incarnation, false);
}

std::optional<std::uint64_t> MemberTable::buried(const std::string& name) const {
  auto it = graveyard_.find(name_hash(name));
  if (it == graveyard_.end()) return std::nullopt;
  return it->second;
}


Member* MemberTable::find(const std::string& name) {
  auto it = members_.find(name);
  return it == members_.end() ? nullptr : &it->second;
}

const Member* MemberTable::find(const std::string& name) const {
  auto it = members_.find(name);
  return it == members_.end() ? nullptr : &it->second;
}

Member* MemberTable::insert(Member m) {
  // Bounded table: refuse rather than grow (a join storm must not cost memory).
  if (full() || members_.count(m.name) != 0) return nullptr;
  // New entries start live; tombstones only arise through set_status (with a TTL).
  m.status = MemberStatus::kAlive;
  m.live_since_ns = m.state_change_ns;
  if (m.probation)
    ++probation_;
  else
    ++live_;
  ++version_;
  std::string key = m.name;
  return &members_.emplace(std::move(key), std::move(m)).first->second;
}

void MemberTable::promote(Member& m) {
  if (!m.probation) return;
  m.probation = false;
  --probation_;
  if (is_live(m.status)) ++live_;
  ++version_;
}

void MemberTable::forget_probationer(const std::string& name) {
  auto it = members_.find(name);
  if (it == members_.end() || !it->second.probation) return;
  --probation_;
  members_.erase(it);
  ++version_;
}

void MemberTable::set_status(Member& m, MemberStatus status, std::uint64_t now_ns,
                             std::uint64_t ttl_ns) {
  if (m.status == status) return;
  if (is_live(m.status) != is_live(status)) ++version_;
  // A probationer that dies is no longer one (it never joined the view).
  if (m.probation && !is_live(status)) {
    m.probation = false;
    --probation_;
  } else {
    if (is_live(m.status) && !is_live(status)) --live_;
  }
  if (!is_live(m.status) && is_live(status)) {
    ++live_;
    m.live_since_ns = now_ns;
  }
  m.state_change_ns = now_ns;
  if (m.is_tombstone()) expiry_.erase({m.expires_ns, m.name});
  m.status = status;
  if (m.is_tombstone()) {
    m.expires_ns = now_ns + ttl_ns;
    expiry_.emplace(m.expires_ns, m.name);
  }
}

std::vector<std::string> MemberTable::expire_tombstones(std::uint64_t now_ns) {
  std::vector<std::string> removed;
  while (!expiry_.empty() && expiry_.begin()->first <= now_ns) {
    const std::string name = expiry_.begin()->second;
    expiry_.erase(expiry_.begin());
    if (auto it = members_.find(name); it != members_.end()) {
      trace(name_hash(name), it->second.incarnation, true);
      members_.erase(it);
      ++version_;
    }
    removed.push_back(name);
  }
  return removed;
}

std::uint64_t MemberTable::next_expiry() const {
  return expiry_.empty() ? UINT64_MAX : expiry_.begin()->first;
}

}  // namespace gw::cp::engine
