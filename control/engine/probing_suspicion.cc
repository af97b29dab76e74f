// Suspicions (Lifeguard): who is told, when they run out, and the checks on
// suspicions held on others' word. The probe cycle: probing.cc.
#include <algorithm>

#include "control/engine/probing.h"

namespace gw::cp::engine {

std::uint32_t Probing::suspicion_transmit_cap(const Member& m, std::uint64_t now_ns) const {
  // Told, not flooded (suspicion_retransmit_mult): the suspect hears it from
  // each member that probes it meanwhile (start_probe), and every member
  // hears the Dead or the refutation that ends it. A newcomer's suspicion is
  // also how each member sees a storm coming (Newcomers::note_failure): every
  // member has to hear those, with the whole retransmit limit.
  return core_.newcomer(m, now_ns) ? 0 : core_.suspicion_retransmit_limit();
}

bool Probing::confirm(const Suspect& s, bool vouched) {
  if (suspicions_.find(s.node) == nullptr) return false;
  // One member's word is one member's word: a confirmation in the name of
  // another member, or of one outside the view, would let one key holder
  // bring a suspicion down to its minimum with invented accusers.
  if (!vouched) {
    ++core_.counters.suspicion_confirm_drop_unvouched;
    return true;
  }
  // Already suspected: an independent accuser shortens the timeout (Lifeguard).
  if (suspicions_.confirm(s.node, s.from)) {
    ++core_.counters.suspicion_confirmations;
    // Our own probe failed too: tell the accusers (confirm_to_accusers).
    // Another's confirmation is not passed on.
    if (s.from == core_.config.name) confirm_to_accusers(s);
  }
  return true;
}

void Probing::suspect(const Suspect& s, const Member& m, std::uint64_t now_ns, bool merged) {
  const EngineConfig& c = core_.config;
  const std::size_t n = core_.table.live_count();
  std::uint32_t k = c.suspicion_mult > 2 ? c.suspicion_mult - 2 : 0;
  // Too few members to expect k independent confirmations.
  if (n < k + 2) k = 0;
  const std::uint64_t min_ns = suspicion_min_timeout(c.suspicion_mult, n, c.probe_interval_ns);
  const std::uint64_t max_ns = c.suspicion_max_timeout_mult * min_ns;
  suspicions_.start(s.node, Suspicion(s.from, k, min_ns, max_ns, now_ns));
  // On others' word: if their verdict has not reached us by the time it
  // should have, we look for ourselves (hearsay_target).
  if (s.from != c.name && k > 0 && hearsay_checks_.size() < c.max_members)
    hearsay_checks_.push_back({now_ns + min_ns + c.probe_interval_ns, s.incarnation, m.name});
  spread_suspicion(s, m, now_ns, merged);
}

void Probing::spread_suspicion(const Suspect& s, const Member& m, std::uint64_t now_ns, bool merged) {
  const EngineConfig& c = core_.config;
  // A newcomer's suspicion is each member's storm signal: everyone hears it.
  // Without the ring nobody knows who probes the suspect next: an epidemic.
  if (core_.newcomer(m, now_ns) || !ring_shared()) {
    fx_.broadcast(s.node, s, PriorityClass::kGossip, suspicion_transmit_cap(m, now_ns));
    return;
  }
  // On the ring a suspicion is told, not gossiped: only our own accusation
  // goes out, and only to the suspect (to refute) and to the members that
  // probe it next (their failed probes confirm it to the accusers, and their
  // pings carry it to the suspect: the buddy rule). Each of those that fails
  // tells the ones after it, so the suspicion walks along with the probes,
  // at a few datagrams a round cluster-wide whatever N is; gossiped, every
  // member held every suspicion (N x sends per crash, and per false
  // suspicion). Members that heard it on our word pass nothing on. A
  // suspicion that starts here from a peer's tombstone in a sync is news to
  // everyone else (the peer gossips nothing): we tell it as our own.
  // The suspect still hears it from us, once: a key holder's suspicion told
  // to everyone but the suspect would otherwise run out unrefuted. On the
  // ring the holders of a suspicion are few (the accuser's next probers and
  // theirs), so this costs a few datagrams a suspicion.
  if (s.from != c.name && !merged) {
    if (fx_.send(m.addr(), PriorityClass::kGossip, Compound{s}, true)) ++core_.counters.suspicion_tells;
    return;
  }
  const Compound told{s};
  const auto tell = [&](const Address& to) {
    if (fx_.send(to, PriorityClass::kGossip, told, true)) ++core_.counters.suspicion_tells;
  };
  tell(m.addr());
  for (const Member* p : next_probers(m.name.str(), c.suspicion_told_probers, now_ns)) tell(p->addr());
  if (retells_.size() >= c.max_members) {
    ++core_.counters.retell_drop_full;
    return;
  }
  retells_.push_back({now_ns + c.probe_interval_ns, s});
}

void Probing::retell_suspicions(std::uint64_t now_ns) {
  while (!retells_.empty() && retells_.front().due_ns <= now_ns) {
    Retell r = std::move(retells_.front());
    retells_.pop_front();
    // Refuted, buried or forgotten meanwhile (or a newer suspicion of ours
    // retells itself): done.
    const Member* m = core_.table.find(r.suspect.node);
    if (m == nullptr || m->status != MemberStatus::kSuspect || m->incarnation != r.suspect.incarnation ||
        suspicions_.find(r.suspect.node) == nullptr)
      continue;
    if (fx_.send(m->addr(), PriorityClass::kGossip, Compound{r.suspect}, true)) ++core_.counters.suspicion_retells;
    r.due_ns = now_ns + core_.config.probe_interval_ns;
    retells_.push_back(std::move(r));
  }
}

std::optional<std::string> Probing::hearsay_target(std::uint64_t now_ns) {
  while (!hearsay_checks_.empty() && hearsay_checks_.front().due_ns <= now_ns) {
    const HearsayCheck c = std::move(hearsay_checks_.front());
    hearsay_checks_.pop_front();
    const Member* m = core_.table.find(c.name);
    const Suspicion* s = suspicions_.find(c.name);
    // Buried, refuted or forgotten meanwhile: the verdict reached us. Our own
    // probe failed on it already: we are one of the accusers. A newcomer in
    // a storm: our own failed probe would bury it at once (finish_probe_failed),
    // on one path where the accusers' verdict took several; the storm's own
    // probes of newcomers look for the dead among them.
    if (m == nullptr || m->status != MemberStatus::kSuspect || m->incarnation != c.incarnation || s == nullptr ||
        s->confirmers().contains(core_.config.name) || (core_.young(*m, now_ns) && fx_.in_storm(now_ns)))
      continue;
    return c.name.str();
  }
  return std::nullopt;
}

void Probing::confirm_to_accusers(const Suspect& s) {
  // The first accuser's suspicion times out first, and its Dead is what
  // buries the member everywhere: a member that holds the suspicion on
  // hearsay buries it when that Dead arrives (if none does, it checks for
  // itself: hearsay_target). So a confirmation has to reach the accusers,
  // not everyone: it goes to each accuser we know, directly, and into our
  // own broadcasts (our transmissions only; receivers count it and do not
  // pass it on). Re-gossiped by every member, as memberlist does, each of
  // the K confirmations cost a whole new dissemination of the suspicion:
  // its bytes grew with N x K per failure.
  const Suspicion* held = suspicions_.find(s.node);
  if (held == nullptr) return;
  const auto tell = [&](const std::string& accuser) {
    if (accuser == core_.config.name) return;
    const Member* a = core_.table.find(accuser);
    if (a == nullptr || a->is_tombstone() || a->probation) return;
    fx_.send(a->addr(), PriorityClass::kGossip, Compound{s}, true);
  };
  tell(held->accuser());
  for (const std::string& c : held->confirmers()) tell(c);
  if (const Member* m = core_.table.find(s.node)) spread_suspicion(s, *m, core_.last_now_ns, false);
}

void Probing::expire_suspicions(std::uint64_t now_ns) {
  // Every suspicion waits its Lifeguard timeout, a young member's in a storm
  // and a probationer's too: our own failed probe buries those at once (see
  // finish_probe_failed), but on others' word we wait. The accuser may be a
  // phantom that is failing itself, and a gossiped Suspect's `from` may only
  // be a sync peer that held the suspicion: buried at once on that, with the
  // Dead each of us then sends, a live newcomer was buried everywhere within
  // 0.1 s, before it could hear of the suspicion and refute.
  const std::vector<std::string> expired = suspicions_.due(now_ns);
  for (const std::string& name : expired) {
    const Member* m = core_.table.find(name);
    suspicions_.erase(name);
    if (m == nullptr || m->status != MemberStatus::kSuspect) continue;
    fx_.dead(m->incarnation, name, core_.config.name, MemberStatus::kDead, now_ns);
  }
}

}  // namespace gw::cp::engine
