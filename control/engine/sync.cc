#include "control/engine/sync.h"

#include <algorithm>
#include <cmath>

#include "control/engine/wire_size.h"

namespace gw::cp::engine {

std::uint64_t push_pull_scale(std::uint64_t base_ns, std::size_t n) {
  constexpr double kThreshold = 32;
  // Small clusters sync at the base interval.
  if (n <= static_cast<std::size_t>(kThreshold)) return base_ns;
  const double mult = std::ceil(std::log2(static_cast<double>(n)) - std::log2(kThreshold)) + 1.0;
  return static_cast<std::uint64_t>(mult) * base_ns;
}

MemberState to_member_state(const Member& m) {
  return MemberState{m.name, m.addr(), m.incarnation, m.status, m.tags()};
}

std::size_t differing_buckets(const std::vector<std::uint32_t>& ours, const std::vector<std::uint32_t>& theirs,
                              std::vector<std::uint8_t>& differ) {
  differ.clear();
  if (ours.size() != theirs.size()) return 0;
  std::size_t count = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    differ.push_back(ours[i] != theirs[i]);
    count += differ.back();
  }
  return count;
}

namespace {

// Fills a window part by part under a byte cap (estimated encoded sizes).
class WindowBuilder {
 public:
  WindowBuilder(SyncManager::Window& w, const std::string& self, std::size_t part_bytes, std::size_t max_bytes)
      : w_(w), part_bytes_(part_bytes), max_bytes_(max_bytes), overhead_(estimated_sync_overhead(self.size())) {}

  // False when the cap is reached (the member is not added).
  bool add(const Member& m) {
    MemberState s = to_member_state(m);
    // What it runs: listed once per part, the entry refers to it by position
    // (the first listed, usually ours and most members', costs the entry
    // nothing). A release we do not know is listed as such (0, empty).
    const ProfileData& p = m.profile.get();
    const std::pair<std::uint32_t, std::uint32_t> key{p.protocol_version, p.build};
    bool listed = false;
    if (!w_.parts.empty())
      for (std::size_t i = 0; i < listed_.size() && !listed; ++i)
        if (listed_[i] == key) {
          s.release = static_cast<std::uint32_t>(i);
          listed = true;
        }
    // Bytes of its release's listing, when the part must list it.
    std::size_t listing = listed ? 0 : listing_size(m);
    if (!listed) s.release = static_cast<std::uint32_t>(listed_.size());
    std::size_t sz = estimated_size(s);
    const bool new_part = w_.parts.empty() || part_used_ + sz + listing > part_bytes_;
    if (new_part) {
      // First in a new part: its release is the part's first.
      if (listing == 0) listing = listing_size(m);
      s.release = 0;
      sz = estimated_size(s);
      // Cannot fit even alone in a part (tags are bounded, so only a tiny part size): skip.
      if (overhead_ + sz + listing > part_bytes_) return true;
    }
    const std::size_t cost = sz + listing + (new_part ? overhead_ : 0);
    // The per-sync byte cap: the rest waits for the next window.
    if (w_.bytes + cost > max_bytes_) return false;
    if (new_part) {
      w_.parts.emplace_back();
      w_.releases.emplace_back();
      listed_.clear();
      part_used_ = overhead_;
    }
    if (listing != 0) {
      listed_.push_back(key);
      w_.releases.back().push_back(Release{p.protocol_version, m.build()});
    }
    w_.parts.back().push_back(std::move(s));
    part_used_ += sz + listing;
    w_.bytes += cost;
    return true;
  }
  void set_cap(std::size_t max_bytes) { max_bytes_ = max_bytes; }

 private:
  static std::size_t listing_size(const Member& m) {
    return estimated_size(Release{m.protocol_version(), m.build()});
  }

  SyncManager::Window& w_;
  std::size_t part_bytes_;
  std::size_t max_bytes_;
  std::size_t overhead_;
  std::size_t part_used_ = 0;  // bytes of the open part, overhead included
  // The open part's releases (protocol version, build id), in list order.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> listed_;
};

// One rotating pass over the members `pick` selects, from `cursor`: false if
// the window filled up (the cursor then marks where the next window goes on;
// a completed pass starts over next time).
template <typename Pick>
bool rotating_pass(const MemberTable& table, const std::string& self, std::string& cursor, WindowBuilder& b,
                   Pick&& pick) {
  std::string stop_at;
  table.for_each_from(cursor, [&](const Member& m) {
    if (m.name == self || !pick(m)) return true;
    if (!b.add(m)) {
      stop_at = m.name;
      return false;
    }
    return true;
  });
  cursor = stop_at;
  return stop_at.empty();
}

}  // namespace

SyncManager::Window SyncManager::build_window(const MemberTable& table, const std::string& self, std::size_t part_bytes,
                                              std::size_t max_bytes, std::uint64_t recent_since_ns,
                                              const std::vector<std::uint8_t>* only) {
  Window w;
  WindowBuilder b(w, self, part_bytes, max_bytes);
  if (const Member* me = table.find(self)) b.add(*me);
  const bool delta = recent_since_ns != UINT64_MAX;
  const bool filtered = only != nullptr && !only->empty();
  // Outside the buckets asked for: as if not in the table (never recent).
  auto skip = [&](const Member& m) {
    return filtered && !(*only)[MemberTable::bucket_of(identities().name_hash(m.name.id()), only->size())];
  };
  auto recent = [&](const Member& m) { return delta && m.state_change_ns >= recent_since_ns; };
  // Recent changes first: what a peer is most likely to have missed. Live
  // ones before tombstones: a member we admitted lately is what we most need
  // checked (a peer that buried it answers with the death at once), and in a
  // storm the recent tombstones alone would fill the window. Each part
  // rotates on its own, so a large recent set is covered over several syncs.
  if (!rotating_pass(table, self, recent_live_cursor_, b,
                     [&](const Member& m) { return recent(m) && !m.is_tombstone() && !m.probation && !skip(m); }))
    return w;
  if (!rotating_pass(table, self, recent_dead_cursor_, b,
                     [&](const Member& m) { return recent(m) && m.is_tombstone() && !skip(m); }))
    return w;
  rotating_pass(table, self, cursor_, b, [&](const Member& m) { return !recent(m) && !m.probation && !skip(m); });
  return w;
}

SyncManager::Window SyncManager::build_self(const MemberTable& table, const std::string& self,
                                            std::size_t part_bytes) {
  Window w;
  WindowBuilder b(w, self, part_bytes, part_bytes);
  if (const Member* me = table.find(self)) b.add(*me);
  return w;
}

SyncManager::Window SyncManager::build_join_view(const MemberTable& table, const std::string& self,
                                                 std::size_t part_bytes, std::size_t max_bytes,
                                                 std::size_t tombstone_bytes) {
  Window w;
  WindowBuilder b(w, self, part_bytes, max_bytes);
  if (const Member* me = table.find(self)) b.add(*me);
  // Every live member (a joiner needs them all). A view larger than a sync
  // may be (an egress budget caps it) rotates across answers, so that a
  // joiner's further syncs bring the rest; one that fits starts where the
  // table does.
  std::string from_start;
  std::string& start = table.view_size() * kJoinViewBytesPerMember > max_bytes ? join_live_cursor_ : from_start;
  if (!rotating_pass(table, self, start, b, [](const Member& m) { return !m.is_tombstone() && !m.probation; }))
    return w;
  // Then tombstones, within their own budget, rotating across joins.
  b.set_cap(std::min(max_bytes, w.bytes + tombstone_bytes));
  rotating_pass(table, self, join_dead_cursor_, b, [](const Member& m) { return m.is_tombstone(); });
  return w;
}

std::uint32_t SyncManager::max_parts(std::size_t max_bytes, std::size_t part_bytes) {
  // A zero part size makes no parts at all (build_window skips every member).
  if (part_bytes == 0) return 1;
  const std::size_t n = 2 * ((max_bytes + part_bytes - 1) / part_bytes) + 1;
  return static_cast<std::uint32_t>(std::min<std::size_t>(n, UINT32_MAX));
}

void SyncManager::start(std::uint32_t seq_no, std::uint64_t now_ns, const Address& to) {
  pending_[seq_no] = Pending{now_ns + timeout_ns_, 0, 0, 0, false, false, to};
}

bool SyncManager::answered(std::uint32_t seq_no) const {
  const auto it = pending_.find(seq_no);
  if (it == pending_.end()) return true;
  const Pending& p = it->second;
  if (!p.last_seen || p.cut) return false;
  const std::uint64_t missing = p.parts > p.parts_seen ? p.parts - p.parts_seen : 0;
  return missing * kEnoughParts <= p.parts;
}

SyncManager::Answer SyncManager::on_response(std::uint32_t seq_no, std::uint32_t part, std::uint32_t parts,
                                             std::size_t bytes, const Address* from) {
  auto it = pending_.find(seq_no);
  // Not a sync of ours (or it timed out): unsolicited state is not merged.
  if (it == pending_.end()) return Answer::kUnsolicited;
  Pending& p = it->second;
  // From another address than the one asked: not its answer (and the sync
  // stays open for the real one).
  if (from != nullptr && !p.from.empty() && *from != p.from) return Answer::kUnsolicited;
  // Larger than any sync we would send: take no more of it (what came within the
  // cap is merged already; the rest is not trusted). The entry stays until its
  // timeout so that later parts are recognised and dropped too.
  if (p.cut || oversize_part(parts, bytes) || p.bytes_seen + bytes > max_bytes_) {
    p.cut = true;
    return Answer::kOversize;
  }
  p.bytes_seen += bytes;
  ++p.parts_seen;
  p.parts = parts;
  if (parts > 0 && part + 1 == parts) p.last_seen = true;
  // All parts in: the slot is free again.
  if (p.parts_seen >= parts) pending_.erase(it);
  return Answer::kMerge;
}

SyncManager::Serve SyncManager::on_request(const std::string& source, std::uint32_t seq_no, std::uint32_t parts,
                                           std::size_t bytes, std::uint64_t now_ns, bool join,
                                           const Address& from) {
  const auto key = std::make_pair(source, seq_no);
  auto it = receiving_.find(key);
  if (it != receiving_.end()) {
    Pending& p = it->second;
    // The parts together exceed a sync's cap: cut the sync off. It keeps its slot
    // until its timeout, so that its later parts cannot pass as new syncs.
    if (p.cut || p.bytes_seen + bytes > max_bytes_) {
      p.cut = true;
      return Serve::kOversize;
    }
    p.bytes_seen += bytes;
    // A later part of a sync already answered: merge it, free the slot at the end.
    if (++p.parts_seen >= p.parts) receiving_.erase(it);
    return Serve::kKnown;
  }
  // Larger than a sync can be: spend no slot and no answer token on it.
  if (oversize_part(parts, bytes)) return Serve::kOversize;
  // A joiner's request: its own budget, no slot (nothing more to receive).
  if (join && parts <= 1) return join_answers_.take(now_ns) ? Serve::kNew : Serve::kRateLimited;
  // Concurrency cap: a join storm must not turn into a storm of full-state replies.
  if (!has_capacity()) return Serve::kBusy;
  if (parts > 1) {
    // Fair shares: one slot a sender, and half the slots for others' multi-part
    // syncs (the rest for ours and single-part ones). A sync whose later parts
    // never come holds its slot until the timeout; announced 8 a second from
    // one member they held every slot, and nobody's sync was answered.
    if (receiving_.size() >= std::max<std::uint32_t>(1, max_concurrent_ / 2)) return Serve::kBusy;
    for (const auto& [k, p] : receiving_)
      if (p.from == from) return Serve::kSourceBusy;
  }
  if (!answers_.take(now_ns)) return Serve::kRateLimited;
  // More parts to come: the sync holds a slot until they arrive or time out.
  if (parts > 1) receiving_.emplace(key, Pending{now_ns + timeout_ns_, 1, parts, bytes, false, false, from});
  return Serve::kNew;
}

void SyncManager::expire(std::uint64_t now_ns) {
  std::erase_if(pending_, [&](const auto& kv) { return kv.second.deadline_ns <= now_ns; });
  std::erase_if(receiving_, [&](const auto& kv) { return kv.second.deadline_ns <= now_ns; });
}

std::uint64_t SyncManager::next_expiry() const {
  std::uint64_t t = UINT64_MAX;
  for (const auto& [seq, p] : pending_) t = std::min(t, p.deadline_ns);
  for (const auto& [key, p] : receiving_) t = std::min(t, p.deadline_ns);
  return t;
}

}  // namespace gw::cp::engine
