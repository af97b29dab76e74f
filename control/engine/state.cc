// The member table's rules: how Alive, Suspect, Dead and Leave (heard, merged
// from a sync, or decided by a policy) change a member, newest incarnation
// first, and who hears of each change. The policies are told here, by the
// engine; none of them changes a member's status itself.
#include "control/engine/engine.h"

#include <algorithm>
#include <array>

namespace gw::cp::engine {

bool Engine::far_future(std::uint64_t incarnation, const Member* known) const {
  const std::uint64_t jump = core_.config.max_incarnation_jump;
  // Near the top of the range: refuting it (heard + 1) would overflow.
  if (incarnation > UINT64_MAX - jump) return true;
  // With a wall clock the absolute bound (beyond_clock) replaces the relative
  // one: a restart after months away may jump far, and nothing above the
  // clock passes anyway.
  if (core_.config.unix_clock_offset_ns != 0) return false;
  return known != nullptr && incarnation > known->incarnation && incarnation - known->incarnation > jump;
}

std::uint64_t Engine::incarnation_ceiling(std::uint64_t now_ns) const {
  const EngineConfig& c = core_.config;
  if (c.unix_clock_offset_ns == 0) return UINT64_MAX;
  return (now_ns + c.unix_clock_offset_ns + c.incarnation_clock_slack_ns) / 1000;
}

bool Engine::believable(std::uint64_t incarnation, const Member* known, std::uint64_t now_ns) {
  if (far_future(incarnation, known)) {
    ++core_.counters.update_drop_far_future;
    return false;
  }
  // Above the clock (Unix microseconds now + the skew slack): a lie (or a
  // clock far ahead of ours). Believed, it would pin the member where its
  // refutation (heard + 1) could not pass; refused, every claim a key holder
  // can make is one the member out-numbers a microsecond later.
  if (incarnation > incarnation_ceiling(now_ns)) {
    ++core_.counters.update_drop_beyond_clock;
    return false;
  }
  return true;
}

void Engine::member_joined(const Member& m, AliveSource source, std::uint64_t now_ns) {
  ++core_.counters.joins;
  // The settle sync: only an epidemic can have missed someone; a sync's
  // window or a join answer repairs a view itself (and a joiner has its
  // follow-ups and early sync).
  if (source == AliveSource::kGossip) anti_entropy_.settle_after_join(now_ns);
  core_.emit(EventKind::kJoin, m);
}

void Engine::refute(std::uint64_t heard_incarnation, bool told) {
  Member& me = core_.self();
  me.incarnation = std::max(me.incarnation, heard_incarnation) + 1;
  ++core_.counters.refutations;
  // Lifeguard: being suspected hints that we are the slow one.
  probing_.awareness().apply_delta(1);
  // A suspicion told on the ring is held by a few (Probing::spread_suspicion):
  // the refutation goes to the one that told us directly, and out as often
  // as a gossiped suspicion would (suspicion_retransmit_mult), which still
  // reaches all but about e^-10 of 10,000 members; with the whole limit every
  // false suspicion cost each member N-fold more than the few that held it
  // needed. A death, or a suspicion everyone held, is refuted with the whole
  // limit.
  broadcast(core_.config.name, core_.self_alive(), PriorityClass::kUrgent,
            told ? core_.suspicion_retransmit_limit() : 0);
  // The one that told us hears it first-hand: after a partition heals it may
  // be the only member on its side that knows of us at all.
  if (inbound_.from != nullptr) send(*inbound_.from, PriorityClass::kUrgent, Compound{core_.self_alive()}, false);
}

// ---------------------------------------------------------------- corrections

void Engine::correct_buried(const std::string& node, std::uint64_t incarnation, std::uint64_t now_ns) {
  // An established member's death may be a partition's false verdict: it is
  // told itself (it refutes if alive), and the sender gets our suspicion, not
  // our verdict (correct_established). A newcomer's (a storm's phantom),
  // or one we no longer hold failed, gets our Dead.
  const std::uint32_t id = anti_entropy_.any_failed() ? identities().find_name(node) : IdentityPool::kNone;
  if (FailedMembers::Entry* e = id != IdentityPool::kNone ? anti_entropy_.failed(id) : nullptr) {
    tell_if_failed(id, e->addr, now_ns);
    correct_established(e->name, e->incarnation);
    return;
  }
  Compound& out = inbound_.corrections;
  if (out.size() >= kMaxCorrections) return;
  for (const Message& c : out)
    if (const Dead* d = std::get_if<Dead>(&c); d != nullptr && d->node == node) return;
  out.emplace_back(Dead{incarnation, node, core_.config.name});
}

void Engine::correct_established(const Name& name, std::uint64_t incarnation) {
  // An established member we hold dead, which the sender holds alive (or only
  // suspects): our suspicion, not our verdict (memberlist merges a peer's
  // Dead as a suspicion too). The sender then suspects it: alive, it hears of
  // it and refutes (we tell it ourselves too: tell_if_failed); gone, the
  // sender's suspicion runs out and it stops holding a zombie. Its own probes
  // would rarely find it: on the probe ring, a member that few views hold is
  // probed by few. To a sender that suspects it already we are an independent
  // accuser (Lifeguard): with everyone else past it, no other confirmation
  // would come, and the suspicion would wait its longest timeout.
  Compound& out = inbound_.corrections;
  if (out.size() >= kMaxCorrections || inbound_.from == nullptr) return;
  for (const Message& c : out)
    if (const Suspect* s = std::get_if<Suspect>(&c); s != nullptr && s->node == name) return;
  // Once per (sender, member): the sender may hold the member dead by now
  // too, and would confirm back, and so on for ever.
  const std::pair<Address, std::uint32_t> key{*inbound_.from, name.id()};
  auto& confirmed = inbound_.confirmed;
  if (std::find(confirmed.begin(), confirmed.end(), key) != confirmed.end()) return;
  if (confirmed.size() >= kMaxConfirmed) confirmed.pop_front();
  confirmed.push_back(key);
  out.emplace_back(Suspect{incarnation, name.str(), core_.config.name});
}

void Engine::correct_stale(const Member& m) {
  Compound& out = inbound_.corrections;
  if (out.size() >= kMaxCorrections || m.is_tombstone() || m.probation) return;
  for (const Message& c : out)
    if (const Alive* a = std::get_if<Alive>(&c); a != nullptr && a->node == m.name) return;
  if (m.name == core_.config.name) {
    // Leaving: our Leave is the last word about us.
    if (!core_.leaving) out.emplace_back(core_.self_alive());
  } else {
    out.emplace_back(Alive{m.incarnation, m.name, m.addr(), m.tags(), m.protocol_version()});
  }
}

void Engine::correct(const Member& m) {
  Compound& out = inbound_.corrections;
  if (out.size() >= kMaxCorrections) return;
  // A Leave is the member's own word; a death only if it died a newcomer (a
  // storm's phantom). An established member's death may be a partition's
  // false verdict: spreading it to a side that still sees the member alive
  // would only make more (the member refutes when it hears, as usual).
  if (m.status == MemberStatus::kDead && !core_.young(m, m.state_change_ns)) {
    correct_established(m.name, m.incarnation);
    return;
  }
  for (const Message& c : out)
    if ((std::holds_alternative<Dead>(c) && std::get<Dead>(c).node == m.name) ||
        (std::holds_alternative<Leave>(c) && std::get<Leave>(c).node == m.name))
      return;
  if (m.status == MemberStatus::kLeft)
    out.emplace_back(Leave{m.incarnation, m.name});
  else
    out.emplace_back(Dead{m.incarnation, m.name, core_.config.name});
}

// ---------------------------------------------------------------- Alive

void Engine::apply_alive(const Alive& a, std::uint64_t now_ns, AliveSource source, std::uint32_t name_id) {
  const EngineConfig& c = core_.config;
  Counters& n = core_.counters;
  // Nameless, or a name no sane member has: not a member (and not worth storing).
  if (a.node.empty() || a.node.size() > kMaxNameBytes) {
    ++n.alive_drop_bad_name;
    return;
  }
  // Oversized metadata: refuse it rather than store or relay it.
  if (tag_bytes(a.tags) > c.max_tag_bytes) {
    ++n.tags_drop_too_large;
    return;
  }
  // No endpoint: a member we could never probe or gossip to (and a claim about
  // us that nobody else will store either).
  if (a.addr.empty()) {
    ++n.alive_drop_no_addr;
    return;
  }
  // An over-long build: not stored nor relayed, but the member is (a later
  // build with a longer version string must still join older members).
  if (a.build.size() > kMaxBuildBytes) {
    ++n.build_drop_too_long;
    Alive without = a;
    without.build.clear();
    apply_alive(without, now_ns, source, name_id);
    return;
  }
  Member* m = core_.table.find(a.node, name_id);
  // An address no member can have (broadcast, multicast, loopback, 0.0.0.0,
  // ours): stored, every probe and gossip to it would go there. About us it
  // is another host claiming our name (below) unless it is our own address.
  if (core_.martian(a.addr) && !(m != nullptr && m->name.id() == core_.self_name.id())) {
    ++n.msg_drop_martian_addr;
    return;
  }
  // Incarnations only grow by the member's own refutations and restarts: one far
  // beyond what we hold is corrupt or hostile, and trusting it would pin the
  // member (or us, through refutation) near the top of the range.
  if (!believable(a.incarnation, m, now_ns)) return;
  // About us (our entry is always in the table: compared by name id, not text).
  if (m != nullptr && m->name.id() == core_.self_name.id()) {
    // We are the authority.
    const Member& me = core_.self();
    // Our name at another address: another host claims to be us (or our previous
    // life echoes). Never trusted; refute, so our own entry wins everywhere.
    if (a.addr != me.addr()) {
      ++n.conflict_self_name;
      if (!core_.leaving) refute(a.incarnation);
      return;
    }
    // Leaving: our Leave is the last word about us.
    if (core_.leaving) return;
    // A newer incarnation of "us" (our previous life), or ours with other
    // metadata: refute by out-numbering it.
    if (a.incarnation > me.incarnation || (a.incarnation == me.incarnation && a.tags != me.tags()))
      refute(a.incarnation);
    return;
  }
  if (m == nullptr) {
    admit_new(a, now_ns, source);
    return;
  }
  if (m->is_tombstone()) {
    // The dead stay dead: only a restart (a newer incarnation) brings one back.
    if (a.incarnation <= m->incarnation) {
      ++n.alive_drop_tombstone;
      correct(*m);
      tell_if_failed(m->name.id(), m->addr(), now_ns);
      return;
    }
    anti_entropy_.note_returned(m->name.id(), a.addr, inbound_.from != nullptr && *inbound_.from == a.addr, now_ns);
    m->incarnation = a.incarnation;
    set_profile(*m, a, true);
    core_.table.set_status(*m, MemberStatus::kAlive, now_ns);
    probing_.add_member(m->name);
    newcomers_.remember(*m);
    member_joined(*m, source, now_ns);
    broadcast(a.node, a, PriorityClass::kGossip, 0);
    return;
  }
  // Older or same incarnation: ignore (only the member itself raises it). At
  // another address it is a second host claiming the name (or an old address
  // echoing): the live member keeps its address until it moves with a newer
  // incarnation.
  if (a.incarnation <= m->incarnation) {
    if (a.addr != m->addr()) {
      ++n.conflict_address;
      return;
    }
    ++n.update_drop_stale;
    // The same life, told again: what it runs, if said and not what we hold
    // (we heard of it first from a refutation, or a peer before releases),
    // is the one thing taken from it.
    if (a.incarnation == m->incarnation && !m->is_tombstone() &&
        ((!a.build.empty() && a.build != m->build()) ||
         (a.protocol_version != 0 && a.protocol_version != m->protocol_version())))
      set_profile(*m, a, false);
    return;
  }
  const bool changed = a.addr != m->addr() || a.tags != m->tags();
  m->incarnation = a.incarnation;
  set_profile(*m, a, true);
  // A newer incarnation refutes any suspicion.
  probing_.drop_suspicion(a.node);
  core_.table.set_status(*m, MemberStatus::kAlive, now_ns);
  // On probation: not in the view yet, so nothing to tell anyone.
  if (m->probation) return;
  if (changed) {
    ++n.updates;
    core_.emit(EventKind::kUpdate, *m);
  }
  broadcast(a.node, a, PriorityClass::kGossip, 0);
}

void Engine::set_profile(Member& m, const Alive& a, bool new_life) {
  // A newer incarnation that says no build (gossip relays it without, and a
  // restart looks like a refutation or a tag change from afar): the build of
  // the life before may be gone, so it is unknown (`-`) until said
  // first-hand; our next probe of it asks (Ping.want_build), within a ring
  // round. The same life told again keeps what we hold.
  const std::uint32_t pv = a.protocol_version != 0 ? a.protocol_version : m.protocol_version();
  const std::string_view build =
      !a.build.empty() || new_life ? std::string_view(a.build) : std::string_view(m.build());
  m.set_profile(a.addr, a.tags, pv, build);
}

void Engine::take_build(const std::string& node, const std::string& build) {
  // Bounded like an Alive's: dropped and counted, the member unchanged.
  if (build.size() > kMaxBuildBytes) {
    ++core_.counters.build_drop_too_long;
    return;
  }
  Member* m = core_.table.find(node);
  // The responder's own word about the life that answered: it is the life we
  // hold (a newer one we have not heard of yet clears it again when we do).
  if (m == nullptr || m->is_tombstone() || m->name.id() == core_.self_name.id() || m->build() == build) return;
  m->set_profile(m->addr(), m->tags(), m->protocol_version(), build);
}

void Engine::admit_new(const Alive& a, std::uint64_t now_ns, AliveSource source) {
  Counters& n = core_.counters;
  MemberTable& table = core_.table;
  // Its tombstone expired, and this is no newer life: stale gossip still
  // moving (a restart comes with a higher incarnation).
  if (const auto dead_at = table.buried(a.node); dead_at && a.incarnation <= *dead_at) {
    ++n.alive_drop_graveyard;
    correct_buried(a.node, *dead_at, now_ns);
    return;
  }
  // A never-seen member: admission control first (bounded table, policy, rate).
  if (table.full()) {
    ++n.admission_drop_table_full;
    return;
  }
  // Or one we knew as an established member and hold failed, whose tombstone
  // expired (a partition longer than tombstone_ttl_ns heals, a member comes
  // back after a long outage): it is no newcomer, and comes back as from a
  // tombstone, without the admission rate or probation. After a 7-minute
  // split, half the cluster came back at once, waited for admission tokens
  // at 100 a second and was held on probation as an arrival surge.
  const std::uint32_t failed_id = anti_entropy_.any_failed() ? identities().find_name(a.node) : IdentityPool::kNone;
  const bool returning = failed_id != IdentityPool::kNone && anti_entropy_.failed(failed_id) != nullptr;
  // A whole-view answer (our join, a follow-up, a rejoin) is one member's
  // word: a never-seen member in it goes through admission as gossip does,
  // unless another member's answer listed it too (the cluster as it is, at
  // once: a joiner asks every seed, then two other members) or it is the
  // answering member's own entry (first-hand). Without the second word, a
  // key-holding seed put 60,000 phantoms in a joiner's view at once (issue
  // 51 item 5); with every entry through admission, a mass restart's
  // members waited for tokens and mass-restart-4500-waves at 2,700 went
  // from 7,270 false failures to 79,408.
  const bool from_join = source == AliveSource::kJoinAnswer;
  bool at_once = returning;
  if (from_join && !returning) {
    const bool first_hand = inbound_.answer_from != nullptr && a.node == *inbound_.answer_from;
    at_once = first_hand || newcomers_.corroborated(a.node, inbound_.from, now_ns);
    if (!at_once && inbound_.from != nullptr) ++n.join_view_one_word;
  }
  if (at_once) {
    if (!newcomers_.policy_allows(a)) {
      ++n.admission_drop_policy;
      return;
    }
  } else if (newcomers_.admit(a, now_ns, from_join) != AdmitVerdict::kAdmit) {
    return;
  }
  Member fresh;
  fresh.name = a.node;
  fresh.set_profile(a.addr, a.tags, a.protocol_version, a.build);
  fresh.incarnation = a.incarnation;
  fresh.state_change_ns = now_ns;
  fresh.probation = !returning && newcomers_.probation_now(now_ns);
  Member* m = table.insert(std::move(fresh));
  if (m == nullptr) return;
  probing_.add_member(m->name);
  if (returning) {
    anti_entropy_.note_returned(m->name.id(), a.addr, inbound_.from != nullptr && *inbound_.from == a.addr, now_ns);
    newcomers_.remember(*m);
  } else {
    newcomers_.admitted(*m, inbound_.from, now_ns, !from_join);
  }
  if (m->probation) return;
  member_joined(*m, source, now_ns);
  if (!from_join) broadcast(a.node, a, PriorityClass::kGossip, 0);
}

// ---------------------------------------------------------------- Suspect

bool Engine::vouched(const std::string& from) const {
  // Our own failed probe (a tick, not a datagram).
  if (inbound_.from == nullptr) return from == core_.config.name;
  // Our name from outside: somebody else's word.
  if (from == core_.config.name) return false;
  // A live member of the view, at the address the datagram came from: a
  // confirmation reaches us from its confirmer itself (confirm_to_accusers
  // sends it directly or in its own broadcasts; nobody passes another's on).
  const Member* a = core_.table.find(from);
  return a != nullptr && !a->probation && (a->status == MemberStatus::kAlive || a->status == MemberStatus::kSuspect) &&
         a->addr() == *inbound_.from;
}

void Engine::apply_suspect(const Suspect& s, std::uint64_t now_ns, bool merged) {
  Counters& n = core_.counters;
  Member* m = core_.table.find(s.node);
  // Unknown member: we cannot suspect what we never admitted. If we buried
  // it, the sender is behind: tell it.
  if (m == nullptr) {
    ++n.update_drop_unknown;
    if (const auto dead_at = core_.table.buried(s.node); dead_at && s.incarnation <= *dead_at)
      correct_buried(s.node, *dead_at, now_ns);
    return;
  }
  // Beyond belief (corrupt or hostile): about us it would make us refute to an
  // absurd incarnation.
  if (!believable(s.incarnation, m, now_ns)) return;
  // Older incarnation: already refuted. The sender missed the refutation;
  // with everyone else past it, nothing would reach it before its own
  // suspicion runs out (no confirmations come): tell it.
  if (s.incarnation < m->incarnation) {
    ++n.update_drop_stale;
    correct_stale(*m);
    return;
  }
  // Already suspected: a confirmation, if it is a new accuser that vouches
  // for itself.
  if (probing_.confirm(s, vouched(s.from))) return;
  // Dead or left: the accuser is behind (tell it); suspected already: nothing new.
  if (m->is_tombstone()) {
    if (s.incarnation <= m->incarnation) correct(*m);
    return;
  }
  if (m->status != MemberStatus::kAlive) return;
  if (s.node == core_.config.name) {
    // About us: refute (unless we are leaving anyway).
    if (!core_.leaving) refute(s.incarnation, probing_.ring_shared() && !core_.newcomer(*m, now_ns));
    return;
  }
  m->incarnation = s.incarnation;
  core_.table.set_status(*m, MemberStatus::kSuspect, now_ns);
  ++n.suspicions;
  newcomers_.note_suspected(*m, now_ns);
  probing_.suspect(s, *m, now_ns, merged);
}

// ---------------------------------------------------------------- Dead and Leave

void Engine::apply_dead(std::uint64_t incarnation, const std::string& node, const std::string& from,
                        MemberStatus status, std::uint64_t now_ns, bool unproven) {
  Counters& n = core_.counters;
  Member* m = core_.table.find(node);
  // Unknown member: news of its death overtook news of its life (or we never
  // admitted it). Nothing to bury, but a trace in the graveyard, so that the
  // Alive still on its way cannot bring it in after the others buried it.
  if (m == nullptr) {
    ++n.update_drop_unknown;
    if (node != core_.config.name && !node.empty() && node.size() <= kMaxNameBytes &&
        believable(incarnation, nullptr, now_ns))
      core_.table.bury(node, incarnation, now_ns);
    return;
  }
  // Beyond belief (corrupt or hostile): it would bury the member for good, or
  // make us refute to an absurd incarnation.
  if (!believable(incarnation, m, now_ns)) return;
  // Older incarnation: the member has moved on since (the sender missed it:
  // tell it, as for a stale suspicion).
  if (incarnation < m->incarnation) {
    ++n.update_drop_stale;
    correct_stale(*m);
    return;
  }
  // Already a tombstone: nothing new, except that a failed member's own
  // Leave (late, or given by an operator's force-leave) marks it left.
  if (m->is_tombstone() && !(status == MemberStatus::kLeft && m->status == MemberStatus::kDead)) return;
  if (node == core_.config.name) {
    // About us: refute, unless it is our own farewell coming back. Held dead,
    // we were cut off from the teller (a partition, a long stall): we rejoin
    // through it, whole views both ways, so that it corrects what our view
    // kept of members that died meanwhile (zombies: on the probe ring, a
    // member that few views hold is probed by few) and we learn what we
    // missed.
    if (core_.leaving) return;
    refute(incarnation);
    if (status == MemberStatus::kDead && inbound_.from != nullptr) joining_.rejoin(*inbound_.from, now_ns);
    return;
  }
  // A probation's verdict about a member we hold established: the declarer
  // never admitted it and could not prove it alive (its proof pings went
  // unanswered), but the member never had a suspicion to refute. For us it
  // is that member's suspicion (SWIM: nobody is dead before it could
  // refute): the member hears it and refutes, or dies at the suspicion's
  // timeout. Applied as a verdict, one member's unanswered proof pings
  // buried live members in every view (wan at 20 % loss: 614,399 false
  // failures; ci/budget-2k-atonce seed 9: 239). A probationer of ours, or a
  // young member in a storm (almost all phantoms), is buried at once as
  // before.
  if (unproven && status == MemberStatus::kDead && !m->is_tombstone() && !m->probation &&
      !(core_.young(*m, now_ns) && in_storm(now_ns))) {
    ++n.dead_unproven_suspected;
    apply_suspect(Suspect{incarnation, node, from}, now_ns, true);
    return;
  }
  m->incarnation = incarnation;
  probing_.drop_suspicion(node);
  // A probationer never joined the view: it leaves no event either (its Dead
  // still goes out, for the others that heard of it).
  // Ours is a probation's verdict if we held it on probation.
  const bool our_verdict = from == core_.config.name;
  const bool was_probation =
      newcomers_.burying(*m, incarnation, status, inbound_.from, now_ns, unproven || our_verdict);
  // A newcomer's death (in a storm, thousands) waits for the next round like
  // any news; an established member's is what every application is waiting
  // for: it goes out now, and each member that learns it passes it on at once.
  if (!was_probation && !core_.young(*m, now_ns)) dissemination_.soon(now_ns);
  core_.table.set_status(*m, status, now_ns);
  // Keep gossiping to it a while: if it is alive after all, it hears and refutes.
  // Not to a probationer, nor to a young member in a storm: those were buried
  // without the wait because they are almost all phantoms, and in a storm of
  // them every gossip round would go mostly to the dead, starving the living
  // of the very deaths that round carries.
  if (status == MemberStatus::kDead && !was_probation && !(core_.young(*m, now_ns) && in_storm(now_ns)))
    dissemination_.gossip_to_the_dead(m->name);
  // An established member's death may be a partition's: reconnected to for
  // reconnect_timeout_ns. One that left is gone by its own word.
  if (status == MemberStatus::kDead && !was_probation && !core_.young(*m, m->state_change_ns))
    anti_entropy_.note_failed(*m, now_ns);
  else
    anti_entropy_.note_back(m->name.id());
  if (status == MemberStatus::kLeft) {
    ++n.leaves;
    if (!was_probation) core_.emit(EventKind::kLeave, *m);
    broadcast(node, Leave{incarnation, node}, PriorityClass::kUrgent, 0);
  } else {
    ++n.deaths;
    if (!was_probation) core_.emit(EventKind::kFailed, *m);
    // Only the member that declared the death names itself: no receiver
    // acts on who it was, and relays are nearly all of a death's
    // transmissions (N x retransmit_limit), a third of whose bytes the
    // name was.
    // A probation's verdict stays one (ours, or one we took as a verdict
    // because we held it on probation or young in a storm).
    const bool verdict_unproven = unproven || (was_probation && our_verdict);
    broadcast(node,
              Dead{incarnation, node, from == core_.config.name ? from : std::string{}, verdict_unproven},
              PriorityClass::kUrgent, 0);
  }
}

// ---------------------------------------------------------------- syncs

void Engine::merge(const std::vector<MemberState>& members, const std::vector<Release>& releases,
                   const std::string& from, std::uint64_t now_ns, bool from_join) {
  MemberTable& table = core_.table;
  Counters& n = core_.counters;
  // Whose answer this is: its own entry is first-hand (admit_new).
  inbound_.answer_from = from_join ? &from : nullptr;
  // What the members run: the sync lists each release once and its entries
  // refer to them by position. An over-long build is dropped once for the
  // part (counted), its protocol version kept.
  const std::vector<Release>* listed = &releases;
  std::vector<Release> checked;
  for (std::size_t i = 0; i < releases.size(); ++i) {
    if (releases[i].build.size() <= kMaxBuildBytes) continue;
    if (checked.empty()) checked = releases;
    checked[i].build.clear();
    ++n.build_drop_too_long;
    listed = &checked;
  }
  static const Release kNotSaid;
  auto release_of = [&](const MemberState& s) -> const Release& {
    // None listed: a sender before releases says nothing of them.
    if (listed->empty()) return kNotSaid;
    // Names no release of its part: the member is kept, what it runs unknown.
    if (s.release >= listed->size()) {
      ++n.release_drop_unlisted;
      return kNotSaid;
    }
    return (*listed)[s.release];
  };
  // One Alive for all the members: its strings keep their storage from
  // member to member.
  Alive a;
  // A sync carries hundreds of members: each entry is asked for a few
  // members ahead of its turn, so that its cache miss overlaps the work.
  // Their ids are kept (in a ring of twice that) for their turn.
  constexpr std::size_t kAhead = 8;
  std::array<std::uint32_t, 2 * kAhead> ids;
  for (std::size_t i = 0; i < std::min(kAhead, members.size()); ++i) ids[i] = table.prefetch(members[i].node);
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i + kAhead < members.size()) ids[(i + kAhead) % ids.size()] = table.prefetch(members[i + kAhead].node);
    const MemberState& s = members[i];
    switch (s.status) {
      case MemberStatus::kAlive: {
        const Release& r = release_of(s);
        a.incarnation = s.incarnation;
        a.node = s.node;
        a.addr = s.addr;
        a.tags = s.tags;
        a.protocol_version = r.protocol_version;
        a.build = r.build;
        apply_alive(a, now_ns, from_join ? AliveSource::kJoinAnswer : AliveSource::kSync, ids[i % ids.size()]);
        break;
      }
      case MemberStatus::kLeft:
        apply_dead(s.incarnation, s.node, s.node, MemberStatus::kLeft, now_ns);
        break;
      case MemberStatus::kSuspect:
      case MemberStatus::kDead:
        // Merged deaths start as suspicion (memberlist): the member gets a chance
        // to refute before every node buries it on one peer's word. In a storm,
        // a dead newcomer is buried at once (as our own failed probe would).
        if (s.status == MemberStatus::kDead && in_storm(now_ns)) {
          const Member* m = table.find(s.node);
          if (m != nullptr && !m->is_tombstone() && core_.young(*m, now_ns)) {
            apply_dead(s.incarnation, s.node, from, MemberStatus::kDead, now_ns);
            break;
          }
        }
        apply_suspect(Suspect{s.incarnation, s.node, from}, now_ns, true);
        break;
    }
  }
  inbound_.answer_from = nullptr;
}

}  // namespace gw::cp::engine
