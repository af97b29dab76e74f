// The member table: one entry per known member (ourselves included), tombstones
// for Dead/Left members until their TTL, bounded by max_members. Ordered by name
// so every walk over it is deterministic.
//
// A tombstone whose TTL has passed leaves a compact trace, the graveyard: a
// 64-bit hash of the name and the incarnation it died at (16 bytes, where a
// tombstone holds the whole entry). Stale gossip about the member (an Alive at
// that incarnation or lower, still circulating in some peer's sync long after
// the death) is refused against the graveyard, so the dead stay dead however
// long the cleanup takes; a restarted member comes back with a higher
// incarnation and passes. Bounded (max_members traces by default): the oldest
// goes first, counted.
//
// Layout (issue 16): an entry is a fixed 48 bytes (sizeof(Member)): the name and
// the profile (address, tags, protocol version, build) are 4-byte handles into the
// process's identity pool (identity.h), shared by every engine that knows the
// member. An entry sits at its name's id: in page id / 64, place id % 64
// (IdPages; a page of 64 entries is allocated with its first entry and freed
// with its last), so a find is one read of the page's pointer (a few lines a
// table) and the entry itself, where a slot index read first cost a cache
// miss of its own at ten thousand tables. An array of name ids in name order
// (searched by the pool's 8-byte order keys) serves every ordered walk (sync
// windows, the probe ring). 52 bytes per entry in all where the ids a table
// holds are dense (every process's pool reuses freed ids first); a
// tombstone's expiry is its death plus the table's one TTL, not a field.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "control/engine/identity.h"
#include "control/engine/messages.h"

namespace gw::cp::engine {

struct Member {
  Name name;
  Profile profile;  // address, tags, protocol version, build
  std::uint64_t incarnation = 0;
  std::uint64_t state_change_ns = 0;  // when `status` last changed
  std::uint64_t live_since_ns = 0;    // when it last became live (admitted, or back from a tombstone)
  std::uint64_t heard_ns = 0;         // last direct proof of life: an ack to our probe, its ping
  // The engine's bookkeeping: 1 + its index in the engine's newcomer list, 0 if none.
  std::uint32_t newcomer_slot = 0;
  MemberStatus status = MemberStatus::kAlive;
  // Admitted during a storm and not yet in the view: asked for proof of life,
  // not counted live, not gossiped, no join event until promoted
  // (docs/membership.md).
  bool probation = false;
  std::uint8_t proof_pings = 0;  // on probation: proof-of-life pings sent (engine bookkeeping)

  const Address& addr() const { return profile.get().addr; }
  const std::vector<Tag>& tags() const { return profile.get().tags; }
  std::uint32_t protocol_version() const { return profile.get().protocol_version; }
  const std::string& build() const { return profile.build(); }
  void set_profile(const Address& addr, const std::vector<Tag>& tags, std::uint32_t pv, std::string_view build = {}) {
    profile = Profile(addr, tags, pv, build);
  }
  bool is_tombstone() const { return status == MemberStatus::kDead || status == MemberStatus::kLeft; }
};
static_assert(sizeof(Member) <= 48, "a member table entry stays compact (issue 16)");

// Member entries addressed by their name's id (IdentityPool): page
// id >> kShift, place id & (kPage - 1). A page is allocated with its first
// entry and freed with its last; an empty place holds Member{} (no name).
class IdPages {
 public:
  static constexpr unsigned kShift = 6;
  static constexpr std::uint32_t kPage = 1u << kShift;

  IdPages() = default;
  IdPages(IdPages&&) noexcept = default;
  IdPages& operator=(IdPages&&) noexcept = default;
  IdPages(const IdPages& o) { *this = o; }
  IdPages& operator=(const IdPages& o) {
    if (this == &o) return *this;
    pages_.clear();
    pages_.resize(o.pages_.size());
    for (std::size_t p = 0; p < o.pages_.size(); ++p)
      if (o.pages_[p]) pages_[p] = std::make_unique<Page>(*o.pages_[p]);
    pages_in_use_ = o.pages_in_use_;
    return *this;
  }

  // The entry at `id`, or nullptr.
  Member* find(std::uint32_t id) {
    Member* e = place(id);
    return e != nullptr && !e->name.empty() ? e : nullptr;
  }
  // Where `id`'s entry is or would be, if its page exists (its line not read).
  Member* place(std::uint32_t id) const {
    const std::size_t p = id >> kShift;
    return p < pages_.size() && pages_[p] ? &pages_[p]->at[id & (kPage - 1)] : nullptr;
  }
  // Asks the CPU for the line of the pointer to `id`'s page.
  void prefetch_page(std::uint32_t id) const {
    if (const std::size_t p = id >> kShift; p < pages_.size()) __builtin_prefetch(&pages_[p]);
  }
  // `m` at its name's id, which must be free there.
  Member& put(Member&& m) {
    const std::uint32_t id = m.name.id();
    const std::size_t p = id >> kShift;
    if (p >= pages_.size()) pages_.resize(p + 1);
    if (!pages_[p]) {
      pages_[p] = std::make_unique<Page>();
      ++pages_in_use_;
    }
    ++pages_[p]->used;
    Member& e = pages_[p]->at[id & (kPage - 1)];
    e = std::move(m);
    return e;
  }
  // Empties `id`'s place (which must hold an entry), and its page with its last.
  void remove(std::uint32_t id) {
    const std::size_t p = id >> kShift;
    pages_[p]->at[id & (kPage - 1)] = Member{};  // drops the name and profile references
    if (--pages_[p]->used == 0) {
      pages_[p].reset();
      --pages_in_use_;
    }
  }
  // Pages allocated (each holds at least one entry).
  std::size_t pages() const { return pages_in_use_; }
  // Heap bytes held.
  std::size_t bytes() const { return pages_in_use_ * sizeof(Page) + pages_.capacity() * sizeof(pages_[0]); }

 private:
  struct Page {
    std::array<Member, kPage> at;
    std::uint32_t used = 0;
  };
  std::vector<std::unique_ptr<Page>> pages_;  // by id >> kShift
  std::size_t pages_in_use_ = 0;
};

class MemberTable {
 public:
  // A tombstone is forgotten tombstone_ttl_ns after its death (or leave).
  // A graveyard trace is forgotten graveyard_ttl_ns after it was laid (0 =
  // only the bound forgets it).
  explicit MemberTable(std::uint32_t max_members, std::size_t graveyard_capacity = 0,
                       std::uint64_t tombstone_ttl_ns = 0, std::uint64_t graveyard_ttl_ns = 0)
      : max_members_(max_members),
        tombstone_ttl_ns_(tombstone_ttl_ns),
        graveyard_capacity_(graveyard_capacity != 0 ? graveyard_capacity : max_members),
        graveyard_ttl_ns_(graveyard_ttl_ns) {}

  Member* find(std::string_view name) { return find_id(identities().find_name(name)); }
  const Member* find(std::string_view name) const { return const_cast<MemberTable*>(this)->find(name); }
  Member* find(const Name& name) { return find_id(name.id()); }
  const Member* find(const Name& name) const { return const_cast<MemberTable*>(this)->find(name); }
  // The same, given the id prefetch() returned for the name earlier (used if
  // it still names it, else, or if kNone, the name is looked up).
  Member* find(std::string_view name, std::uint32_t prefetched_id) {
    return identities().is_name(prefetched_id, name) ? find_id(prefetched_id) : find(name);
  }
  Member* find_id(std::uint32_t name_id) { return name_id == IdentityPool::kNone ? nullptr : entries_.find(name_id); }

  // Asks the CPU for a name's entry ahead of its find (nothing if absent).
  // Merging a datagram's or a sync's members is a cache miss per member at
  // ten thousand tables; fetched together, the misses overlap. Returns the
  // name's id (IdentityPool::find_name), for find_id when the turn comes.
  std::uint32_t prefetch(std::string_view name) const {
    const std::uint32_t id = identities().find_name(name);
    if (id == IdentityPool::kNone) return id;
    if (const Member* e = entries_.place(id)) __builtin_prefetch(e);
    return id;
  }

  // Nullptr when the table is full (the caller counts the refusal).
  Member* insert(Member m);

  bool full() const { return size() >= max_members_; }
  std::size_t size() const { return view_.size() + rest_.size(); }
  // Members that are Alive or Suspect (ourselves included), probation excepted:
  // the view.
  std::size_t live_count() const { return live_; }
  std::size_t probation_count() const { return probation_; }
  // A digest of the view: each live member's name and incarnation (probation
  // excepted), combined so that the order of arrival does not matter. Two
  // views with equal digests are the same (but for a 2^-64 chance). Never 0.
  std::uint64_t view_digest() const;
  // The view split by name into `n` buckets (bucket_of), each with the digest
  // of its live members as in view_digest, folded to 32 bits (0 = an empty
  // bucket). Two views whose digests differ in bucket i differ in names of
  // bucket i; anti-entropy then exchanges those buckets only.
  std::vector<std::uint32_t> bucket_digests(std::size_t n) const;
  // The same into `out` (resized to n; its storage is reused).
  void bucket_digests(std::size_t n, std::vector<std::uint32_t>& out) const;
  // The bucket of a name (by its FNV-1a hash) among `n` (> 0); independent of
  // the incarnation, the same in every process.
  static std::size_t bucket_of(std::uint64_t name_hash, std::size_t n);
  // Changes whenever a member enters or leaves the view (or the table).
  std::uint64_t version() const { return version_; }

  // A member on probation joins the view (no-op otherwise).
  void promote(Member& m);
  // Removes a member on probation outright (no tombstone, no trace).
  void forget_probationer(std::string_view name);

  // Status changes go through here so the live count and tombstone expiry stay right.
  void set_status(Member& m, MemberStatus status, std::uint64_t now_ns);
  // When a tombstone is forgotten: its death plus the TTL (not stored per
  // entry; every tombstone has the same TTL).
  std::uint64_t expires_ns(const Member& m) const { return m.state_change_ns + tombstone_ttl_ns_; }

  // Drops tombstones whose TTL has passed (each leaves a trace), and graveyard
  // traces whose TTL has passed; returns how many tombstones.
  std::size_t expire_tombstones(std::uint64_t now_ns);

  // Earliest pending tombstone or trace expiry, or UINT64_MAX.
  std::uint64_t next_expiry() const {
    const std::uint64_t t = expiry_.empty() ? UINT64_MAX : expiry_.front().first;
    const std::uint64_t g = graveyard_order_.empty() || graveyard_ttl_ns_ == 0
                                ? UINT64_MAX
                                : graveyard_order_.front().second + graveyard_ttl_ns_;
    return std::min(t, g);
  }

  // The incarnation `name` died at, if its tombstone expired and its trace is
  // still in the graveyard.
  std::optional<std::uint64_t> buried(std::string_view name) const;
  // Leaves a trace for a member we hold no entry for (its death was news
  // before its life): keeps the higher incarnation if there is one already
  // (and the time the first was laid: a stream of lies about one name cannot
  // keep its trace for ever).
  void bury(std::string_view name, std::uint64_t incarnation, std::uint64_t now_ns);
  std::size_t graveyard_size() const { return graveyard_.size(); }
  std::uint64_t graveyard_evictions() const { return graveyard_evictions_; }
  std::uint64_t graveyard_expired() const { return graveyard_expired_; }

  // Calls fn(member) for every member in name order.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    walk(0, 0, view_.size(), rest_.size(), [&](const Member& m) {
      fn(m);
      return true;
    });
  }
  // Calls fn(member) for the entries outside the view (tombstones and
  // probationers) in name order: the same entries, in the same order, as
  // for_each would pass them, without walking the view.
  template <typename Fn>
  void for_each_outside_view(Fn&& fn) const {
    for (const std::uint32_t id : rest_) fn(at_id(id));
  }
  // Calls fn(member) from the first name >= `from`, wrapping around, until fn
  // returns false. Used by sync to send a rotating window of a large table.
  template <typename Fn>
  void for_each_from(std::string_view from, Fn&& fn) const {
    const std::size_t v = lower_bound(view_, from);
    const std::size_t r = lower_bound(rest_, from);
    if (!walk(v, r, view_.size(), rest_.size(), fn)) return;
    walk(0, 0, v, r, fn);
  }

  // The view (live members, probation excepted) in name order: what the
  // probe ring walks. Kept as members come and go, so reading it is free.
  std::size_t view_size() const { return view_.size(); }
  const Member& view_at(std::size_t i) const { return at_id(view_[i]); }
  // Position in the view of the first name >= `name`.
  std::size_t view_lower_bound(std::string_view name) const;

  // Heap bytes per entry of this table's own structures (the shared identity
  // pool not included): the entry and its place in one of the two
  // name-ordered arrays (pages full; bytes() counts what they hold).
  static constexpr std::size_t kEntryBytes = sizeof(Member) + sizeof(std::uint32_t);
  // Heap bytes this table holds (slots, indexes, expiry queue, graveyard).
  std::size_t bytes() const;

 private:
  // Position in `list` (name ids in name order) of the first name >= `name`.
  std::size_t lower_bound(const std::vector<std::uint32_t>& list, std::string_view name) const;
  // The entry of a name id that is in the table.
  const Member& at_id(std::uint32_t name_id) const { return *entries_.place(name_id); }
  // Calls fn on view_[v, v_end) and rest_[r, r_end) merged in name order,
  // until it returns false (then false).
  template <typename Fn>
  bool walk(std::size_t v, std::size_t r, std::size_t v_end, std::size_t r_end, Fn&& fn) const {
    while (v < v_end || r < r_end) {
      prefetch_ahead(view_, v, v_end);
      prefetch_ahead(rest_, r, r_end);
      const bool from_view = r >= r_end || (v < v_end && identities().names_less(view_[v], rest_[r]));
      const Member& m = at_id(from_view ? view_[v++] : rest_[r++]);
      if (!fn(m)) return false;
    }
    return true;
  }
  // A walk of a name-ordered list reads entries in no order in memory (a
  // cache miss each at ten thousand tables): at position i it asks for the
  // entry kWalkAhead on, whose page pointer it asked for kWalkAhead before.
  static constexpr std::size_t kWalkAhead = 8;
  void prefetch_ahead(const std::vector<std::uint32_t>& list, std::size_t i, std::size_t end) const {
    if (i + 2 * kWalkAhead < end) entries_.prefetch_page(list[i + 2 * kWalkAhead]);
    if (i + kWalkAhead < end)
      if (const Member* e = entries_.place(list[i + kWalkAhead])) __builtin_prefetch(e);
  }
  void list_add(std::vector<std::uint32_t>& list, std::uint32_t name_id);
  void list_remove(std::vector<std::uint32_t>& list, const Member& m);
  // After a change of status or probation: into the array it now belongs to.
  void move_list(const Member& m, bool was_in_view);
  void erase(Member& m);
  void trace(std::uint64_t hash, std::uint64_t incarnation, bool overwrite, std::uint64_t now_ns);
  void expire_traces(std::uint64_t now_ns);
  void unqueue_expiry(const Member& m);
  static bool in_view(const Member& m) {
    return !m.probation && (m.status == MemberStatus::kAlive || m.status == MemberStatus::kSuspect);
  }

  std::uint32_t max_members_;
  std::uint64_t tombstone_ttl_ns_;
  IdPages entries_;  // by name id
  // Every entry is in one of two arrays of name ids in name order: the view
  // (live, probation excepted) and the rest (tombstones and probationers).
  // Ordered walks merge them. Ids, not slots: a search compares the pool's
  // contiguous order keys and touches no entry.
  std::vector<std::uint32_t> view_;
  std::vector<std::uint32_t> rest_;
  std::size_t live_ = 0;
  std::size_t probation_ = 0;
  std::uint64_t version_ = 0;
  // (expiry time, name id): one per tombstone, in time order (ties by name).
  std::deque<std::pair<std::uint64_t, std::uint32_t>> expiry_;

  // Graveyard: the name's keyed hash (IdentityPool::index_hash: a name chosen
  // to share a trace's hash with another under the fixed FNV-1a would refuse
  // that other name, issue 51) -> incarnation at death and when the trace was
  // laid; and (hash, when laid) in the order they came in. A trace laid again
  // (a member that came back died again) leaves its old place in the order
  // behind, skipped when reached (its time no longer matches).
  struct Trace {
    std::uint64_t incarnation = 0;
    std::uint64_t laid_ns = 0;
  };
  std::size_t graveyard_capacity_;
  std::uint64_t graveyard_ttl_ns_;
  std::unordered_map<std::uint64_t, Trace> graveyard_;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> graveyard_order_;
  std::uint64_t graveyard_evictions_ = 0;
  std::uint64_t graveyard_expired_ = 0;
};

}  // namespace gw::cp::engine
