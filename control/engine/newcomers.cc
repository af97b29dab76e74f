#include "control/engine/newcomers.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace gw::cp::engine {

Newcomers::Newcomers(Core& core, Effects& fx, std::uint64_t now_ns)
    : core_(core),
      fx_(fx),
      admission_(core.config.admit_rate, core.config.admit_burst, core.config.allowed_name_prefixes,
                 core.config.required_tags, now_ns) {}

// ---------------------------------------------------------------- the climate

void Newcomers::note_failure(const std::string& name, std::uint64_t now_ns) {
  const EngineConfig& c = core_.config;
  // Distinct members: one newcomer that stalls again and again is no storm.
  const std::uint64_t h = std::hash<std::string>{}(name);
  for (const auto& [at, seen] : failures_)
    if (seen == h) return;
  failures_.emplace_back(now_ns, h);
  // Only the count within the window matters: keep no more than that.
  while (failures_.size() > c.storm_newcomer_failures) failures_.pop_front();
  if (in_storm(now_ns)) storm_until_ns_ = now_ns + c.storm_window_ns;
}

void Newcomers::note_suspected(const Member& m, std::uint64_t now_ns) {
  const EngineConfig& c = core_.config;
  if (!core_.newcomer(m, now_ns) || c.storm_newcomer_failures == 0 || suspected_.size() >= c.max_members) return;
  suspected_.push_back({now_ns + kRefuteRounds * c.probe_interval_ns, m.incarnation, m.name});
}

void Newcomers::weigh_suspicions(std::uint64_t now_ns) {
  while (!suspected_.empty() && suspected_.front().due_ns <= now_ns) {
    const Suspected s = std::move(suspected_.front());
    suspected_.pop_front();
    const Member* m = core_.table.find(s.name);
    // Refuted (a newer incarnation, or Alive again), or forgotten: no failure.
    if (m == nullptr || m->incarnation != s.incarnation ||
        (m->status != MemberStatus::kSuspect && m->status != MemberStatus::kDead))
      continue;
    note_failure(s.name.str(), now_ns);
  }
}

bool Newcomers::in_storm(std::uint64_t now_ns) const {
  const EngineConfig& c = core_.config;
  if (c.storm_newcomer_failures == 0) return false;
  if (now_ns < storm_until_ns_) return true;
  return failures_.size() >= c.storm_newcomer_failures && now_ns - failures_.front().first <= c.storm_window_ns;
}

void Newcomers::note_arrival(std::uint64_t now_ns) {
  const EngineConfig& c = core_.config;
  if (c.surge_min_arrivals == 0 || c.surge_window_ns == 0) return;
  arrivals_.push_back(now_ns);
  while (!arrivals_.empty() && now_ns - arrivals_.front() > c.surge_window_ns) arrivals_.pop_front();
  // A member that is starting, and the cluster with it, sees everybody arrive.
  if (core_.our_age(now_ns) < c.probation_ns) return;
  // Once on, a surge lasts while the arrivals go on, whatever their rate: in
  // one, the others hold the newcomers on probation and gossip none of them,
  // so fewer arrivals reach us than made the surge, and the phantoms that
  // got into the view (before it was recognised) raised the bar. A surge that
  // lapsed before the storm was recognised let a dozen phantoms into our view
  // whose deaths nobody gossips (they were probationers everywhere else):
  // ci/storm-onset seed 154, view 9 over the live members for seconds.
  if (in_surge(now_ns)) {
    surge_until_ns_ = now_ns + c.surge_window_ns;
    return;
  }
  const std::size_t need =
      std::max<std::size_t>(c.surge_min_arrivals, core_.table.live_count() * c.surge_arrival_pct / 100);
  if (arrivals_.size() < need) return;
  ++core_.counters.surges;
  surge_until_ns_ = now_ns + c.surge_window_ns;
}

// ---------------------------------------------------------------- admission

bool Newcomers::corroborated(const std::string& name, const Address* from, std::uint64_t now_ns) {
  if (from == nullptr) return false;
  // What was noted longer ago than kVouchTtlNs: no answer of this join.
  while (!vouch_order_.empty() && now_ns - std::min(now_ns, vouch_order_.front().first) >= kVouchTtlNs) {
    const auto it = vouches_.find(vouch_order_.front().second);
    if (it != vouches_.end() && it->second.at_ns == vouch_order_.front().first) vouches_.erase(it);
    vouch_order_.pop_front();
  }
  const auto it = vouches_.find(name);
  if (it != vouches_.end()) {
    // The same member's answer again (a retry, a repeated part): still one word.
    if (it->second.from == *from) return false;
    vouches_.erase(it);
    ++core_.counters.join_view_corroborated;
    return true;
  }
  if (vouches_.size() >= core_.config.max_members) {
    ++core_.counters.join_view_unnoted;
    return false;
  }
  vouches_.emplace(name, Vouch{*from, now_ns});
  vouch_order_.emplace_back(now_ns, name);
  return false;
}

AdmitVerdict Newcomers::admit(const Alive& a, std::uint64_t now_ns, bool from_join) {
  const AdmitVerdict verdict = admission_.admit(a.node, a.tags, now_ns);
  switch (verdict) {
    case AdmitVerdict::kPolicy:
      ++core_.counters.admission_drop_policy;
      break;
    case AdmitVerdict::kRateLimited:
      // Over the rate: it waits for a token rather than being lost until the
      // next sync brings it again (everyone else has stopped gossiping it).
      if (pending_.size() >= core_.config.max_pending_admissions) {
        ++core_.counters.admission_drop_rate;
        break;
      }
      ++core_.counters.admission_deferred;
      pending_.push_back(Waiting{a, from_join});
      break;
    case AdmitVerdict::kAdmit:
      break;
  }
  return verdict;
}

bool Newcomers::probation_now(std::uint64_t now_ns) const {
  // In a storm, or a surge of arrivals, a newcomer waits outside the view
  // (probed, not gossiped) until it has lived through its probation: most
  // phantoms are gone before that.
  return core_.config.probation_ns > 0 && (in_storm(now_ns) || in_surge(now_ns));
}

void Newcomers::admitted(Member& m, const Address* introducer, std::uint64_t now_ns, bool arrival) {
  if (arrival) note_arrival(now_ns);
  remember(m);
  if (!m.probation) return;
  ++core_.counters.probation_started;
  probationers_.emplace_back(now_ns + core_.config.probation_ns, m.name.str());
  if (introducer != nullptr && !introducer->empty() && introducers_.size() < core_.config.max_members)
    introducers_[m.name.id()] = *introducer;
}

void Newcomers::remember(Member& m) {
  // Bounded like the table; a death removes the name, growing up is noticed
  // when probing picks it.
  if (list_.size() >= core_.config.max_members || m.newcomer_slot != 0) return;
  list_.push_back(m.name.id());
  m.newcomer_slot = static_cast<std::uint32_t>(list_.size());
}

void Newcomers::admit_waiting(std::uint64_t now_ns) {
  // As many as there are tokens; each goes through the engine's rules again
  // (it may be known by now, or refused by the graveyard).
  while (!pending_.empty() && admission_.tokens(now_ns) > 0) {
    const Waiting w = std::move(pending_.front());
    pending_.pop_front();
    fx_.alive(w.alive, now_ns, w.from_join);
  }
}

// ---------------------------------------------------------------- deaths

bool Newcomers::burying(Member& m, std::uint64_t incarnation, MemberStatus status, const Address* told_by,
                        std::uint64_t now_ns, bool unproven) {
  if (status == MemberStatus::kDead && core_.newcomer(m, now_ns)) note_failure(m.name.str(), now_ns);
  forget(m.name.str());
  if (!m.probation) return false;
  ++core_.counters.probation_died;
  if (auto intro = introducers_.find(m.name.id()); intro != introducers_.end()) {
    // Its introducer vouched for it: tell it first-hand (it may be the only
    // one with it in its view; a death is gossiped only by those who knew).
    if (status == MemberStatus::kDead && (told_by == nullptr || intro->second != *told_by)) {
      ++core_.counters.probation_death_told;
      fx_.send(intro->second, PriorityClass::kUrgent,
               Compound{Dead{incarnation, m.name.str(), core_.config.name, unproven}}, false);
    }
    introducers_.erase(intro);
  }
  proof_seqs_.erase(m.name.id());
  return true;
}

void Newcomers::forget(const std::string& name) {
  const Member* m = core_.table.find(name);
  if (m == nullptr || m->newcomer_slot == 0) return;
  forget_at(m->newcomer_slot - 1);
}

void Newcomers::forget_at(std::size_t i) {
  MemberTable& table = core_.table;
  if (Member* m = table.find_id(list_[i])) m->newcomer_slot = 0;
  if (i + 1 != list_.size()) {
    list_[i] = list_.back();
    if (Member* moved = table.find_id(list_[i])) moved->newcomer_slot = static_cast<std::uint32_t>(i + 1);
  }
  list_.pop_back();
}

// ---------------------------------------------------------------- probing

std::optional<std::string> Newcomers::probe_target(std::uint64_t now_ns) {
  // Random picks; one that grew up, died or was forgotten is removed on the
  // spot (swap with the last), so the list stays the live newcomers.
  for (int attempt = 0; attempt < 16 && !list_.empty(); ++attempt) {
    const auto i = static_cast<std::size_t>(core_.rng.uniform(list_.size()));
    const Member* m = core_.table.find_id(list_[i]);
    if (m != nullptr && !m->is_tombstone() && core_.newcomer(*m, now_ns)) return m->name.str();
    forget_at(i);
  }
  return std::nullopt;
}

bool Newcomers::on_ack(const Ack& m, std::uint64_t now_ns) {
  // The answer to a proof ping (a probationer proving it is alive) or to a
  // last ping (a newcomer in a storm, before a verdict).
  Member* t = core_.table.find(m.source);
  if (t == nullptr) return false;
  auto pp = proof_seqs_.find(t->name.id());
  if (pp == proof_seqs_.end() || pp->second != m.seq_no) return false;
  t->heard_ns = now_ns;
  proof_seqs_.erase(pp);
  if (t->probation) {
    ++core_.counters.probation_proof_acks;
    // A live probationer: the proof pings before this one were lost (a
    // probation is where a member meets most of the others: while a
    // cluster forms, our own probes are too few to measure the loss by).
    for (std::uint8_t i = 1; i < t->proof_pings; ++i) core_.round_trip_loss.note(true);
    core_.round_trip_loss.note(false);
  }
  return true;
}

std::uint8_t Newcomers::proof_pings_needed() const {
  // n losses in a row at round-trip loss q: q^n. Held at kProofLossDesign^
  // kProofPings (6e-6 per probationer).
  const double q = core_.round_trip_loss.fraction();
  if (q <= kProofLossDesign) return kProofPings;
  if (q >= 0.9) return kMaxProofPings;
  const double n = std::ceil(kProofPings * std::log(kProofLossDesign) / std::log(q));
  return static_cast<std::uint8_t>(std::min<double>(n, kMaxProofPings));
}

std::optional<std::uint32_t> Newcomers::send_proof_ping(const Member& m) {
  // Nothing left to track the answer with.
  if (proof_seqs_.size() >= core_.config.max_members) return std::nullopt;
  const std::uint32_t seq = core_.take_seq();
  proof_seqs_[m.name.id()] = seq;
  // Asks for its build if we do not know it (a newcomer learned through gossip).
  fx_.send(m.addr(), PriorityClass::kProbe,
           Compound{Ping{seq, m.name, core_.config.name, core_.config.addr, 0, m.build().empty()}}, false);
  return seq;
}

bool Newcomers::last_ping(const Member& m, std::uint64_t now_ns) {
  // One is on its way already (a probe out of turn failed meanwhile): its
  // verdict stands for both.
  if (proof_seqs_.contains(m.name.id())) return true;
  // None can be sent: the verdict now, as before.
  const std::optional<std::uint32_t> seq = send_proof_ping(m);
  if (!seq) return false;
  last_pings_.push_back({now_ns + core_.config.probe_interval_ns, now_ns, m.incarnation, *seq, m.name});
  ++core_.counters.young_last_pings;
  return true;
}

// ---------------------------------------------------------------- timers

void Newcomers::expire_last_pings(std::uint64_t now_ns) {
  while (!last_pings_.empty() && last_pings_.front().due_ns <= now_ns) {
    const LastPing lp = std::move(last_pings_.front());
    last_pings_.pop_front();
    // Unanswered: forget its number (unless a proof ping of a newer life
    // took the slot meanwhile).
    if (auto pp = proof_seqs_.find(lp.name.id()); pp != proof_seqs_.end() && pp->second == lp.seq_no)
      proof_seqs_.erase(pp);
    Member* m = core_.table.find(lp.name);
    // Gone, buried, or refuted meanwhile (a newer life is a newer question):
    // no verdict of ours.
    if (m == nullptr || m->is_tombstone() || m->probation || m->incarnation != lp.incarnation) continue;
    // It answered (this ping, a probe of ours) or pinged us since: alive.
    if (m->heard_ns >= lp.sent_ns) {
      ++core_.counters.young_last_acks;
      continue;
    }
    // Silent twice. Still a newcomer in a storm: dead at once, as the rule
    // has it; otherwise suspected like anyone.
    const std::string& name = lp.name;
    if (core_.young(*m, now_ns) && in_storm(now_ns)) {
      ++core_.counters.young_declared_dead;
      fx_.dead(m->incarnation, name, core_.config.name, MemberStatus::kDead, now_ns);
    } else {
      fx_.suspect(Suspect{m->incarnation, name, core_.config.name}, now_ns);
    }
  }
}

void Newcomers::end_probations(std::uint64_t now_ns) {
  const EngineConfig& c = core_.config;
  // Two queues, each in time order because each has one delay: the end of a
  // probation, and the look again a probe interval after a proof ping.
  for (;;) {
    auto* due = !probationers_.empty() && probationers_.front().first <= now_ns ? &probationers_ : nullptr;
    if (!proof_checks_.empty() && proof_checks_.front().first <= now_ns &&
        (due == nullptr || proof_checks_.front().first < due->front().first))
      due = &proof_checks_;
    if (due == nullptr) break;
    const std::string name = std::move(due->front().second);
    due->pop_front();
    Member* m = core_.table.find(name);
    // Died (or was forgotten) meanwhile: nothing to promote.
    if (m == nullptr || !m->probation) continue;
    // Suspected: it waits for the verdict (a refutation makes it Alive again).
    if (m->status != MemberStatus::kAlive) {
      probationers_.emplace_back(now_ns + c.probation_ns, name);
      continue;
    }
    // Lived through it, as far as we know: the proof is that it answered us
    // (or pinged us) since. Without that, a phantom that died unnoticed would
    // join the view now and be gossiped again: ask it directly with a proof
    // ping (its own number, no helpers, no suspicion) and look again a probe
    // interval later. A probe of each would take a probe slot apiece, and in
    // a storm probationers arrive faster than probes go out. Unanswered
    // kProofPings times, a probe interval apart (a false verdict needs that
    // many losses in a row: 2 % per round trip at 1 % loss, so 1.6e-7; more
    // pings on a lossy network, proof_pings_needed: at 20 % loss, a 36 %
    // round-trip loss, 4 buried 1.7 % of live probationers, each in every
    // view): it never had standing (it was never in the view), so it is dead at once,
    // as a failed probe of it would have it; its Dead tells the others that
    // heard of it, and its introducer first-hand.
    if (m->heard_ns < m->live_since_ns + c.probation_ns / 2) {
      if (m->proof_pings < proof_pings_needed()) {
        // Proof pings are probes out of turn, over the ring's one a round:
        // under an egress budget they go only when the budget has room for
        // gossip (egress_budget.h), else the look is put off a probe interval
        // and the probation lasts longer. Unsized, a member that merged a
        // few hundred probationers at once pinged each (ci/budget-2k-atonce:
        // 50 a second against a 2 kB/s budget), its own acks then waited in
        // its egress queue past their probes' timeouts, and it was declared
        // dead while its own unanswered proof pings buried live members.
        core_.budget.refill(now_ns);
        if (core_.budget.gossip_room() < EgressBudget::kMinGossipBytes) {
          ++core_.counters.probation_proof_deferred;
          proof_checks_.emplace_back(now_ns + c.probe_interval_ns, name);
          continue;
        }
        if (!send_proof_ping(*m)) {
          // Nothing left to track the answer with: forgotten without a verdict.
          ++core_.counters.probation_forgotten;
          forget(name);
          introducers_.erase(m->name.id());
          fx_.forget_probationer(name);
          continue;
        }
        ++m->proof_pings;
        ++core_.counters.probation_proof_pings;
        proof_checks_.emplace_back(now_ns + c.probe_interval_ns, name);
        continue;
      }
      proof_seqs_.erase(m->name.id());
      ++core_.counters.probation_unproven;
      fx_.dead(m->incarnation, name, c.name, MemberStatus::kDead, now_ns);
      continue;
    }
    proof_seqs_.erase(m->name.id());
    introducers_.erase(m->name.id());
    fx_.promote(*m, now_ns);
  }
}

std::uint64_t Newcomers::next_deadline() const {
  std::uint64_t t = UINT64_MAX;
  if (!pending_.empty()) t = std::min(t, admission_.next_token_ns());
  if (!probationers_.empty()) t = std::min(t, probationers_.front().first);
  if (!proof_checks_.empty()) t = std::min(t, proof_checks_.front().first);
  if (!last_pings_.empty()) t = std::min(t, last_pings_.front().due_ns);
  if (!suspected_.empty()) t = std::min(t, suspected_.front().due_ns);
  return t;
}

}  // namespace gw::cp::engine
