// Anti-entropy: views repaired by syncs, at a cost flat in N.
//
// Every sync interval (scaled with N) we sync with a random peer: digests
// first (equal views exchange two small datagrams), then bucket digests, so
// that unequal views exchange only the buckets that differ, or a rotating
// window of the table with the recent changes first; a view far behind gets
// the whole view. A settle sync follows the last join heard by gossip, and a
// reconnect timer syncs with members we hold failed (a partition heals
// through them). The SyncManager bounds it all: syncs in flight, answers per
// second, bytes and parts per sync; joins are answered from a budget of their
// own. The whole-view requests of a joiner go out from here too (joining.h
// decides when and to whom).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "control/engine/core.h"
#include "control/engine/effects.h"
#include "control/engine/failed_members.h"
#include "control/engine/sync.h"

namespace gw::cp::engine {

class AntiEntropy {
  // What a sync of ours asked, to ask it again with a cookie.
  enum class Asked : std::uint8_t { kJoin, kDigest, kWindow };
  // Our latest sync requests, for a cookie's retry (once each).
  struct Request {
    std::uint32_t seq_no = 0;
    Address to;
    Asked asked = Asked::kDigest;
    bool retried = false;
  };

 public:
  AntiEntropy(Core& core, Effects& fx, std::uint64_t now_ns);

  // ---- messages ----
  void on_request(const Address& from, const SyncRequest& m, std::uint64_t now_ns);
  // A response part: true if it answers a sync of ours and may be merged
  // (refusals counted).
  bool accept(const SyncResponse& m, const Address* from);
  // A response that is a cookie (return_routes.h): our request, sent again
  // at once with it (once per request).
  void on_cookie(const SyncResponse& m);
  // Where our sync `seq_no` went, while we remember it (nullptr: not ours,
  // or forgotten).
  const Address* asked_at(std::uint32_t seq_no) const {
    for (const Request& r : requests_)
      if (r.seq_no == seq_no) return &r.to;
    return nullptr;
  }
  // After its members were merged: a digest sync of ours wholly answered
  // whose views still differ sends ours.
  void after_merge(const SyncResponse& m, std::uint64_t now_ns);

  // ---- for joining ----
  // `push_view`: our request carries our view too (a follow-up, a rejoin:
  // what the responder missed); a join round's carries ourselves alone.
  void request_whole_view(const Address& to, std::uint32_t seq_no, std::uint64_t now_ns, bool push_view = true);
  bool answered(std::uint32_t seq_no) const { return syncs_.answered(seq_no); }
  bool awaiting(std::uint32_t seq_no) const { return syncs_.awaiting(seq_no); }
  void sync_by(std::uint64_t at_ns) { next_sync_ns_ = std::min(next_sync_ns_, at_ns); }
  // A member joined our view by gossip: one sync a settle delay later.
  void settle_after_join(std::uint64_t now_ns) { settle_sync_ns_ = now_ns + settle_delay(); }

  // ---- reconnects ----
  // `m` failed as an established member: a reconnect candidate until
  // reconnect_timeout_ns after now.
  void note_failed(const Member& m, std::uint64_t now_ns);
  // `name_id` is back (a newer life) or left: no reconnect to it.
  void note_back(std::uint32_t name_id) { failed_.remove(name_id); }
  // `name_id` (at `addr`) failed and is alive again: a partition may have
  // healed, and our view may hold, unknowingly, members that died on the
  // other side meanwhile (nobody here could probe them). One digest sync a
  // settle delay after the last return (cheap when the views agree), with a
  // member that returned: it comes from the other side, which saw those
  // deaths. One that told us itself (`direct`) is preferred to the latest
  // return: a return heard second-hand may be a life that has ended since
  // (asymmetric-1000: the settle sync went to a member that had refuted on
  // the unheard side and crashed later, and a view held a live member dead
  // 66 s after the heal). The periodic sync is minutes away at scale, and a
  // random peer is often one of our own side (partition-9010, 90/10: zombies
  // held 165 s after the heal, and 85 s with a settle sync to a random peer).
  void note_returned(std::uint32_t name_id, const Address& addr, bool direct, std::uint64_t now_ns) {
    if (!failed_.remove(name_id)) return;
    if (direct || !settle_peer_direct_) {
      settle_peer_ = addr;
      settle_peer_direct_ = direct;
    }
    settle_after_join(now_ns);
  }
  // The member we hold failed under `name_id`, if any.
  FailedMembers::Entry* failed(std::uint32_t name_id) { return failed_.find(name_id); }
  bool any_failed() const { return failed_.size() != 0; }

  // ---- timers ----
  // Syncs timed out; our digest syncs that timed out incomplete are retried soon.
  void expire(std::uint64_t now_ns);
  // The periodic sync, the settle sync and the reconnect timer.
  void run(std::uint64_t now_ns);
  std::uint64_t next_deadline() const;

  // Bucket digests of a periodic sync (MemberTable::bucket_digests): about
  // this many view members a bucket, at most kMaxSyncBuckets (and what fits in
  // a datagram), none in views of up to 2 buckets' worth (the whole digest
  // says as much). A request with more buckets is answered as one without.
  static constexpr std::size_t kMembersPerSyncBucket = 16;
  static constexpr std::size_t kMaxSyncBuckets = 256;
  // A periodic sync from a view shorter than ours by more than 1/this of
  // ours, or differing in more than 1/kSpreadFraction of the buckets, is
  // answered with our whole view (the views are far apart).
  static constexpr std::size_t kFarBehindFraction = 8;
  static constexpr std::size_t kSpreadFraction = 4;
  // Digest-only syncs of ours whose answers are still recognised.
  static constexpr std::size_t kDigestSyncsRemembered = 4;

 private:
  // `only`: the buckets to send (differing_buckets), null or empty = all;
  // `buckets`: our bucket digests, sent with the digest (on every part of a
  // request, on the first part of a response).
  // `cookie`: the responder's, echoed (requests only).
  template <typename Sync>
  // `self_only`: our own entry alone (a join round's request).
  void send_sync(const Address& to, std::uint32_t seq_no, bool join, bool whole_view, std::uint64_t digest = 0,
                 const std::vector<std::uint8_t>* only = nullptr, const std::vector<std::uint32_t>& buckets = {},
                 bool self_only = false, std::uint64_t cookie = 0);
  // The largest sync one side sends now (max_sync_bytes, or what the egress
  // budget's sync share sends in a sync timeout).
  std::size_t most_sync_bytes() const;
  // What our whole view takes in a sync, estimated from its size (at least
  // a datagram, at most most_sync_bytes): the unit of the per-destination
  // limit of large answers.
  std::size_t whole_view_bytes() const;
  // No reflection (docs/membership.md): true if a request from `from` may be
  // answered as asked: `from` is proven, proves itself with a valid cookie,
  // or asks what an answer no larger than its request says (a digest equal
  // to ours). Otherwise a cookie is sent instead (no larger than the
  // request) and false returned.
  bool may_answer(const Address& from, const SyncRequest& m, std::uint64_t now_ns);
  // Our digest-only sync request (with `cookie`, if a responder gave one).
  void send_digest_request(const Address& to, std::uint32_t seq_no, std::uint64_t cookie);
  void remember(std::uint32_t seq_no, const Address& to, Asked asked);
  // How many buckets our periodic syncs compare (0 = the whole digest only).
  std::size_t sync_bucket_count() const;
  // Our bucket digests beside a peer's (`theirs`, as a sync carried them):
  // into bucket_ours_ and bucket_differ_; returns how many differ. 0, both
  // empty, when theirs is empty or longer than kMaxSyncBuckets.
  std::size_t compare_buckets(const std::vector<std::uint32_t>& theirs);
  void start_sync(std::uint64_t now_ns);
  void sync_with(const Address& to, std::uint64_t now_ns);
  // The reconnect timer's round: maybe a sync to a failed member.
  void reconnect(std::uint64_t now_ns);
  std::uint64_t next_reconnect_at(std::uint64_t now_ns);
  // After the last join heard: about as long as a join's epidemic lasts
  // (5 s on LAN), so that the peer asked has heard it too.
  std::uint64_t settle_delay() const { return 25 * core_.config.gossip_interval_ns; }

  Core& core_;
  Effects& fx_;
  SyncManager syncs_;
  FailedMembers failed_;  // reconnect candidates
  std::uint64_t next_sync_ns_ = 0;
  // A settle delay after the latest join we heard by gossip: one sync then.
  std::uint64_t settle_sync_ns_ = UINT64_MAX;
  // The settle sync's peer when a failed member returned (note_returned).
  std::optional<Address> settle_peer_;
  bool settle_peer_direct_ = false;  // settle_peer_ told us of its return itself
  std::uint64_t next_reconnect_ns_ = UINT64_MAX;  // reconnect(); never with reconnect_interval_ns 0
  // Our periodic syncs that asked with a digest only, still unanswered, and
  // the responder's bucket digests once its first part is in.
  struct DigestSync {
    std::uint32_t seq_no = 0;
    std::vector<std::uint32_t> theirs;
    bool partial = false;  // some parts in (a whole view's may be many)
  };
  std::deque<DigestSync> digest_seqs_;
  std::deque<Request> requests_;
  static constexpr std::size_t kRequestsRemembered = 64;
  // Cookies responders gave us (their address, the cookie, when): our later
  // requests there carry it while the responder still takes it, and are
  // answered at once (a join round retried, a follow-up, the next sync).
  struct Cookie {
    Address at;
    std::uint64_t cookie = 0;
    std::uint64_t got_ns = 0;
  };
  std::deque<Cookie> cookies_;
  static constexpr std::size_t kCookiesRemembered = 64;
  void keep_cookie(const Address& at, std::uint64_t cookie);
  // The cookie to send `to` (0: none kept, or too old to be taken).
  std::uint64_t cookie_for(const Address& to) const;
  // Scratch of compare_buckets (and of a digest sync's own buckets): once a
  // sync interval, so reused rather than allocated each time.
  std::vector<std::uint32_t> bucket_ours_;
  std::vector<std::uint8_t> bucket_differ_;
};

}  // namespace gw::cp::engine
