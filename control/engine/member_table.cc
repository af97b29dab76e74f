#include "control/engine/member_table.h"

#include <algorithm>

#include "control/engine/rng.h"

namespace gw::cp::engine {
namespace {
bool is_live(MemberStatus s) { return s == MemberStatus::kAlive || s == MemberStatus::kSuspect; }

// Expiry order: time, then name.
bool expiry_before(const std::pair<std::uint64_t, std::uint32_t>& a, const std::pair<std::uint64_t, std::uint32_t>& b) {
  if (a.first != b.first) return a.first < b.first;
  return identities().names_less(a.second, b.second);
}
}  // namespace

namespace {
// A view member's share of a digest: splitmix64 over its name's hash and its
// incarnation.
std::uint64_t digest_term(std::uint64_t name_hash, std::uint64_t incarnation) {
  std::uint64_t x = name_hash + 0x9e3779b97f4a7c15ULL * incarnation;
  return Rng::splitmix64(x);
}
}  // namespace

std::uint64_t MemberTable::view_digest() const {
  std::uint64_t d = 0;
  for (std::size_t i = 0; i < view_.size(); ++i) {
    prefetch_ahead(view_, i, view_.size());
    const std::uint32_t id = view_[i];
    const Member& m = at_id(id);
    d ^= digest_term(identities().name_hash(id), m.incarnation);
  }
  return d != 0 ? d : 1;
}

std::size_t MemberTable::bucket_of(std::uint64_t name_hash, std::size_t n) {
  // Mixed again (not the digest term's mix): FNV-1a's low bits are weak.
  std::uint64_t x = name_hash ^ 0x6a09e667f3bcc909ULL;
  return static_cast<std::size_t>(Rng::splitmix64(x) % n);
}

std::vector<std::uint32_t> MemberTable::bucket_digests(std::size_t n) const {
  std::vector<std::uint32_t> out;
  bucket_digests(n, out);
  return out;
}

void MemberTable::bucket_digests(std::size_t n, std::vector<std::uint32_t>& out) const {
  out.assign(n, 0);
  if (n == 0) return;
  for (std::size_t i = 0; i < view_.size(); ++i) {
    prefetch_ahead(view_, i, view_.size());
    const std::uint32_t id = view_[i];
    const Member& m = at_id(id);
    const std::uint64_t h = identities().name_hash(id);
    const std::uint64_t t = digest_term(h, m.incarnation);
    out[bucket_of(h, n)] ^= static_cast<std::uint32_t>(t ^ (t >> 32));
  }
}

void MemberTable::trace(std::uint64_t h, std::uint64_t incarnation, bool overwrite, std::uint64_t now_ns) {
  auto [it, fresh] = graveyard_.try_emplace(h, Trace{incarnation, now_ns});
  if (fresh) {
    graveyard_order_.emplace_back(h, now_ns);
  } else if (overwrite) {
    // A member that came back and died again: a new trace (its old place in
    // the order is skipped when reached).
    it->second = Trace{incarnation, now_ns};
    graveyard_order_.emplace_back(h, now_ns);
  } else if (incarnation > it->second.incarnation) {
    // Hearsay about one we hold no entry for: the higher incarnation, but
    // not a longer life.
    it->second.incarnation = incarnation;
  }
  // Bounded: the oldest trace goes first. (A trace is removed otherwise only
  // by its TTL: a member back with a newer incarnation passes it anyway, and
  // a later death overwrites it in place.)
  while (graveyard_.size() > graveyard_capacity_ && !graveyard_order_.empty()) {
    const auto [oh, at] = graveyard_order_.front();
    graveyard_order_.pop_front();
    const auto o = graveyard_.find(oh);
    if (o == graveyard_.end() || o->second.laid_ns != at) continue;  // laid again since
    graveyard_.erase(o);
    ++graveyard_evictions_;
  }
}

void MemberTable::expire_traces(std::uint64_t now_ns) {
  if (graveyard_ttl_ns_ == 0) return;
  while (!graveyard_order_.empty() && graveyard_order_.front().second + graveyard_ttl_ns_ <= now_ns) {
    const auto [h, at] = graveyard_order_.front();
    graveyard_order_.pop_front();
    const auto o = graveyard_.find(h);
    if (o == graveyard_.end() || o->second.laid_ns != at) continue;
    graveyard_.erase(o);
    ++graveyard_expired_;
  }
}

void MemberTable::bury(std::string_view name, std::uint64_t incarnation, std::uint64_t now_ns) {
  trace(identities().index_hash(name), incarnation, false, now_ns);
}

std::optional<std::uint64_t> MemberTable::buried(std::string_view name) const {
  if (graveyard_.empty()) return std::nullopt;
  auto it = graveyard_.find(identities().index_hash(name));
  if (it == graveyard_.end()) return std::nullopt;
  return it->second.incarnation;
}

std::size_t MemberTable::lower_bound(const std::vector<std::uint32_t>& list, std::string_view name) const {
  const IdentityPool& pool = identities();
  const std::uint64_t key = IdentityPool::order_key(name);
  const auto it = std::lower_bound(list.begin(), list.end(), name,
                                   [&](std::uint32_t id, std::string_view n) { return pool.name_less(id, key, n); });
  return static_cast<std::size_t>(it - list.begin());
}

std::size_t MemberTable::view_lower_bound(std::string_view name) const { return lower_bound(view_, name); }

void MemberTable::list_add(std::vector<std::uint32_t>& list, std::uint32_t name_id) {
  const std::size_t pos = lower_bound(list, identities().name(name_id));
  list.insert(list.begin() + static_cast<std::ptrdiff_t>(pos), name_id);
}

void MemberTable::list_remove(std::vector<std::uint32_t>& list, const Member& m) {
  const std::size_t pos = lower_bound(list, m.name.str());
  if (pos < list.size() && list[pos] == m.name.id()) list.erase(list.begin() + static_cast<std::ptrdiff_t>(pos));
}

Member* MemberTable::insert(Member m) {
  // Bounded table: refuse rather than grow (a join storm must not cost memory).
  if (full() || m.name.empty() || find(m.name) != nullptr) return nullptr;
  // New entries start live; tombstones only arise through set_status (with a TTL).
  m.status = MemberStatus::kAlive;
  m.live_since_ns = m.state_change_ns;
  if (m.probation)
    ++probation_;
  else
    ++live_;
  ++version_;
  Member& e = entries_.put(std::move(m));
  list_add(in_view(e) ? view_ : rest_, e.name.id());
  return &e;
}

void MemberTable::erase(Member& m) {
  list_remove(in_view(m) ? view_ : rest_, m);
  entries_.remove(m.name.id());
  ++version_;
}

void MemberTable::promote(Member& m) {
  if (!m.probation) return;
  const bool was_in_view = in_view(m);
  m.probation = false;
  --probation_;
  if (is_live(m.status)) ++live_;
  move_list(m, was_in_view);
  ++version_;
}

void MemberTable::move_list(const Member& m, bool was_in_view) {
  const bool now_in_view = in_view(m);
  if (was_in_view == now_in_view) return;
  // Removed by name from the old list (which compares names only), then added.
  list_remove(was_in_view ? view_ : rest_, m);
  list_add(now_in_view ? view_ : rest_, m.name.id());
}

void MemberTable::forget_probationer(std::string_view name) {
  Member* m = find(name);
  if (m == nullptr || !m->probation) return;
  --probation_;
  erase(*m);
}

void MemberTable::unqueue_expiry(const Member& m) {
  const std::pair<std::uint64_t, std::uint32_t> key{expires_ns(m), m.name.id()};
  auto it = std::lower_bound(expiry_.begin(), expiry_.end(), key, expiry_before);
  if (it != expiry_.end() && *it == key) expiry_.erase(it);
}

void MemberTable::set_status(Member& m, MemberStatus status, std::uint64_t now_ns) {
  if (m.status == status) return;
  if (is_live(m.status) != is_live(status)) ++version_;
  const bool was_in_view = in_view(m);
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
  // The expiry key is computed from the old state_change_ns: unqueue first.
  if (m.is_tombstone()) unqueue_expiry(m);
  m.state_change_ns = now_ns;
  m.status = status;
  move_list(m, was_in_view);
  if (m.is_tombstone()) {
    const std::pair<std::uint64_t, std::uint32_t> key{expires_ns(m), m.name.id()};
    // Nearly always the latest (time only moves on): appended.
    if (expiry_.empty() || expiry_before(expiry_.back(), key))
      expiry_.push_back(key);
    else
      expiry_.insert(std::upper_bound(expiry_.begin(), expiry_.end(), key, expiry_before), key);
  }
}

std::size_t MemberTable::expire_tombstones(std::uint64_t now_ns) {
  expire_traces(now_ns);
  std::size_t removed = 0;
  while (!expiry_.empty() && expiry_.front().first <= now_ns) {
    const std::uint32_t id = expiry_.front().second;
    expiry_.pop_front();
    if (Member* m = find_id(id)) {
      trace(identities().name_index_hash(id), m->incarnation, true, now_ns);
      erase(*m);
    }
    ++removed;
  }
  return removed;
}

std::size_t MemberTable::bytes() const {
  return entries_.bytes() + view_.capacity() * 4 + rest_.capacity() * 4 + expiry_.size() * 16 + graveyard_.size() * 48 +
         graveyard_.bucket_count() * 8 + graveyard_order_.size() * 16;
}

}  // namespace gw::cp::engine
