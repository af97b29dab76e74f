#include "control/engine/joining.h"

#include <algorithm>

namespace gw::cp::engine {

void Joining::join(std::span<const Address> seeds, std::uint64_t now_ns) {
  seeds_.clear();
  for (const Address& seed : seeds) {
    // Ourselves (a shared seed list) or no address: nobody to ask.
    if (seed == core_.config.addr || seed.empty()) continue;
    if (seeds_.size() >= kMaxSeeds) break;
    seeds_.push_back(seed);
  }
  // No seed to ask: we are the first member.
  if (seeds_.empty()) {
    joined_ = true;
    next_join_ns_ = UINT64_MAX;
    return;
  }
  attempts_ = 0;
  joined_ = false;
  send_join(now_ns);
}

void Joining::send_join(std::uint64_t now_ns) {
  const EngineConfig& c = core_.config;
  if (attempts_ > 0) ++core_.counters.join_retries;
  ++attempts_;
  std::vector<Address> targets = seeds_;
  // A retry also asks one member we have heard of meanwhile (a refused joiner
  // is merged by its seed and gossiped, so others get to know it): the whole
  // cluster can answer, not only a busy seed.
  if (attempts_ > 1) {
    const std::vector<std::string> peer = fx_.random_peers(1, {});
    if (!peer.empty()) {
      const Address& a = core_.table.find(peer.front())->addr();
      if (std::find(targets.begin(), targets.end(), a) == targets.end()) targets.push_back(a);
    }
  }
  for (const Address& seed : targets) {
    const std::uint32_t seq = core_.take_seq();
    join_seqs_.push_back(seq);
    // Ourselves alone: a seed needs only to learn of us, and a round goes
    // to every seed. A retrying joiner's view (gossip brought it meanwhile)
    // pushed to each was kilobytes a round: under a 2 kB/s budget its
    // retries kept its sync share in debt, so that none of its own syncs
    // ever started (ci/budget-2k-atonce seed 6: a member missing one member
    // to the end).
    fx_.request_whole_view(seed, seq, now_ns, false);
  }
  // Bounded: only the latest rounds' sequence numbers matter (a late answer to
  // an older round is still welcome).
  const std::size_t keep = (kMaxSeeds + 1) * kRoundsRemembered;
  if (join_seqs_.size() > keep)
    join_seqs_.erase(join_seqs_.begin(), join_seqs_.end() - static_cast<std::ptrdiff_t>(keep));
  // Capped exponential backoff, for ever (a node started before its seeds
  // joins when they come up), with +-25 % jitter so that refused joiners do
  // not come back in step.
  std::uint64_t wait = c.join_retry_min_ns;
  for (std::uint32_t i = 1; i < attempts_ && wait < c.join_retry_max_ns; ++i) wait *= 2;
  wait = std::min(wait, c.join_retry_max_ns);
  wait = wait - wait / 4 + core_.rng.uniform(wait / 2 + 1);
  next_join_ns_ = now_ns + wait;
}

void Joining::rejoin(const Address& via, std::uint64_t now_ns) {
  if (rejoin_attempts_ > 0 ||
      (rejoined_ && now_ns - std::min(now_ns, last_rejoin_ns_) < core_.config.push_pull_interval_ns))
    return;
  rejoined_ = true;
  last_rejoin_ns_ = now_ns;
  ++core_.counters.rejoins;
  send_rejoin(via, now_ns);
}

void Joining::send_rejoin(const Address& via, std::uint64_t now_ns) {
  ++rejoin_attempts_;
  rejoin_seq_ = core_.take_seq();
  join_seqs_.push_back(rejoin_seq_);
  next_rejoin_ns_ = now_ns + core_.config.join_retry_min_ns;
  fx_.request_whole_view(via, rejoin_seq_, now_ns);
}

bool Joining::on_answer(std::uint32_t seq_no, std::uint64_t now_ns) {
  const EngineConfig& c = core_.config;
  const bool join_answer = std::find(join_seqs_.begin(), join_seqs_.end(), seq_no) != join_seqs_.end();
  // Joined once an answer is in (SyncManager::answered: all parts, or the last
  // and all but a few): an answer cut short would leave our view short of
  // whole ranges of members; the join retry asks again. A follow-up counts
  // the same way (follow_up()); what a lost part held comes with another
  // answer, whose losses fall elsewhere, or the first periodic sync.
  if (const auto f = std::find(followup_seqs_.begin(), followup_seqs_.end(), seq_no);
      f != followup_seqs_.end() && fx_.sync_answered(seq_no)) {
    followup_seqs_.erase(f);
    if (followups_wanted_ > 0 && --followups_wanted_ == 0) next_followup_ns_ = UINT64_MAX;
  }
  if (rejoin_attempts_ > 0 && seq_no == rejoin_seq_ && fx_.sync_answered(seq_no)) {
    rejoin_attempts_ = 0;
    next_rejoin_ns_ = UINT64_MAX;
  }
  if (join_answer && fx_.sync_answered(seq_no) && !joined_) {
    joined_ = true;
    answer_cut_ = fx_.sync_awaiting(seq_no);
    next_join_ns_ = UINT64_MAX;
    // One seed's view may itself be short (it joined a moment ago, or lost
    // parts): two more whole-view syncs with other members, a few seconds
    // apart, fill in what it lacked. Periodic syncs carry only a window.
    // Not in a storm (each phantom would triple its join's cost).
    // And the first periodic sync comes early, after the follow-ups: a
    // joiner cannot tell a short whole answer (from a seed that is itself
    // rejoining) from a full one, nor what the epidemics of the members that
    // came back just before it did not bring it; one digest sync (with bucket
    // digests, so it costs what differs) repairs that, instead of the scaled
    // interval (minutes) later.
    if (!fx_.in_storm(now_ns)) {
      followups_wanted_ = kFollowupJoins;
      followup_attempts_ = 0;
      // The first at once: what the seed alone listed waits for admission
      // tokens until another member's answer says it too (admit_new), and
      // a joiner through one seed would otherwise see its view complete
      // only seconds after joining (join-512: 0.8 s -> 3.3 s after the last
      // join). The second a few seconds later, as before.
      next_followup_ns_ = now_ns;
      fx_.sync_by(now_ns + 8 * c.join_retry_min_ns + core_.rng.uniform(4 * c.join_retry_min_ns));
    }
  }
  return join_answer;
}

void Joining::follow_up(std::uint64_t now_ns) {
  // A follow-up is a sync like any (it carries our view, kilobytes): it
  // starts only when the budget's sync share is out of debt, as a periodic
  // one does, and is otherwise put off a probe interval. Sent regardless,
  // six unanswered follow-ups of a few kB each at 2 kB/s kept a joiner's
  // share in debt so that no periodic sync of its own started
  // (ci/budget-2k-atonce seed 29: one member missing one to the end).
  core_.budget.refill(now_ns);
  if (!core_.budget.bulk_ready()) {
    ++core_.counters.sync_drop_budget;
    next_followup_ns_ = now_ns + core_.config.probe_interval_ns;
    return;
  }
  ++followup_attempts_;
  // Our join answer lost parts: only the follow-ups bring what those held
  // (their own losses fall elsewhere), so the next comes sooner.
  next_followup_ns_ = now_ns + (answer_cut_ ? 1 : 4) * core_.config.join_retry_min_ns;
  // Another member than the seeds (their view is the one we have), not a
  // young one; the first, sent as the answer arrives, any of the answer's
  // (all admitted a moment ago: young to us, not to the cluster).
  const bool first = followup_attempts_ == 1;
  std::vector<std::string> peer = fx_.random_peers(8, {});
  const auto settled = std::find_if(peer.begin(), peer.end(), [&](const std::string& p) {
    const Member& m = *core_.table.find(p);
    return (first || !core_.young(m, now_ns)) && std::find(seeds_.begin(), seeds_.end(), m.addr()) == seeds_.end();
  });
  if (settled == peer.end()) return;
  const std::uint32_t seq = core_.take_seq();
  join_seqs_.push_back(seq);
  ++core_.counters.join_followups;
  followup_seqs_.push_back(seq);
  if (followup_seqs_.size() > kMaxFollowupAttempts) followup_seqs_.erase(followup_seqs_.begin());
  fx_.request_whole_view(core_.table.find(*settled)->addr(), seq, now_ns);
}

void Joining::run(std::uint64_t now_ns) {
  if (!joined_ && now_ns >= next_join_ns_) send_join(now_ns);
  // Follow-ups until kFollowupJoins whole answers are in (a lost part, and the
  // same members would be missing from every view a follow-up brings: parts
  // are in name order), within kMaxFollowupAttempts.
  if (followups_wanted_ > 0 && now_ns >= next_followup_ns_ && followup_attempts_ >= kMaxFollowupAttempts) {
    followups_wanted_ = 0;
    next_followup_ns_ = UINT64_MAX;
  }
  if (followups_wanted_ > 0 && now_ns >= next_followup_ns_) follow_up(now_ns);
  // A rejoin unanswered (refused, or lost): another member, a settled one.
  if (rejoin_attempts_ > 0 && now_ns >= next_rejoin_ns_) {
    const std::vector<std::string> peer = fx_.random_peers(1, {});
    if (rejoin_attempts_ >= kRejoinAttempts || peer.empty()) {
      rejoin_attempts_ = 0;
      next_rejoin_ns_ = UINT64_MAX;
    } else {
      send_rejoin(core_.table.find(peer.front())->addr(), now_ns);
    }
  }
}

std::uint64_t Joining::next_deadline() const {
  std::uint64_t t = joined_ ? UINT64_MAX : next_join_ns_;
  if (followups_wanted_ > 0) t = std::min(t, next_followup_ns_);
  if (rejoin_attempts_ > 0) t = std::min(t, next_rejoin_ns_);
  return t;
}

}  // namespace gw::cp::engine
