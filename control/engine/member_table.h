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
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "control/engine/messages.h"

namespace gw::cp::engine {

struct Member {
  std::string name;
  Address addr;
  std::uint64_t incarnation = 0;
  MemberStatus status = MemberStatus::kAlive;
  std::vector<Tag> tags;
  std::uint32_t protocol_version = 0;
  std::uint64_t state_change_ns = 0;  // when `status` last changed
  std::uint64_t live_since_ns = 0;    // when it last became live (admitted, or back from a tombstone)
  std::uint64_t expires_ns = 0;       // tombstones only: when it is forgotten
  // Admitted during a storm and not yet in the view: probed, not counted live,
  // not gossiped, no join event until promoted (docs/membership.md).
  bool probation = false;
  std::uint64_t heard_ns = 0;  // last direct proof of life: an ack to our probe, its ping

  bool is_tombstone() const {
    return status == MemberStatus::kDead || status == MemberStatus::kLeft;
  }
};

class MemberTable {
 public:
  explicit MemberTable(std::uint32_t max_members, std::size_t graveyard_capacity = 0)
      : max_members_(max_members),
        graveyard_capacity_(graveyard_capacity != 0 ? graveyard_capacity : max_members) {}

  Member* find(const std::string& name);
  const Member* find(const std::string& name) const;

  // Nullptr when the table is full (the caller counts the refusal).
  Member* insert(Member m);

  bool full() const { return members_.size() >= max_members_; }
  std::size_t size() const { return members_.size(); }
  // Members that are Alive or Suspect (ourselves included), probation excepted:
  // the view.
  std::size_t live_count() const { return live_; }
  std::size_t probation_count() const { return probation_; }
  // A digest of the view: each live member's name and incarnation (probation
  // excepted), combined so that the order of arrival does not matter. Two
  // views with equal digests are the same (but for a 2^-64 chance). Never 0.
  std::uint64_t view_digest() const;
  // Changes whenever a member enters or leaves the view (or the table).
  std::uint64_t version() const { return version_; }

  // A member on probation joins the view (no-op otherwise).
  void promote(Member& m);
  // Removes a member on probation outright (no tombstone, no trace).
  void forget_probationer(const std::string& name);

  // Status changes go through here so the live count and tombstone expiry stay right.
  void set_status(Member& m, MemberStatus status, std::uint64_t now_ns, std::uint64_t ttl_ns);

  // Drops tombstones whose TTL has passed; returns their names in order.
  std::vector<std::string> expire_tombstones(std::uint64_t now_ns);

  // Earliest pending tombstone expiry, or UINT64_MAX.
  std::uint64_t next_expiry() const;

  const std::map<std::string, Member>& all() const { return members_; }

  // The incarnation `name` died at, if its tombstone expired and its trace is
  // still in the graveyard.
  std::optional<std::uint64_t> buried(const std::string& name) const;
  // Leaves a trace for a member we hold no entry for (its death was news
  // before its life): keeps the higher incarnation if there is one already.
  void bury(const std::string& name, std::uint64_t incarnation);
  std::size_t graveyard_size() const { return graveyard_.size(); }
  std::uint64_t graveyard_evictions() const { return graveyard_evictions_; }

  // Calls fn(member) from the first name >= `from`, wrapping around, until fn
  // returns false. Used by sync to send a rotating window of a large table.
  template <typename Fn>
  void for_each_from(const std::string& from, Fn&& fn) const {
    auto start = members_.lower_bound(from);
    for (auto it = start; it != members_.end(); ++it)
      if (!fn(it->second)) return;
    for (auto it = members_.begin(); it != start; ++it)
      if (!fn(it->second)) return;
  }

 private:
  std::uint32_t max_members_;
  std::map<std::string, Member> members_;
  std::size_t live_ = 0;
  std::size_t probation_ = 0;
  std::uint64_t version_ = 0;
  // (expiry time, name): exactly one entry per tombstone.
  std::set<std::pair<std::uint64_t, std::string>> expiry_;
  // Graveyard: name hash -> incarnation at death, and the order they came in.
  void trace(std::uint64_t hash, std::uint64_t incarnation, bool overwrite);

  std::size_t graveyard_capacity_;
  std::unordered_map<std::uint64_t, std::uint64_t> graveyard_;
  std::deque<std::uint64_t> graveyard_order_;
  std::uint64_t graveyard_evictions_ = 0;
};

}  // namespace gw::cp::engine
