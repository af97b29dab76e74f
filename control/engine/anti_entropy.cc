#include "control/engine/anti_entropy.h"

#include <algorithm>
#include <bit>
#include <type_traits>

#include "control/engine/wire_size.h"

namespace gw::cp::engine {

AntiEntropy::AntiEntropy(Core& core, Effects& fx, std::uint64_t now_ns)
    : core_(core),
      fx_(fx),
      syncs_(core.config.max_concurrent_syncs, core.config.sync_timeout_ns, core.config.sync_answer_rate,
             core.config.sync_answer_burst, core.config.max_sync_bytes, core.config.max_packet_bytes, now_ns,
             core.config.join_answer_rate, core.config.join_answer_burst),
      failed_(core.config.max_members) {
  const EngineConfig& c = core_.config;
  next_sync_ns_ = now_ns + c.push_pull_interval_ns + core_.rng.uniform(c.push_pull_interval_ns);
  next_reconnect_ns_ = next_reconnect_at(now_ns);
}

// ---------------------------------------------------------------- sending

std::size_t AntiEntropy::most_sync_bytes() const {
  const EngineConfig& c = core_.config;
  return static_cast<std::size_t>(
      std::clamp<std::uint64_t>(core_.budget.sync_cap(), c.max_packet_bytes, c.max_sync_bytes));
}

template <typename Sync>
void AntiEntropy::send_sync(const Address& to, std::uint32_t seq_no, bool join, bool whole_view, std::uint64_t digest,
                            const std::vector<std::uint8_t>* only, const std::vector<std::uint32_t>& buckets,
                            bool self_only, std::uint64_t cookie) {
  const EngineConfig& c = core_.config;
  const MemberTable& table = core_.table;
  // A joiner gets (and sends) the whole view, up to max_sync_bytes: at a
  // follow-up, its view repairs what the responder missed (an epidemic misses
  // a few members per thousand joins; windows take many intervals to come
  // round to any one name). A periodic
  // sync is a rotating window of sync_bytes_per_sec times its interval: the
  // interval grows with N, and so does the window, so that anti-entropy costs
  // the same bytes per member per second at any N (a full table every interval
  // would grow as N / log N), and a large table is covered over several syncs.
  // Under an egress budget no sync is larger than the budget's sync share
  // sends in a sync timeout (egress_budget.h): parts that come later are
  // dropped by the peer, and a whole view a seed cannot send in time is
  // bytes lost. A joiner's view is then completed over several syncs (the
  // join view rotates) and by gossip.
  const std::size_t most = most_sync_bytes();
  std::size_t cap = most;
  if (c.sync_bytes_per_sec > 0) {
    const std::uint64_t window = c.sync_bytes_per_sec * (core_.sync_interval() / kMillisecond) / 1000;
    cap = static_cast<std::size_t>(std::clamp<std::uint64_t>(window, c.max_packet_bytes, most));
  }
  // Changes since the last interval lead the window (a delta sync). A joiner
  // gets every live member and tombstones within the periodic window's bytes
  // (after a storm there are thousands of dead phantoms; it needs the living).
  const std::uint64_t since =
      core_.last_now_ns > core_.sync_interval() ? core_.last_now_ns - core_.sync_interval() : 0;
  SyncManager::Window w = self_only    ? syncs_.build_self(table, c.name, c.max_packet_bytes)
                           : whole_view ? syncs_.build_join_view(table, c.name, c.max_packet_bytes, most, cap)
                                        : syncs_.build_window(table, c.name, c.max_packet_bytes, cap, since, only);
  const auto parts = static_cast<std::uint32_t>(w.parts.size());
  for (std::uint32_t i = 0; i < parts; ++i) {
    Sync msg;
    msg.seq_no = seq_no;
    msg.source = c.name;
    if constexpr (std::is_same_v<Sync, SyncRequest>) msg.join = join;
    msg.part = i;
    msg.parts = parts;
    msg.members = std::move(w.parts[i]);
    msg.releases = std::move(w.releases[i]);
    msg.digest = digest;
    // A request's parts may each be the first to arrive (and be answered); a
    // response's buckets are kept by the asker from its first part.
    if (std::is_same_v<Sync, SyncRequest> || i == 0) msg.buckets = buckets;
    if constexpr (std::is_same_v<Sync, SyncRequest>) {
      if (digest != 0) msg.view_size = static_cast<std::uint32_t>(table.live_count());
      msg.cookie = cookie != 0 ? cookie : cookie_for(to);
    }
    if constexpr (std::is_same_v<Sync, SyncRequest>)
      fx_.send_request(to, Compound{std::move(msg)});
    else
      fx_.send(to, PriorityClass::kBulk, Compound{std::move(msg)}, false);
  }
  core_.counters.sync_bytes_out += w.bytes;
  // What one destination has been sent in large answers (on_request).
  if constexpr (std::is_same_v<Sync, SyncResponse>) {
    const std::size_t whole = whole_view_bytes();
    core_.routes.take_answer_bytes(to, w.bytes, whole / 2, 2 * whole, core_.last_now_ns);
  }
}

std::size_t AntiEntropy::whole_view_bytes() const {
  // Generously per member (a name, an address, tags): an honest asker is
  // never refused by the estimate.
  constexpr std::size_t kPerMember = 128;
  return std::clamp<std::size_t>(core_.table.live_count() * kPerMember, core_.config.max_packet_bytes,
                                 most_sync_bytes());
}

void AntiEntropy::remember(std::uint32_t seq_no, const Address& to, Asked asked) {
  if (requests_.size() >= kRequestsRemembered) requests_.pop_front();
  requests_.push_back({seq_no, to, asked, false});
}

void AntiEntropy::request_whole_view(const Address& to, std::uint32_t seq_no, std::uint64_t now_ns, bool push_view) {
  syncs_.start(seq_no, now_ns, to);
  ++core_.counters.sync_started;
  remember(seq_no, to, Asked::kJoin);
  send_sync<SyncRequest>(to, seq_no, true, true, 0, nullptr, {}, !push_view);
}

void AntiEntropy::send_digest_request(const Address& to, std::uint32_t seq_no, std::uint64_t cookie) {
  const MemberTable& table = core_.table;
  table.bucket_digests(sync_bucket_count(), bucket_ours_);
  SyncRequest r{seq_no, core_.config.name, false, 0, 1, {}, table.view_digest(), bucket_ours_,
                static_cast<std::uint32_t>(table.live_count())};
  r.cookie = cookie != 0 ? cookie : cookie_for(to);
  fx_.send_request(to, Compound{std::move(r)});
}

void AntiEntropy::keep_cookie(const Address& at, std::uint64_t cookie) {
  const std::uint64_t now = core_.last_now_ns;
  for (Cookie& k : cookies_)
    if (k.at == at) {
      k.cookie = cookie;
      k.got_ns = now;
      return;
    }
  if (cookies_.size() >= kCookiesRemembered) cookies_.pop_front();
  cookies_.push_back({at, cookie, now});
}

std::uint64_t AntiEntropy::cookie_for(const Address& to) const {
  // A cookie is taken in its epoch and the next (ReturnRoutes::valid_cookie):
  // one epoch after we got it, it is taken for sure.
  for (const Cookie& k : cookies_)
    if (k.at == to) return core_.last_now_ns < k.got_ns + ReturnRoutes::kEpochNs ? k.cookie : 0;
  return 0;
}

void AntiEntropy::on_cookie(const SyncResponse& m) {
  // The responder would not answer an address it does not know receives its
  // datagrams: the same request once more, at once, with the cookie (a
  // joiner pays one round trip, not a retry timeout). Once: a second cookie
  // for the same request means the first did not prove us (another address
  // on the way back, an epoch passed): the sync times out as a lost one.
  const auto it =
      std::find_if(requests_.begin(), requests_.end(), [&](const Request& r) { return r.seq_no == m.seq_no; });
  if (it == requests_.end() || it->retried || !syncs_.awaiting(m.seq_no)) {
    ++core_.counters.sync_cookie_ignored;
    return;
  }
  it->retried = true;
  ++core_.counters.sync_cookie_retries;
  keep_cookie(it->to, m.cookie);
  // The responder merged what our request carried when it sent the cookie:
  // the retry carries our own entry (a join, a window) or our digest only.
  if (it->asked == Asked::kDigest) {
    send_digest_request(it->to, m.seq_no, m.cookie);
    return;
  }
  SyncRequest r{m.seq_no, core_.config.name, it->asked == Asked::kJoin, 0, 1, {to_member_state(core_.self())}};
  r.cookie = m.cookie;
  fx_.send_request(it->to, Compound{std::move(r)});
}

bool AntiEntropy::may_answer(const Address& from, const SyncRequest& m, std::uint64_t now_ns) {
  Counters& n = core_.counters;
  const std::size_t room = fx_.reply_room(from);
  if (room == SIZE_MAX) return true;
  if (m.cookie != 0) {
    if (core_.routes.valid_cookie(from, m.cookie, now_ns)) {
      core_.routes.prove(from, now_ns, core_.proven_ttl());
      ++n.route_proven_cookie;
      return true;
    }
    ++n.sync_cookie_invalid;
  }
  // "Is your view the same?" of a view equal to ours: the digest alone says
  // yes, no larger than the question (the common case in steady state).
  const std::string& name = core_.config.name;
  const std::uint64_t ours = core_.table.view_digest();
  if (!m.join && m.digest != 0 && m.digest == ours &&
      exact_size(Message{SyncResponse{m.seq_no, name, 0, 1, {}, ours, {}}}) <= room)
    return true;
  // A cookie instead: our name and our own entry too if they fit (a peer
  // that does not know cookies takes this as the whole answer, and knows
  // us at least), never more than the request.
  SyncResponse c{m.seq_no, name, 0, 1, {}, 0, {}, {}, core_.routes.cookie(from, now_ns)};
  if (exact_size(Message{c}) > room) c.source.clear();
  const std::size_t bare = exact_size(Message{c});
  if (bare > room) {
    ++n.reply_refused_unproven;
  } else {
    MemberState self = to_member_state(core_.self());
    if (!c.source.empty() && bare + estimated_size(self) <= room) c.members.push_back(std::move(self));
    ++n.sync_cookies_sent;
    fx_.send(from, PriorityClass::kBulk, Compound{std::move(c)}, false);
  }
  // What the request told us is merged as an answered one's would be (its
  // retry then carries our own entry only: a follow-up's whole view is not
  // sent twice); a peer that does not know cookies is known, probed (which
  // proves its address) and gets whole answers from then on. Not over the
  // caps a sync is held to (SyncManager::oversize_part).
  if (!syncs_.oversize_part(m.parts, estimated_sync_size(m))) fx_.merge(m.members, m.releases, m.source, now_ns, false);
  return false;
}

// ---------------------------------------------------------------- requests

void AntiEntropy::on_request(const Address& from, const SyncRequest& m, std::uint64_t now_ns) {
  Counters& n = core_.counters;
  if (!may_answer(from, m, now_ns)) return;
  const SyncManager::Serve serve =
      syncs_.on_request(m.source, m.seq_no, m.parts, estimated_sync_size(m), now_ns, m.join, from);
  // Larger than a sync can be (this part, or the parts so far): not merged, and a
  // first part is not answered either (no slot, no token spent on it).
  if (serve == SyncManager::Serve::kOversize) {
    ++n.sync_drop_oversize;
    return;
  }
  // Over the concurrency cap or the answer rate: neither merge nor answer (the
  // sender retries: a joiner after sync_timeout, others at their next interval).
  // Either way the sender's own entry is merged (it is one member, and gossip
  // then spreads it): a refused joiner is still known, and probed.
  if (serve == SyncManager::Serve::kBusy || serve == SyncManager::Serve::kRateLimited ||
      serve == SyncManager::Serve::kSourceBusy) {
    if (serve == SyncManager::Serve::kBusy)
      ++n.sync_drop_concurrency;
    else if (serve == SyncManager::Serve::kSourceBusy)
      ++n.sync_drop_source_busy;
    else if (m.join)
      ++n.join_drop_rate;
    else
      ++n.sync_drop_rate;
    for (const MemberState& s : m.members)
      if (s.node == m.source) fx_.merge({s}, m.releases, m.source, now_ns, false);
    return;
  }
  fx_.merge(m.members, m.releases, m.source, now_ns, false);
  if (serve != SyncManager::Serve::kNew) return;
  // The egress budget's sync share is spent (egress_budget.h): no answer but
  // the digest's (two small datagrams when the views agree); the asker
  // retries, a joiner after its retry delay, others at their next interval.
  core_.budget.refill(now_ns);
  if (!core_.budget.bulk_ready() && (m.join || m.digest == 0 || m.digest != core_.table.view_digest())) {
    ++n.sync_drop_budget;
    return;
  }
  // Large answers to one address: half our whole view a second, after a
  // burst of two whole views (an honest peer asks one a sync interval, a
  // joiner one or two; a key holder spoofing a member's address gets no
  // more than this sent there).
  const bool equal = !m.join && m.digest != 0 && m.digest == core_.table.view_digest();
  if (!equal) {
    const std::size_t whole = whole_view_bytes();
    if (!core_.routes.take_answer_bytes(from, 0, whole / 2, 2 * whole, now_ns)) {
      ++n.sync_drop_destination_rate;
      return;
    }
  }
  ++n.sync_answered;
  if (m.join) ++n.join_answered;
  if (m.join || m.digest == 0) {
    send_sync<SyncResponse>(from, m.seq_no, false, m.join);
    return;
  }
  // Asked with a digest: an equal view is answered with the digest alone,
  // another with our window and our digest (the asker then knows whether
  // it still has something we lack).
  const MemberTable& table = core_.table;
  const std::uint64_t ours = table.view_digest();
  if (ours == m.digest) {
    ++n.sync_digest_equal;
    fx_.send(from, PriorityClass::kBulk, Compound{SyncResponse{m.seq_no, core_.config.name, 0, 1, {}, ours, {}}},
             false);
    return;
  }
  const std::size_t differing = compare_buckets(m.buckets);
  // Far apart: the asker's view is much shorter than ours (it rejoined
  // through a seed whose own view was short, or was cut off), or the
  // differences are spread over so many buckets (over a quarter) that
  // they cannot be told apart.
  // Our whole view then, as a join answer is, from the join answer
  // budget: windows of the differing buckets would take many sync
  // intervals to make up the difference.
  const std::size_t live = table.live_count();
  // Not in a storm: there every newcomer's view is short, and a whole
  // view for each phantom is what the storm rules exist to avoid.
  const bool short_view = m.view_size > 0 && m.view_size + live / kFarBehindFraction < live;
  const bool spread = differing * kSpreadFraction > bucket_differ_.size() && differing > 0;
  if ((short_view || spread) && !fx_.in_storm(now_ns) && syncs_.take_join_answer(now_ns)) {
    ++n.sync_whole_views;
    send_sync<SyncResponse>(from, m.seq_no, false, true, ours, nullptr, bucket_ours_);
    return;
  }
  // With bucket digests: the members of the buckets that differ only
  // (what is missing on either side is there), and ours, so that the
  // asker can send what we lack in turn. A difference no bucket shows
  // (a 32-bit fold collision) gets the whole window.
  if (differing > 0) {
    ++n.sync_bucket_windows;
    send_sync<SyncResponse>(from, m.seq_no, false, false, ours, &bucket_differ_, bucket_ours_);
    return;
  }
  send_sync<SyncResponse>(from, m.seq_no, false, false, ours);
}

// ---------------------------------------------------------------- responses

bool AntiEntropy::accept(const SyncResponse& m, const Address* from) {
  switch (syncs_.on_response(m.seq_no, m.part, m.parts, estimated_sync_size(m), from)) {
    case SyncManager::Answer::kMerge:
      return true;
    // Not an answer to one of our syncs: unsolicited state is not merged.
    case SyncManager::Answer::kUnsolicited:
      ++core_.counters.sync_drop_unsolicited;
      return false;
    // Larger than any sync we would send: the rest of it is not trusted.
    case SyncManager::Answer::kOversize:
      ++core_.counters.sync_drop_oversize;
      return false;
  }
  return false;
}

void AntiEntropy::after_merge(const SyncResponse& m, std::uint64_t now_ns) {
  // Our digest-only sync, wholly answered: if the views still differ after
  // their window, they lack something of ours, so a second sync carries our
  // window to them (and brings another of theirs).
  const auto asked =
      std::find_if(digest_seqs_.begin(), digest_seqs_.end(), [&](const DigestSync& d) { return d.seq_no == m.seq_no; });
  if (asked == digest_seqs_.end()) return;
  asked->partial = true;
  if (!m.buckets.empty() && m.buckets.size() <= kMaxSyncBuckets) asked->theirs = m.buckets;
  if (syncs_.awaiting(m.seq_no)) return;
  const std::vector<std::uint32_t> theirs = std::move(asked->theirs);
  digest_seqs_.erase(asked);
  const MemberTable& table = core_.table;
  if (m.digest == 0 || m.digest == table.view_digest()) return;
  ++core_.counters.sync_digest_differ;
  const Member* peer = table.find(m.source);
  if (peer == nullptr || peer->is_tombstone() || core_.leaving || !syncs_.has_capacity()) return;
  // The egress budget's sync share is spent: the next periodic sync repairs it.
  core_.budget.refill(now_ns);
  if (!core_.budget.bulk_ready()) {
    ++core_.counters.sync_drop_budget;
    return;
  }
  const std::uint32_t seq = core_.take_seq();
  syncs_.start(seq, now_ns, peer->addr());
  ++core_.counters.sync_started;
  remember(seq, peer->addr(), core_.config.sync_digest ? Asked::kDigest : Asked::kWindow);
  // Their buckets known: ours of the buckets that still differ, with our
  // digests (they answer with what still differs, or the digest alone).
  if (compare_buckets(theirs) > 0) {
    ++core_.counters.sync_bucket_windows;
    send_sync<SyncRequest>(peer->addr(), seq, false, false, table.view_digest(), &bucket_differ_, bucket_ours_);
    return;
  }
  send_sync<SyncRequest>(peer->addr(), seq, false, false);
}

std::size_t AntiEntropy::compare_buckets(const std::vector<std::uint32_t>& theirs) {
  bucket_ours_.clear();
  bucket_differ_.clear();
  if (theirs.empty() || theirs.size() > kMaxSyncBuckets) return 0;
  core_.table.bucket_digests(theirs.size(), bucket_ours_);
  return differing_buckets(bucket_ours_, theirs, bucket_differ_);
}

std::size_t AntiEntropy::sync_bucket_count() const {
  const std::size_t live = core_.table.live_count();
  if (live <= 2 * kMembersPerSyncBucket) return 0;
  // What fits in one datagram beside the request's other fields.
  constexpr std::size_t kRequestOverhead = 64 + kMaxNameBytes;
  const std::uint32_t packet = core_.config.max_packet_bytes;
  const std::size_t room = packet > kRequestOverhead ? (packet - kRequestOverhead) / 4 : 0;
  const std::size_t cap = std::bit_floor(std::min(kMaxSyncBuckets, room));
  const std::size_t want = std::bit_ceil((live + kMembersPerSyncBucket - 1) / kMembersPerSyncBucket);
  const std::size_t n = std::min(want, cap);
  return n >= 2 ? n : 0;
}

// ---------------------------------------------------------------- our syncs

void AntiEntropy::start_sync(std::uint64_t now_ns) {
  // Cap on concurrent syncs: skip this round.
  if (!syncs_.has_capacity()) return;
  // A random peer, preferring one that is not a young newcomer (in a storm
  // most newcomers are gone, and a sync sent there repairs nothing); in
  // steady state nobody is young and the choice is uniform.
  std::vector<std::string> peer = fx_.random_peers(4, {});
  const auto settled = std::find_if(peer.begin(), peer.end(),
                                    [&](const std::string& p) { return !core_.young(*core_.table.find(p), now_ns); });
  if (settled != peer.end()) std::iter_swap(peer.begin(), settled);
  // Syncs to the failed go on a timer of their own (reconnect), never
  // instead of this one: anti-entropy with the living is what repairs a view
  // that missed a death, and a run of syncs to the dead left one member
  // holding a dead phantom for 70 s (ci/phantom-storm seed 39).
  if (!peer.empty()) sync_with(core_.table.find(peer.front())->addr(), now_ns);
}

std::uint64_t AntiEntropy::next_reconnect_at(std::uint64_t now_ns) {
  const std::uint64_t interval = core_.config.reconnect_interval_ns;
  if (interval == 0) return UINT64_MAX;
  // Jittered, so that a cluster started together does not reconnect in step.
  return now_ns + interval / 2 + core_.rng.uniform(interval) + 1;
}

void AntiEntropy::note_failed(const Member& m, std::uint64_t now_ns) {
  if (failed_.add(m.name, m.addr(), m.incarnation, now_ns)) ++core_.counters.reconnect_evicted;
}

void AntiEntropy::reconnect(std::uint64_t now_ns) {
  // Reconnect (as Serf does): a partition leaves both sides thinking the other
  // dead, and nobody talks to the dead after gossip_to_the_dead_ns; a group
  // that restarted together through seeds among them (ci/restart seed 223:
  // both shared seeds) knows only itself. A sync to a failed member with
  // probability D / (L + D), and always when nobody live is left: the member,
  // if it is alive, hears that we hold it dead and refutes, and we hear that
  // it holds us dead (Engine::tell_if_failed, both ways); the views then
  // merge. Failed members stay candidates for reconnect_timeout_ns, whatever
  // their tombstone's lifetime (a 7-minute split outlived the 5-minute
  // tombstones and never healed). Not members that died as newcomers: a
  // storm's thousands of dead phantoms would take nearly every reconnect
  // (partitions part established members); nor members that left.
  if (!failed_.size() || !syncs_.has_capacity()) return;
  const std::uint64_t live = core_.table.live_count() - 1;
  const std::uint64_t d = failed_.size();
  if (core_.rng.uniform(live + d) >= d) return;
  const FailedMembers::Entry* e = failed_.pick(core_.rng);
  ++core_.counters.sync_reconnects;
  sync_with(e->addr, now_ns);
}

void AntiEntropy::sync_with(const Address& to, std::uint64_t now_ns) {
  // The egress budget's sync share is spent: this round is skipped.
  core_.budget.refill(now_ns);
  if (!core_.budget.bulk_ready()) {
    ++core_.counters.sync_drop_budget;
    return;
  }
  const std::uint32_t seq = core_.take_seq();
  syncs_.start(seq, now_ns, to);
  ++core_.counters.sync_started;
  if (!core_.config.sync_digest) {
    remember(seq, to, Asked::kWindow);
    send_sync<SyncRequest>(to, seq, false, false);
    return;
  }
  // Digest first: in steady state every view is the same, and the window
  // would repeat what the peer holds already.
  if (digest_seqs_.size() >= kDigestSyncsRemembered) digest_seqs_.pop_front();
  digest_seqs_.push_back({seq, {}});
  remember(seq, to, Asked::kDigest);
  send_digest_request(to, seq, 0);
}

// ---------------------------------------------------------------- timers

void AntiEntropy::expire(std::uint64_t now_ns) {
  syncs_.expire(now_ns);
  // A digest sync of ours that timed out with parts missing (a whole view
  // is tens of datagrams, and parts are in name order: the same names would
  // be missing until the next interval): once more, soon, with another peer.
  const std::uint64_t soon = core_.config.join_retry_min_ns;
  for (auto it = digest_seqs_.begin(); it != digest_seqs_.end();) {
    if (it->partial && !syncs_.awaiting(it->seq_no)) {
      it = digest_seqs_.erase(it);
      ++core_.counters.sync_incomplete_retries;
      next_sync_ns_ = std::min(next_sync_ns_, now_ns + soon + core_.rng.uniform(soon));
    } else {
      ++it;
    }
  }
}

void AntiEntropy::run(std::uint64_t now_ns) {
  const bool leaving = core_.leaving;
  // In a storm, push-pull at the base interval (not scaled with N): members
  // that missed some deaths get them from a peer's recent changes within
  // seconds of the storm's end rather than minutes.
  if (fx_.in_storm(now_ns)) next_sync_ns_ = std::min(next_sync_ns_, now_ns + core_.config.push_pull_interval_ns);
  if (now_ns >= next_sync_ns_) {
    // Our sync held by the budget (the bulk share spent, often on answering
    // others' syncs) is put off a probe interval, not skipped for a whole
    // interval: at 2 kB/s a member of ci/budget-2k-atonce had each of its
    // three periodic syncs in 120 s refused so, and kept missing a member
    // that gossip had not brought it to the end of the run.
    core_.budget.refill(now_ns);
    const bool held = !leaving && !core_.budget.bulk_ready();
    if (!leaving) start_sync(now_ns);
    next_sync_ns_ = now_ns + (held ? core_.config.probe_interval_ns : core_.sync_interval());
  } else if (now_ns >= settle_sync_ns_ && !leaving && !fx_.in_storm(now_ns)) {
    // Arrivals have stopped: one digest sync (cheap when the views agree).
    // An epidemic misses a member now and then, and the periodic sync that
    // would repair that is minutes away at scale: ci/congestion seed 25 kept
    // a member without the last joiner for the 60 s to the end of the run.
    if (settle_peer_ && syncs_.has_capacity())
      sync_with(*settle_peer_, now_ns);
    else
      start_sync(now_ns);
  }
  if (now_ns >= settle_sync_ns_) {
    settle_sync_ns_ = UINT64_MAX;
    settle_peer_.reset();
    settle_peer_direct_ = false;
  }
  if (now_ns >= next_reconnect_ns_) {
    if (!leaving) reconnect(now_ns);
    next_reconnect_ns_ = next_reconnect_at(now_ns);
  }
  // Not heard of for reconnect_timeout_ns: given up, and counted (a split
  // that long is reported, not silently permanent).
  core_.counters.reconnect_expired += failed_.expire(now_ns, core_.config.reconnect_timeout_ns);
}

std::uint64_t AntiEntropy::next_deadline() const {
  return std::min({next_sync_ns_, syncs_.next_expiry(), settle_sync_ns_, next_reconnect_ns_,
                   failed_.next_expiry(core_.config.reconnect_timeout_ns)});
}

}  // namespace gw::cp::engine
