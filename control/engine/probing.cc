// The probe cycle: our probes, the indirect probes we run for others, the
// probe ring and local health. Suspicions: probing_suspicion.cc.
#include <algorithm>

#include "control/engine/probing.h"

namespace gw::cp::engine {

namespace {
// The probe ring's schedule: in round r the member at position i of a view
// of l probes position i + ring_offset(r, l) (ring_target), so a target's
// prober is at its position less that (next_probers).
std::size_t ring_offset(std::uint64_t round, std::size_t l) { return 1 + static_cast<std::size_t>(round % (l - 1)); }
// A ring clock beyond this (about 278 years of milliseconds) is nobody's:
// ignored, so that nanoseconds never overflow.
constexpr std::uint64_t kMaxRingMs = 1ULL << 43;
}  // namespace

Probing::Probing(Core& core, Effects& fx, std::uint64_t now_ns)
    : core_(core),
      fx_(fx),
      probes_(core.config.max_pending_relays, core.config.max_members),
      awareness_(core.config.awareness_max_multiplier) {
  // Random phase so that members started together do not probe in lock step.
  next_probe_ns_ = now_ns + core_.rng.uniform(core_.config.probe_interval_ns) + 1;
  const std::uint64_t quiet = core_.config.probe_interval_ns > UINT64_MAX / kRingQuietIntervals / 2
                                  ? UINT64_MAX / 2
                                  : kRingQuietIntervals * core_.config.probe_interval_ns;
  ring_quiet_until_ns_ = now_ns > UINT64_MAX - quiet ? UINT64_MAX : now_ns + quiet;
}

// ---------------------------------------------------------------- messages

void Probing::note_ring_clock(std::uint64_t ring_ms, std::uint64_t now_ns) {
  if (ring_ms == 0 || ring_ms >= kMaxRingMs) return;
  const std::uint64_t theirs = ring_ms * 1'000'000ULL;
  // The first one, while we are still quiet: the cluster's, as it is.
  // After, only ahead of ours (the largest wins).
  if ((!ring_heard_ && now_ns < ring_quiet_until_ns_) || theirs > ring_clock(now_ns)) ring_lead_ns_ = theirs - now_ns;
  ring_heard_ = true;
}

void Probing::on_ping(const Address& from, const Ping& m, std::uint64_t now_ns) {
  const EngineConfig& c = core_.config;
  note_ring_clock(m.ring_ms, now_ns);
  // Meant for a member that had our address before (we restarted under another
  // name): do not vouch for it.
  if (!m.target.empty() && m.target != c.name) {
    ++core_.counters.ping_drop_misdirected;
    return;
  }
  // An answer to where no member can be: never (the ladder's rule for sources).
  if (core_.martian(m.source_addr)) {
    ++core_.counters.msg_drop_martian_addr;
    return;
  }
  // It pinged us itself: alive now.
  if (Member* src = core_.table.find(m.source); src != nullptr && !src->is_tombstone()) src->heard_ns = now_ns;
  const Address& to = m.source_addr.empty() ? from : m.source_addr;
  // Our build, only when asked (the prober does not know it): in steady
  // state no ping asks, and the ack is as it was.
  Compound msgs{Ack{m.seq_no, c.name, m.want_build ? core_.self().build() : std::string()}};
  // Buddy rule, both ways: a member we suspect, or hold dead or left, is
  // evidently running, so tell it at once; it refutes with a higher incarnation.
  // (Lifeguard does this on our pings; a slow prober may not ping it for long.)
  if (const Member* src = core_.table.find(m.source); src != nullptr && m.source != c.name) {
    if (src->status == MemberStatus::kSuspect)
      msgs.emplace_back(Suspect{src->incarnation, src->name, c.name});
    else if (src->status == MemberStatus::kDead)
      msgs.emplace_back(Dead{src->incarnation, src->name, c.name});
    else if (src->status == MemberStatus::kLeft)
      msgs.emplace_back(Leave{src->incarnation, src->name});
  }
  fx_.send(to, PriorityClass::kProbe, std::move(msgs), true);
}

void Probing::on_indirect_ping(const Address& from, const IndirectPing& m, std::uint64_t now_ns) {
  const EngineConfig& c = core_.config;
  // A probe of, or an answer to, where no member can be: never.
  if (core_.martian(m.target_addr) || core_.martian(m.source_addr)) {
    ++core_.counters.msg_drop_martian_addr;
    return;
  }
  Address target = m.target_addr;
  if (target.empty()) {
    const Member* t = core_.table.find(m.target);
    // No address to probe: nothing we can do for the requester.
    if (t == nullptr) return;
    target = t->addr();
  }
  const std::uint32_t seq = core_.take_seq();
  // Lifeguard: nack at 80% of the probe timeout, so it reaches the prober
  // before its probe closes (at probe_interval); a nack sent at the full
  // timeout arrives just after the prober gave up and never counts.
  Relay relay{m.seq_no, m.source_addr.empty() ? from : m.source_addr, m.want_nack,
              now_ns + c.probe_timeout_ns * 4 / 5, m.target};
  if (probes_.add_relay(seq, std::move(relay)) == nullptr) {
    ++core_.counters.relay_drop_full;
    return;
  }
  ++core_.counters.relay_started;
  fx_.send(target, PriorityClass::kProbe, Compound{Ping{seq, m.target, c.name, c.addr, ring_ms(now_ns)}}, true);
}

bool Probing::on_probe_ack(const Ack& m, std::uint64_t now_ns) {
  std::optional<Probe>& probe = probes_.current();
  if (!probe || probe->seq_no != m.seq_no) return false;
  // Our probe's number but not the probed member's name: it proves nothing
  // about the target (the pinged member answers with its own name).
  if (m.source != probe->target) {
    ++core_.counters.ack_drop_unsolicited;
    return true;
  }
  // It answered (directly or through a helper): alive now.
  if (Member* t = core_.table.find(m.source)) t->heard_ns = now_ns;
  if (!probe->indirect_sent) {
    // Healthy round trip: we are probably fine, relax.
    awareness_.apply_delta(-1);
    ++core_.counters.probe_ack_direct;
  } else {
    ++core_.counters.probe_ack_indirect;
  }
  core_.round_trip_loss.note(probe->indirect_sent);
  probe.reset();
  return true;
}

void Probing::on_relay_ack(const Ack& m) {
  const Relay* relay = probes_.find_relay(m.seq_no);
  // Late or unknown ack (probe or relay already finished, or a number we never
  // used): nothing waits for it.
  if (relay == nullptr) {
    ++core_.counters.ack_drop_unsolicited;
    return;
  }
  // Not from the member we ping for the requester: forwarding it would vouch
  // for a target that never answered.
  if (!relay->target.empty() && m.source != relay->target) {
    ++core_.counters.ack_drop_unsolicited;
    return;
  }
  fx_.send(relay->origin, PriorityClass::kProbe, Compound{Ack{relay->origin_seq, m.source}}, true);
  ++core_.counters.relay_ack_forwarded;
  probes_.erase_relay(m.seq_no);
}

void Probing::on_nack(const Nack& m) {
  std::optional<Probe>& probe = probes_.current();
  // A nack for a probe that is over (or never was) tells us nothing any more.
  if (!probe || probe->seq_no != m.seq_no) {
    ++core_.counters.nack_drop_unsolicited;
    return;
  }
  // Only the helpers we asked, once each: extra nacks would hide from Lifeguard
  // that our own network is the problem.
  auto helper = std::find(probe->awaiting_nack.begin(), probe->awaiting_nack.end(), m.source);
  if (helper == probe->awaiting_nack.end()) {
    ++core_.counters.nack_drop_unsolicited;
    return;
  }
  // Only the helpers that count for our health count their nacks.
  if (std::find(probe->counted_helpers.begin(), probe->counted_helpers.end(), m.source) != probe->counted_helpers.end())
    ++probe->nacks;
  probe->awaiting_nack.erase(helper);
  ++core_.counters.probe_nack_received;
}

// ---------------------------------------------------------------- helpers

bool Probing::helper_counts(const Member& h, std::uint64_t now_ns) const {
  std::uint64_t need = std::min(core_.config.helper_established_ns, core_.our_age(now_ns) / 2);
  // In a storm, no newcomer counts: one that is still in our view may be a
  // phantom nobody has probed yet.
  if (fx_.in_storm(now_ns)) need = std::max(need, core_.config.young_member_ns);
  return h.status == MemberStatus::kAlive && now_ns - std::min(now_ns, h.live_since_ns) >= need;
}

std::vector<std::string> Probing::probe_helpers(std::size_t k, const std::string& target) {
  // A random sample several times larger than k, then the longest-known of
  // it: in steady state that is a random choice among equals; in a storm of
  // short-lived members it keeps the helpers among the members that are
  // still there.
  std::vector<std::string> sample = fx_.random_peers(4 * k, target);
  std::stable_sort(sample.begin(), sample.end(), [&](const std::string& a, const std::string& b) {
    return core_.table.find(a)->live_since_ns < core_.table.find(b)->live_since_ns;
  });
  if (sample.size() > k) sample.resize(k);
  return sample;
}

// ---------------------------------------------------------------- the ring

bool Probing::ring_shared() const { return core_.config.probe_ring && core_.table.view_size() >= 3; }

bool Probing::ring_in_use() {
  const EngineConfig& c = core_.config;
  // A slow member (health above 0) probes less often than once a round: it
  // leaves the ring's timing alone and walks its own round-robin.
  if (!c.probe_ring || awareness_.score() != 0 || c.probe_interval_ns == 0) return false;
  const MemberTable& table = core_.table;
  if (ring_version_ != table.version()) {
    ring_version_ = table.version();
    ring_pos_ = table.view_lower_bound(c.name);
    // Not in our own view (leaving): no ring.
    ring_self_ = ring_pos_ < table.view_size() && table.view_at(ring_pos_).name == c.name;
  }
  return ring_self_ && table.view_size() >= 3;
}

std::optional<std::string> Probing::ring_target(std::uint64_t now_ns) {
  if (!ring_in_use()) return std::nullopt;
  const std::size_t l = core_.table.view_size();
  return core_.table.view_at((ring_pos_ + ring_offset(ring_clock(now_ns) / core_.config.probe_interval_ns, l)) % l)
      .name.str();
}

std::uint64_t Probing::next_probe_at(std::uint64_t now_ns) {
  const std::uint64_t interval = core_.config.probe_interval_ns;
  if (!ring_in_use()) return now_ns + probe_interval_ns();
  // Position i probes at i / L of each interval of the ring's clock: the
  // member probed by i in round r is probed by i - 1 in round r + 1, one
  // interval less 1/L later.
  const std::uint64_t ring_now = ring_clock(now_ns);
  const std::uint64_t phase = interval / core_.table.view_size() * ring_pos_;
  const std::uint64_t base = ring_now >= phase ? ring_now - phase : 0;
  std::uint64_t next = (base / interval + 1) * interval + phase;
  // The phase moved (members joined or left, or our ring clock caught up):
  // never twice within half an interval, never more than one and a half apart.
  if (next < ring_now + interval / 2) next += interval;
  // Back on our own clock.
  next -= ring_lead_ns_;
  // Never before the probe just started has its verdict: a new probe replaces
  // the current one, and one cut short accuses nobody. While members arrive
  // the phase moves on every arrival, and probes cut short at half an
  // interval never failed: in an arrival storm at 68 a second no dead
  // newcomer was ever found (phantom-storm at full size).
  if (const auto& p = probes_.current()) next = std::max(next, p->final_deadline_ns);
  return next;
}

std::vector<const Member*> Probing::next_probers(const std::string& target, std::uint32_t k,
                                                 std::uint64_t now_ns) const {
  // The ring's schedule read backwards (ring_offset): this round's prober of
  // the target, then the next ones', in our view (the views of a settled
  // cluster agree); never us.
  std::vector<const Member*> out;
  const MemberTable& table = core_.table;
  const std::size_t l = table.view_size();
  const std::size_t pos = table.view_lower_bound(target);
  if (l < 3 || pos >= l || table.view_at(pos).name != target) return out;
  const std::uint64_t round = ring_clock(now_ns) / core_.config.probe_interval_ns;
  for (std::uint64_t r = round; out.size() < k && r < round + k + 1; ++r) {
    const Member& p = table.view_at((pos + l - ring_offset(r, l)) % l);
    if (p.name != core_.config.name) out.push_back(&p);
  }
  return out;
}

// ---------------------------------------------------------------- the probe cycle

void Probing::start_probe(std::uint64_t now_ns) {
  const EngineConfig& c = core_.config;
  // A suspicion we hold on hearsay whose verdict never came goes first: it
  // is rare (a member that missed every copy of a Dead), and it would wait
  // the longest timeout otherwise. It takes this round's ring slot.
  std::optional<std::string> target = hearsay_target(now_ns);
  if (target) {
    ++core_.counters.probe_hearsay;
  } else {
    // In a storm, every other probe goes to a random newcomer: that is where
    // the dead are, and a member that missed news of a newcomer's death finds
    // out in seconds instead of a whole probe round (the view's size in probe
    // intervals). The round-robin walk goes on with the other half. Outside
    // a storm, probing is the ring (or SWIM's round robin) only.
    newcomer_next_ = !newcomer_next_;
    if (newcomer_next_ && fx_.in_storm(now_ns)) target = fx_.newcomer_to_probe(now_ns);
    if (target) ++core_.counters.probe_newcomer;
  }
  if (!target) target = ring_target(now_ns);
  if (!target) target = probes_.next_target(core_.table, c.name, core_.rng);
  // Nobody to probe yet.
  if (!target) return;
  const Member& m = *core_.table.find(*target);
  Probe p;
  p.target = *target;
  p.seq_no = core_.take_seq();
  p.start_ns = now_ns;
  p.direct_deadline_ns = now_ns + probe_timeout_ns();
  p.final_deadline_ns = now_ns + probe_interval_ns();
  p.incarnation = m.incarnation;
  probes_.current() = p;
  ++core_.counters.probe_started;
  // Its build unknown to us (learned through gossip, or a new life heard of
  // without one): the ack says it (Engine::on_ack).
  Compound msgs{Ping{p.seq_no, m.name, c.name, c.addr, ring_ms(now_ns), m.build().empty()}};
  // Buddy system (Lifeguard): tell a suspected member so at once, so it can refute.
  if (m.status == MemberStatus::kSuspect) msgs.emplace_back(Suspect{m.incarnation, m.name, c.name});
  fx_.send(m.addr(), PriorityClass::kProbe, std::move(msgs), true);
}

void Probing::send_indirect_probes(std::uint64_t now_ns) {
  const EngineConfig& c = core_.config;
  Probe& p = *probes_.current();
  p.indirect_sent = true;
  const Member* target = core_.table.find(p.target);
  // Forgotten meanwhile: the final deadline will close the probe.
  if (target == nullptr) return;
  const std::vector<std::string> helpers = probe_helpers(c.indirect_checks, p.target);
  // Only established helpers' silence counts against our health (Lifeguard):
  // a newcomer that is gone already cannot nack.
  p.counted_helpers.clear();
  for (const std::string& h : helpers)
    if (helper_counts(*core_.table.find(h), now_ns)) p.counted_helpers.push_back(h);
  p.expected_nacks = static_cast<std::uint32_t>(p.counted_helpers.size());
  p.helpers = static_cast<std::uint32_t>(helpers.size());
  p.awaiting_nack = helpers;
  for (const std::string& h : helpers) {
    ++core_.counters.probe_indirect_sent;
    fx_.send(core_.table.find(h)->addr(), PriorityClass::kProbe,
             Compound{IndirectPing{p.seq_no, p.target, target->addr(), true, c.name, c.addr}}, true);
  }
  // The same ping once more (fallback_ping): its ack closes the probe like a
  // helper's, so one lost datagram of the first round trip no longer leaves
  // the verdict to the helpers alone.
  if (c.fallback_ping) {
    ++core_.counters.probe_fallback_sent;
    fx_.send(target->addr(), PriorityClass::kProbe,
             Compound{Ping{p.seq_no, p.target, c.name, c.addr, ring_ms(now_ns), target->build().empty()}}, true);
  }
}

void Probing::finish_probe_failed(std::uint64_t now_ns) {
  const Probe p = *probes_.current();
  probes_.current().reset();
  // A newer life (or a refutation) of the target arrived while we waited: our
  // silence was about the incarnation we pinged, so it proves nothing about
  // this one (a restarted member would be suspected a second after it is
  // back). No verdict, and no blame on our health either.
  if (const Member* now = core_.table.find(p.target);
      now != nullptr && !now->is_tombstone() && now->incarnation != p.incarnation) {
    ++core_.counters.probe_outdated;
    return;
  }
  ++core_.counters.probe_failed;
  const Member* m = core_.table.find(p.target);
  // Lifeguard: established helpers that did not even nack suggest our own
  // network is the problem. With no helper at all (a tiny cluster) a failed
  // probe of an established member counts against us, as in memberlist; a
  // newcomer that vanished (a phantom storm) says nothing about our health.
  int delta = 0;
  if (p.expected_nacks > 0)
    delta = static_cast<int>(p.expected_nacks - std::min(p.nacks, p.expected_nacks));
  else if (p.helpers == 0 && m != nullptr && helper_counts(*m, now_ns))
    delta = 1;
  awareness_.apply_delta(delta);
  // Gone or buried meanwhile: nobody left to suspect.
  if (m == nullptr || m->is_tombstone()) return;
  // In a storm of short-lived members (many newcomers failing at once), a
  // newcomer that answers neither us nor any helper is far more likely gone
  // than slow, and has no standing to lose: declared dead at once, without the
  // suspicion wait. If it is alive after all, only its own next ping tells
  // it (buddy rule, on_ping): nobody probes the dead, and no gossip goes to a
  // newcomer buried in a storm (the engine's burial). Its refutation comes
  // too late for the others: each has buried it by then. So the verdict
  // needs two paths that failed: when no helper nacked (the helpers were
  // phantoms too, or our own network is the problem), only our own path
  // failed (the probe and its fallback ping, a moment apart on the same
  // links), and a short burst of loss would bury a live member everywhere;
  // it gets one more direct ping first (Newcomers::last_ping), and the
  // verdict a probe interval later. Outside a storm a newcomer is suspected
  // like anyone (a newcomer that stalls for a few seconds is not a phantom).
  // A probationer has no standing at all (it was never in the view, and its
  // proof pings are the second path): it too is dead at once, storm or not.
  if (m->probation || (core_.young(*m, now_ns) && fx_.in_storm(now_ns))) {
    if (!m->probation && p.nacks == 0 && fx_.last_ping(*m, now_ns)) return;
    ++core_.counters.young_declared_dead;
    fx_.dead(m->incarnation, p.target, core_.config.name, MemberStatus::kDead, now_ns);
    return;
  }
  fx_.suspect(Suspect{m->incarnation, p.target, core_.config.name}, now_ns);
}

void Probing::expire_relays(std::uint64_t now_ns) {
  for (const std::uint32_t seq : probes_.due_relays(now_ns)) {
    const Relay* relay = probes_.find_relay(seq);
    // Lifeguard nack: "I could not reach it either", so the prober knows its own
    // link is fine.
    if (relay->want_nack) {
      ++core_.counters.relay_nack_sent;
      fx_.send(relay->origin, PriorityClass::kProbe, Compound{Nack{relay->origin_seq, core_.config.name}}, true);
    }
    probes_.erase_relay(seq);
  }
}

void Probing::after_own_stall(std::uint64_t now_ns) {
  ++core_.counters.own_stalls;
  // A suspicion that ran out while we were away ran out on our absence: the
  // refutation may be in the backlog we have not read yet. Each waits at
  // least another probe interval (Lifeguard: a slow member's own timeouts are
  // the least trustworthy).
  suspicions_.hold_all(now_ns + probe_interval_ns());
  // So did our probe: its ack may be in the backlog too. No verdict, but our
  // health takes the blame.
  if (probes_.current() && probes_.current()->final_deadline_ns <= now_ns) {
    probes_.current().reset();
    ++core_.counters.probe_abandoned_stall;
    awareness_.apply_delta(1);
  }
}

void Probing::run_probes(std::uint64_t now_ns) {
  expire_relays(now_ns);
  if (probes_.current()) {
    if (!probes_.current()->indirect_sent && now_ns >= probes_.current()->direct_deadline_ns)
      send_indirect_probes(now_ns);
    if (now_ns >= probes_.current()->final_deadline_ns) finish_probe_failed(now_ns);
  }
  if (now_ns >= next_probe_ns_) {
    // A leaving member accuses nobody.
    if (!core_.leaving) start_probe(now_ns);
    next_probe_ns_ = next_probe_at(now_ns);
  }
}

void Probing::run_suspicions(std::uint64_t now_ns) {
  expire_suspicions(now_ns);
  retell_suspicions(now_ns);
}

std::uint64_t Probing::next_deadline() const {
  std::uint64_t t = next_probe_ns_;
  if (!retells_.empty()) t = std::min(t, retells_.front().due_ns);
  if (const auto& p = probes_.current()) t = std::min(t, p->indirect_sent ? p->final_deadline_ns : p->direct_deadline_ns);
  t = std::min(t, probes_.earliest_relay_deadline());
  return std::min(t, suspicions_.earliest());
}

}  // namespace gw::cp::engine
