// Anti-entropy: bounded full-state sync (push-pull) with one member at a time.
//
// - The interval grows with N (memberlist's pushPullScale) so that the cluster's
//   total sync load stays flat.
// - Concurrency is capped: syncs we started and still await, plus multi-part
//   syncs we are receiving. A sync is in flight until all its parts arrived or
//   its timeout passed (datagrams give no other completion signal).
// - Answers are rate-limited (token bucket): a join storm gets at most
//   `answer_rate` full-state replies per second, whatever the concurrency.
// - Size is capped: one side of a sync sends at most `max_sync_bytes`, as parts of
//   at most `part_bytes`. A table larger than that is sent as a rotating window
//   (ourselves first, then the next members after where the last sync stopped),
//   so a 50,000-member table costs a bounded number of bytes per interval and is
//   covered over several intervals.
// - The same cap bounds what we take in: a received sync (all its parts) larger
//   than `max_sync_bytes`, or announcing more parts than such a sync can have, is
//   cut off there: the part that breaks the cap and all later ones are dropped
//   (a cut multi-part sync keeps its slot until its timeout, so its later parts
//   cannot pass as new syncs).
// - Slots are shared fairly (issue 51): a sender (address) holds at most one
//   slot for a multi-part sync it is sending us, and those syncs hold at most
//   half the slots, so that a member announcing parts it never sends cannot
//   starve the others' syncs, nor ours.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "control/engine/admission.h"
#include "control/engine/member_table.h"
#include "control/engine/messages.h"

namespace gw::cp::engine {

// base * (ceil(log2(n) - log2(32)) + 1) past 32 members, else base.
std::uint64_t push_pull_scale(std::uint64_t base_ns, std::size_t n);

// A member's sync entry, its release not set (0: not said).
MemberState to_member_state(const Member& m);

// The buckets (MemberTable::bucket_digests) in which two views differ: one
// flag per bucket into `differ` (its storage reused), empty when the counts
// differ (nothing can be compared). Returns how many differ.
std::size_t differing_buckets(const std::vector<std::uint32_t>& ours, const std::vector<std::uint32_t>& theirs,
                              std::vector<std::uint8_t>& differ);

class SyncManager {
 public:
  // `max_bytes`/`part_bytes`: the per-sync and per-part byte caps (max_sync_bytes,
  // max_packet_bytes), which also bound what we accept.
  SyncManager(std::uint32_t max_concurrent, std::uint64_t timeout_ns, std::uint32_t answer_rate,
              std::uint32_t answer_burst, std::size_t max_bytes, std::size_t part_bytes, std::uint64_t now_ns,
              std::uint32_t join_answer_rate = 0, std::uint32_t join_answer_burst = 0)
      : max_concurrent_(max_concurrent),
        timeout_ns_(timeout_ns),
        max_bytes_(max_bytes),
        max_parts_(max_parts(max_bytes, part_bytes)),
        answers_(answer_rate, answer_burst, now_ns),
        join_answers_(join_answer_rate, join_answer_burst, now_ns) {}

  // Most parts build_window() makes for these caps: a part is only opened for a
  // member that did not fit in the previous one, so two neighbouring parts
  // together exceed `part_bytes`: at most 2 * ceil(max_bytes / part_bytes) + 1.
  static std::uint32_t max_parts(std::size_t max_bytes, std::size_t part_bytes);
  std::uint32_t max_parts() const { return max_parts_; }

  // The members to send, split into parts, with each part's releases (what
  // its members run, each listed once: MemberState::release); `bytes` is the
  // estimated total.
  struct Window {
    std::vector<std::vector<MemberState>> parts;
    std::vector<std::vector<Release>> releases;  // one list per part
    std::size_t bytes = 0;
  };
  // Ourselves alone (a join round's request: a seed needs only to learn of us).
  Window build_self(const MemberTable& table, const std::string& self, std::size_t part_bytes);
  // For a joiner: ourselves, every live member (up to `max_bytes`), then
  // tombstones within `tombstone_bytes` more (rotating): after a storm the
  // table holds thousands of dead phantoms, and a joiner needs the living.
  Window build_join_view(const MemberTable& table, const std::string& self, std::size_t part_bytes,
                         std::size_t max_bytes, std::size_t tombstone_bytes);

  // Ourselves first, then the members whose state changed at or after
  // `recent_since_ns` (a delta: deaths and joins a peer may have missed), then
  // the rotating rest of the table. With `only` (differing_buckets, not
  // empty), the members of the flagged buckets only.
  Window build_window(const MemberTable& table, const std::string& self, std::size_t part_bytes, std::size_t max_bytes,
                      std::uint64_t recent_since_ns = UINT64_MAX, const std::vector<std::uint8_t>* only = nullptr);

  // Room for one more sync (ours or answered) now?
  bool has_capacity() const { return in_flight() < max_concurrent_; }
  // A token of the join answer budget (for a whole view sent outside a join).
  bool take_join_answer(std::uint64_t now_ns) { return join_answers_.take(now_ns); }
  // A sync of ours still waiting for (more of) its answer.
  bool awaiting(std::uint32_t seq_no) const { return pending_.count(seq_no) != 0; }
  // The answer to a sync of ours is in as far as it will be: all its parts, or
  // its last part and all but one in kEnoughParts of the others. Parts are sent
  // in order, so once the last is here a missing one was lost, not late; and a
  // whole view is hundreds of datagrams at 10,000 members (0.99^290: 5 % of
  // them arrive whole at 1 % loss), so waiting for every part turned each join
  // into a dozen whole-view exchanges. What a lost part held comes from the
  // follow-ups and the first periodic sync, whose losses fall elsewhere.
  // Meaningful right after on_response() for this seq_no.
  bool answered(std::uint32_t seq_no) const;
  static constexpr std::uint32_t kEnoughParts = 16;
  std::size_t in_flight() const { return pending_.size() + receiving_.size(); }

  // A sync we start (periodic, or join which bypasses the cap), asking `to`.
  void start(std::uint32_t seq_no, std::uint64_t now_ns, const Address& to = Address{});
  // A response part of `bytes` (estimated_sync_size) for `seq_no` from `from`:
  // kMerge if it answers one of ours, kUnsolicited if not (or no longer, or
  // it comes from another address than the one asked: sequence numbers are
  // no secret, and a key holder could otherwise answer in another member's
  // name), kOversize if it breaks the size caps or an earlier part did.
  enum class Answer : std::uint8_t { kMerge, kUnsolicited, kOversize };
  Answer on_response(std::uint32_t seq_no, std::uint32_t part, std::uint32_t parts, std::size_t bytes,
                     const Address* from = nullptr);

  // A request part of `bytes`: kNew (merge and answer), kKnown (a later part:
  // merge only), kBusy (over the concurrency cap), kRateLimited (over the answer
  // rate) or kOversize (over the size caps: neither merge nor answer).
  // A single-part `join` request (a new member asking for the whole view) is
  // answered from its own token bucket and outside the concurrency cap: a join
  // storm is paced by that rate and by the egress shaper, and a periodic sync
  // cannot starve a joiner (nor a joiner the periodic syncs).
  // kSourceBusy: a multi-part sync from a sender (`from`) that holds a slot
  // for another already.
  enum class Serve : std::uint8_t { kNew, kKnown, kBusy, kRateLimited, kOversize, kSourceBusy };
  Serve on_request(const std::string& source, std::uint32_t seq_no, std::uint32_t parts, std::size_t bytes,
                   std::uint64_t now_ns, bool join = false, const Address& from = Address{});
  // A single part over the caps, or announcing more parts than a sync can have.
  bool oversize_part(std::uint32_t parts, std::size_t bytes) const { return parts > max_parts_ || bytes > max_bytes_; }
  // Multi-part syncs we are receiving (each holds a slot).
  std::size_t receiving() const { return receiving_.size(); }

  void expire(std::uint64_t now_ns);
  std::uint64_t next_expiry() const;

 private:
  struct Pending {
    std::uint64_t deadline_ns = 0;
    std::uint32_t parts_seen = 0;
    std::uint32_t parts = 0;
    std::size_t bytes_seen = 0;  // estimated bytes of the parts received so far
    bool cut = false;            // over the caps: later parts are dropped too
    bool last_seen = false;      // (ours) the answer's last part has arrived
    Address from;                // (theirs) the sender's address; (ours) the address asked
  };


  // Bytes a live member takes in a join view, at least (a name, an address,
  // an incarnation): a view of more members than this divides a sync's cap
  // into cannot fit, and rotates.
  static constexpr std::size_t kJoinViewBytesPerMember = 32;

  std::uint32_t max_concurrent_;
  std::uint64_t timeout_ns_;
  std::size_t max_bytes_;
  std::uint32_t max_parts_;
  TokenBucket answers_;
  TokenBucket join_answers_;
  std::string cursor_;                                                  // first member of the next window
  std::string recent_live_cursor_;                                      // ... of its recent live members
  std::string recent_dead_cursor_;                                      // ... of its recent tombstones
  std::string join_live_cursor_;                                        // live members of the next capped join view
  std::string join_dead_cursor_;                                        // tombstones of the next join view
  std::map<std::uint32_t, Pending> pending_;                            // ours, by seq
  std::map<std::pair<std::string, std::uint32_t>, Pending> receiving_;  // theirs, multi-part
};

}  // namespace gw::cp::engine
