#include "control/engine/engine.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <type_traits>
#include <utility>

#include "control/engine/wire_size.h"

namespace gw::cp::engine {
namespace {

std::size_t tag_bytes(const std::vector<Tag>& tags) {
  std::size_t n = 0;
  for (const Tag& t : tags) n += t.key.size() + t.value.size();
  return n;
}

// Timers must advance: a zero interval would make tick() spin. The incarnation
// bounds must leave room for refutation: a zero jump would freeze every member,
// and one near UINT64_MAX would leave no believable incarnation at all.
EngineConfig sanitized(EngineConfig c) {
  for (std::uint64_t* d : {&c.probe_interval_ns, &c.probe_timeout_ns, &c.gossip_interval_ns, &c.push_pull_interval_ns,
                           &c.sync_timeout_ns, &c.join_retry_min_ns})
    if (*d == 0) *d = kMillisecond;
  c.join_retry_max_ns = std::max(c.join_retry_max_ns, c.join_retry_min_ns);
  if (c.max_incarnation_jump == 0) c.max_incarnation_jump = EngineConfig{}.max_incarnation_jump;
  c.max_incarnation_jump = std::min<std::uint64_t>(c.max_incarnation_jump, 1ULL << 63);
  c.initial_incarnation = std::min(c.initial_incarnation, UINT64_MAX - c.max_incarnation_jump);
  return c;
}

}  // namespace

Engine::Engine(EngineConfig config, std::uint64_t seed, std::uint64_t now_ns)
    : config_(sanitized(std::move(config))),
      rng_(seed),
      table_(std::max<std::uint32_t>(config_.max_members, 1), config_.max_graveyard, config_.tombstone_ttl_ns),
      probes_(config_.max_pending_relays, config_.max_members),
      broadcasts_(config_.max_broadcasts),
      syncs_(config_.max_concurrent_syncs, config_.sync_timeout_ns, config_.sync_answer_rate, config_.sync_answer_burst,
             config_.max_sync_bytes, config_.max_packet_bytes, now_ns, config_.join_answer_rate,
             config_.join_answer_burst),
      admission_(config_.admit_rate, config_.admit_burst, config_.allowed_name_prefixes, config_.required_tags, now_ns),
      awareness_(config_.awareness_max_multiplier) {
  Member me;
  me.name = config_.name;
  self_name_ = me.name;
  me.incarnation = config_.initial_incarnation;
  me.set_profile(config_.addr, tag_bytes(config_.tags) <= config_.max_tag_bytes ? config_.tags : std::vector<Tag>{},
                 config_.protocol_version);
  me.state_change_ns = now_ns;
  table_.insert(std::move(me));
  // Announce ourselves to whoever we talk to first.
  queue_broadcast(config_.name, self_alive(), PriorityClass::kGossip);
  // Random phase so that members started together do not probe in lock step.
  next_probe_ns_ = now_ns + rng_.uniform(config_.probe_interval_ns) + 1;
  next_gossip_ns_ = now_ns + rng_.uniform(config_.gossip_interval_ns) + 1;
  next_sync_ns_ = now_ns + config_.push_pull_interval_ns + rng_.uniform(config_.push_pull_interval_ns);
  next_reconnect_ns_ = next_reconnect_at(now_ns);
}

// ---------------------------------------------------------------- helpers

Member& Engine::self() { return *table_.find(self_name_); }
const Member& Engine::self() const { return *table_.find(self_name_); }

std::uint64_t Engine::incarnation() const { return self().incarnation; }

Alive Engine::self_alive() const {
  const Member& me = self();
  return Alive{me.incarnation, me.name, me.addr(), me.tags(), me.protocol_version()};
}

namespace {
// The probe ring's schedule: in round r the member at position i of a view
// of l probes position i + ring_offset(r, l) (ring_target), so a target's
// prober is at its position less that (next_probers).
std::size_t ring_offset(std::uint64_t round, std::size_t l) { return 1 + static_cast<std::size_t>(round % (l - 1)); }

// ceil(log10(n + 1)): memberlist's retransmit scale.
std::uint32_t retransmit_scale(std::size_t live) {
  return static_cast<std::uint32_t>(std::ceil(std::log10(static_cast<double>(live) + 1.0)));
}
}  // namespace

std::uint32_t Engine::retransmit_limit() const {
  return std::max<std::uint32_t>(1, config_.retransmit_mult * retransmit_scale(table_.live_count()));
}

std::uint32_t Engine::suspicion_retransmit_limit() const {
  return std::max<std::uint32_t>(1, config_.suspicion_retransmit_mult * retransmit_scale(table_.live_count()));
}

std::uint64_t Engine::sync_interval() const {
  return push_pull_scale(config_.push_pull_interval_ns, table_.live_count());
}

std::vector<Member> Engine::members() const {
  std::vector<Member> out;
  out.reserve(table_.size());
  table_.for_each([&](const Member& m) { out.push_back(m); });
  return out;
}

Counters Engine::counters() const {
  Counters c = counters_;
  c.broadcast_drop = broadcasts_.drops();
  c.broadcast_superseded = broadcasts_.superseded();
  c.graveyard_evictions = table_.graveyard_evictions();
  return c;
}

std::optional<std::uint64_t> Engine::suspicion_deadline(const std::string& name) const {
  const Suspicion* s = suspicions_.find(name);
  if (s == nullptr) return std::nullopt;
  return s->deadline();
}

std::optional<std::uint32_t> Engine::suspicion_confirmations(const std::string& name) const {
  const Suspicion* s = suspicions_.find(name);
  if (s == nullptr) return std::nullopt;
  return s->confirmations();
}

std::vector<std::string> Engine::random_peers(std::size_t k, const std::string& exclude, bool include_suspect) {
  std::vector<std::string> out;
  if (k == 0) return out;
  // By name id (one text per id): no hash or string compare per candidate.
  const std::uint32_t self_id = self_name_.id();
  const std::uint32_t exclude_id = identities().find_name(exclude);  // kNone if empty or unknown
  auto usable = [&](const Name& name) {
    if (name.id() == self_id || name.id() == exclude_id) return false;
    const Member* m = table_.find(name);
    if (m == nullptr) return false;
    const bool eligible = !m->probation && (m->status == MemberStatus::kAlive ||
                                            (include_suspect && m->status == MemberStatus::kSuspect));
    return eligible && std::find(out.begin(), out.end(), name.str()) == out.end();
  };
  const std::vector<Name>& list = probes_.list();
  if (list.size() <= 4 * k + 16) {
    // Small: exact selection over a shuffled copy.
    std::vector<std::string> all;
    for (const Name& name : list)
      if (usable(name)) all.push_back(name.str());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    rng_.shuffle(all);
    if (all.size() > k) all.resize(k);
    return all;
  }
  // Large: sample (bounded attempts; the probe list holds every live member).
  for (std::size_t attempt = 0; attempt < 8 * k && out.size() < k; ++attempt) {
    const Name& name = list[static_cast<std::size_t>(rng_.uniform(list.size()))];
    if (usable(name)) out.push_back(name.str());
  }
  return out;
}

void Engine::note_newcomer_failure(const std::string& name, std::uint64_t now_ns) {
  // Distinct members: one newcomer that stalls again and again is no storm.
  const std::uint64_t h = std::hash<std::string>{}(name);
  for (const auto& [at, seen] : newcomer_failures_)
    if (seen == h) return;
  newcomer_failures_.emplace_back(now_ns, h);
  // Only the count within the window matters: keep no more than that.
  while (newcomer_failures_.size() > config_.storm_newcomer_failures) newcomer_failures_.pop_front();
  if (in_storm(now_ns)) storm_until_ns_ = now_ns + config_.storm_window_ns;
}

bool Engine::in_storm(std::uint64_t now_ns) const {
  if (config_.storm_newcomer_failures == 0) return false;
  if (now_ns < storm_until_ns_) return true;
  return newcomer_failures_.size() >= config_.storm_newcomer_failures &&
         now_ns - newcomer_failures_.front().first <= config_.storm_window_ns;
}

void Engine::note_arrival(std::uint64_t now_ns) {
  if (config_.surge_min_arrivals == 0 || config_.surge_window_ns == 0) return;
  arrivals_.push_back(now_ns);
  while (!arrivals_.empty() && now_ns - arrivals_.front() > config_.surge_window_ns) arrivals_.pop_front();
  // A member that is starting, and the cluster with it, sees everybody arrive.
  if (now_ns - std::min(now_ns, self().live_since_ns) < config_.probation_ns) return;
  // Once on, a surge lasts while the arrivals go on, whatever their rate: in
  // one, the others hold the newcomers on probation and gossip none of them,
  // so fewer arrivals reach us than made the surge, and the phantoms that
  // got into the view (before it was recognised) raised the bar. A surge that
  // lapsed before the storm was recognised let a dozen phantoms into our view
  // whose deaths nobody gossips (they were probationers everywhere else):
  // ci/storm-onset seed 154, view 9 over the live members for seconds.
  if (in_surge(now_ns)) {
    surge_until_ns_ = now_ns + config_.surge_window_ns;
    return;
  }
  const std::size_t need =
      std::max<std::size_t>(config_.surge_min_arrivals, table_.live_count() * config_.surge_arrival_pct / 100);
  if (arrivals_.size() < need) return;
  ++counters_.surges;
  surge_until_ns_ = now_ns + config_.surge_window_ns;
}

void Engine::joined(const Member& m, AliveSource source, std::uint64_t now_ns) {
  ++counters_.joins;
  // The settle sync: only an epidemic can have missed someone; a sync's
  // window or a join answer repairs a view itself (and a joiner has its
  // follow-ups and early sync).
  if (source == AliveSource::kGossip) settle_sync_ns_ = now_ns + settle_delay();
  emit(EventKind::kJoin, m);
}

void Engine::gossip_soon(std::uint64_t now_ns) {
  // Three rounds in a row, a tenth of the interval apart: one round of pushes
  // to gossip_nodes peers each misses about e^-gossip_nodes of the members,
  // who would then wait for the regular rounds; three leave almost none.
  // At most one such series per gossip interval, however much news arrives:
  // a mass crash brings hundreds of deaths over a second or two, and a series
  // for each kept every member sending ten rounds an interval, each datagram
  // carrying the few deaths heard since the last (at 10,000 members with 100
  // crashes, 200 datagrams per member, a third of the deaths' bytes in
  // datagram overhead). A death heard after the series waits for the next
  // regular round, or the next series an interval on.
  if (eager_series_ns_ && now_ns - std::min(now_ns, *eager_series_ns_) < config_.gossip_interval_ns) return;
  eager_series_ns_ = now_ns;
  eager_rounds_ = kEagerRounds;
  const std::uint64_t at = std::max(now_ns, last_gossip_ns_ + eager_gap_ns());
  if (at >= next_gossip_ns_) return;
  next_gossip_ns_ = at;
  ++counters_.gossip_eager;
}

std::uint32_t Engine::suspicion_transmit_cap(const Member& m, std::uint64_t now_ns) const {
  // Told, not flooded (suspicion_retransmit_mult): the suspect hears it from
  // each member that probes it meanwhile (start_probe), and every member
  // hears the Dead or the refutation that ends it. A newcomer's suspicion is
  // also how each member sees a storm coming (note_newcomer_failure): every
  // member has to hear those, with the whole retransmit limit.
  return newcomer(m, now_ns) ? 0 : suspicion_retransmit_limit();
}

void Engine::remember_newcomer(Member& m) {
  // Bounded like the table; a death removes the name, growing up is noticed
  // when probing picks it.
  if (newcomers_.size() >= config_.max_members || m.newcomer_slot != 0) return;
  newcomers_.push_back(m.name.id());
  m.newcomer_slot = static_cast<std::uint32_t>(newcomers_.size());
}

bool Engine::newcomer(const Member& m, std::uint64_t now_ns) const {
  return now_ns - std::min(now_ns, m.live_since_ns) < config_.young_member_ns;
}

bool Engine::young(const Member& m, std::uint64_t now_ns) const {
  // Young, and arrived well after us: in a cluster that is starting,
  // everybody is new and nobody is a newcomer.
  const std::uint64_t ours = now_ns - std::min(now_ns, self().live_since_ns);
  const std::uint64_t age = now_ns - std::min(now_ns, m.live_since_ns);
  return age < config_.young_member_ns && 2 * age < ours;
}

bool Engine::helper_counts(const Member& h, std::uint64_t now_ns) const {
  const std::uint64_t ours = now_ns - std::min(now_ns, self().live_since_ns);
  std::uint64_t need = std::min(config_.helper_established_ns, ours / 2);
  // In a storm, no newcomer counts: one that is still in our view may be a
  // phantom nobody has probed yet.
  if (in_storm(now_ns)) need = std::max(need, config_.young_member_ns);
  return h.status == MemberStatus::kAlive && now_ns - std::min(now_ns, h.live_since_ns) >= need;
}

std::vector<std::string> Engine::probe_helpers(std::size_t k, const std::string& target) {
  // A random sample several times larger than k, then the longest-known of
  // it: in steady state that is a random choice among equals; in a storm of
  // short-lived members it keeps the helpers among the members that are
  // still there.
  std::vector<std::string> sample = random_peers(4 * k, target);
  std::stable_sort(sample.begin(), sample.end(), [&](const std::string& a, const std::string& b) {
    return table_.find(a)->live_since_ns < table_.find(b)->live_since_ns;
  });
  if (sample.size() > k) sample.resize(k);
  return sample;
}

void Engine::promote_probationers(std::uint64_t now_ns) {
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
    Member* m = table_.find(name);
    // Died (or was forgotten) meanwhile: nothing to promote.
    if (m == nullptr || !m->probation) continue;
    // Suspected: it waits for the verdict (a refutation makes it Alive again).
    if (m->status != MemberStatus::kAlive) {
      probationers_.emplace_back(now_ns + config_.probation_ns, name);
      continue;
    }
    // Lived through it, as far as we know: the proof is that it answered us
    // (or pinged us) since. Without that, a phantom that died unnoticed would
    // join the view now and be gossiped again: ask it directly with a proof
    // ping (its own number, no helpers, no suspicion) and look again a probe
    // interval later. A probe of each would take a probe slot apiece, and in
    // a storm probationers arrive faster than probes go out. Unanswered
    // kProofPings times, a probe interval apart (a false verdict needs that
    // many losses in a row: 2 % per round trip at 1 % loss, so 1.6e-7): it
    // never had standing (it was never in the view), so it is dead at once,
    // as a failed probe of it would have it; its Dead tells the others that
    // heard of it, and its introducer first-hand.
    if (m->heard_ns < m->live_since_ns + config_.probation_ns / 2) {
      if (m->proof_pings < kProofPings) {
        if (!send_proof_ping(*m)) {
          // Nothing left to track the answer with: forgotten without a verdict.
          ++counters_.probation_forgotten;
          suspicions_.erase(name);
          forget_newcomer(name);
          introducers_.erase(m->name.id());
          table_.forget_probationer(name);
          continue;
        }
        ++m->proof_pings;
        ++counters_.probation_proof_pings;
        proof_checks_.emplace_back(now_ns + config_.probe_interval_ns, name);
        continue;
      }
      proof_seqs_.erase(m->name.id());
      ++counters_.probation_unproven;
      apply_dead(m->incarnation, name, config_.name, MemberStatus::kDead, now_ns);
      continue;
    }
    proof_seqs_.erase(m->name.id());
    introducers_.erase(m->name.id());
    table_.promote(*m);
    ++counters_.probation_promoted;
    joined(*m, AliveSource::kGossip, now_ns);
    queue_broadcast(name, Alive{m->incarnation, m->name, m->addr(), m->tags(), m->protocol_version()},
                    PriorityClass::kGossip);
  }
}

void Engine::admit_pending(std::uint64_t now_ns) {
  // As many as there are tokens; each goes through apply_alive again (it may
  // be known by now, or refused by the graveyard).
  while (!pending_admissions_.empty() && admission_.tokens(now_ns) > 0) {
    const Alive a = std::move(pending_admissions_.front());
    pending_admissions_.pop_front();
    apply_alive(a, now_ns);
  }
}

void Engine::emit(EventKind kind, const Member& m) {
  // Bounded: an undrained stream loses its oldest events, counted.
  if (events_.size() >= config_.max_events) {
    events_.pop_front();
    ++counters_.events_drop_full;
  }
  events_.push_back(MemberEvent{kind, m.name, m.addr(), m.incarnation, m.tags()});
}

void Engine::queue_broadcast(const std::string& node, Message msg, PriorityClass cls, std::uint32_t transmit_cap) {
  // One entry per member fits (plus user data): news is superseded per member,
  // never dropped because the cluster grew past a fixed bound.
  broadcasts_.set_capacity(std::max<std::size_t>(config_.max_broadcasts, table_.size() + 64));
  broadcasts_.push({BroadcastQueue::Kind::kMember, node}, std::move(msg), cls, transmit_cap);
}

bool Engine::send(const Address& to, PriorityClass cls, Compound messages, bool piggyback) {
  // Nowhere to send to.
  if (to.empty()) return false;
  if (outbox_.size() >= config_.max_outbox) {
    ++counters_.outbox_drop_full;
    return false;
  }
  // The datagram travels in the most important class it carries.
  for (const Message& m : messages) cls = std::min(cls, default_priority(m));
  if (piggyback) {
    const std::size_t used = estimated_size(messages);
    if (used < config_.max_packet_bytes) {
      const std::size_t before = messages.size();
      const PriorityClass best = broadcasts_.take(config_.max_packet_bytes - used, retransmit_limit(), messages);
      if (messages.size() > before && best < cls) cls = best;
    }
  }
  for (const Message& m : messages) ++counters_.msg_out[m.index()];
  ++counters_.packets_out;
  outbox_.push_back(Outgoing{to, cls, std::move(messages)});
  return true;
}

// ---------------------------------------------------------------- inputs

void Engine::handle(const Address& from, const Compound& messages, std::uint64_t now_ns) {
  last_now_ns_ = std::max(last_now_ns_, now_ns);
  ++counters_.packets_in;
  corrections_.clear();
  inbound_from_ = &from;
  // The entries of the members this datagram is about, asked for together
  // before any is read (a piggybacked datagram carries a dozen or more); the
  // first kNamedAhead names' ids are kept for their turn (hashed once).
  std::array<std::uint32_t, kNamedAhead> ids;
  const bool prefetched = messages.size() > 1;
  if (prefetched)
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const std::uint32_t id = table_.prefetch(message_subject(messages[i]));
      if (i < ids.size()) ids[i] = id;
    }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Message& msg = messages[i];
    ++counters_.msg_in[msg.index()];
    std::visit(
        [&](const auto& m) {
          using T = std::decay_t<decltype(m)>;
          if constexpr (std::is_same_v<T, Ping>)
            on_ping(from, m, now_ns);
          else if constexpr (std::is_same_v<T, Ack>)
            on_ack(m, now_ns);
          else if constexpr (std::is_same_v<T, IndirectPing>)
            on_indirect_ping(from, m, now_ns);
          else if constexpr (std::is_same_v<T, Nack>)
            on_nack(m);
          else if constexpr (std::is_same_v<T, Alive>)
            apply_alive(m, now_ns, AliveSource::kGossip, prefetched && i < ids.size() ? ids[i] : IdentityPool::kNone);
          else if constexpr (std::is_same_v<T, Suspect>)
            apply_suspect(m, now_ns);
          else if constexpr (std::is_same_v<T, Dead>)
            apply_dead(m.incarnation, m.node, m.from, MemberStatus::kDead, now_ns);
          else if constexpr (std::is_same_v<T, Leave>)
            apply_dead(m.incarnation, m.node, m.node, MemberStatus::kLeft, now_ns);
          else if constexpr (std::is_same_v<T, SyncRequest>)
            on_sync_request(from, m, now_ns);
          else if constexpr (std::is_same_v<T, SyncResponse>)
            on_sync_response(m, now_ns);
          else
            on_user_data(m);
        },
        msg);
  }
  inbound_from_ = nullptr;
  // The sender spread news older than ours about members we hold dead or left
  // (an Alive or Suspect of an incarnation we buried), or a Suspect or Dead
  // of an incarnation the member has since refuted: tell it, in one datagram
  // back, so it stops spreading them. Without it, a member that
  // missed a death keeps a zombie for a whole suspicion timeout, because
  // everyone it asks has long stopped gossiping the death.
  if (!corrections_.empty()) {
    ++counters_.stale_corrections;
    send(from, PriorityClass::kUrgent, std::move(corrections_), false);
    corrections_.clear();
  }
}

void Engine::correct_buried(const std::string& node, std::uint64_t incarnation) {
  if (corrections_.size() >= kMaxCorrections) return;
  for (const Message& c : corrections_)
    if (const Dead* d = std::get_if<Dead>(&c); d != nullptr && d->node == node) return;
  corrections_.emplace_back(Dead{incarnation, node, config_.name});
}

void Engine::correct_stale(const Member& m) {
  if (corrections_.size() >= kMaxCorrections || m.is_tombstone() || m.probation) return;
  for (const Message& c : corrections_)
    if (const Alive* a = std::get_if<Alive>(&c); a != nullptr && a->node == m.name) return;
  if (m.name == config_.name) {
    // Leaving: our Leave is the last word about us.
    if (!leaving_) corrections_.emplace_back(self_alive());
  } else {
    corrections_.emplace_back(Alive{m.incarnation, m.name, m.addr(), m.tags(), m.protocol_version()});
  }
}

void Engine::correct(const Member& m, bool accused) {
  if (corrections_.size() >= kMaxCorrections) return;
  // A Leave is the member's own word; a death only if it died a newcomer (a
  // storm's phantom). An established member's death may be a partition's
  // false verdict: spreading it to a side that still sees the member alive
  // would only make more (the member refutes when it hears, as usual). To a
  // sender that suspects the member itself (`accused`) we confirm the
  // suspicion instead (Lifeguard: an independent accuser): with everyone else
  // past it, no other confirmation would come, and the suspicion would wait
  // its longest timeout; with ours it waits the shortest, which still leaves
  // a live member (after a partition) the time to refute.
  if (m.status == MemberStatus::kDead && !young(m, m.state_change_ns)) {
    if (!accused || inbound_from_ == nullptr) return;
    for (const Message& c : corrections_)
      if (const Suspect* s = std::get_if<Suspect>(&c); s != nullptr && s->node == m.name) return;
    // Once per (sender, member): the sender may hold the member dead by now
    // too, and would confirm back, and so on for ever.
    const std::pair<Address, std::uint32_t> key{*inbound_from_, m.name.id()};
    if (std::find(confirmed_.begin(), confirmed_.end(), key) != confirmed_.end()) return;
    if (confirmed_.size() >= kMaxConfirmed) confirmed_.pop_front();
    confirmed_.push_back(key);
    corrections_.emplace_back(Suspect{m.incarnation, m.name, config_.name});
    return;
  }
  for (const Message& c : corrections_)
    if ((std::holds_alternative<Dead>(c) && std::get<Dead>(c).node == m.name) ||
        (std::holds_alternative<Leave>(c) && std::get<Leave>(c).node == m.name))
      return;
  if (m.status == MemberStatus::kLeft)
    corrections_.emplace_back(Leave{m.incarnation, m.name});
  else
    corrections_.emplace_back(Dead{m.incarnation, m.name, config_.name});
}

void Engine::on_ping(const Address& from, const Ping& m, std::uint64_t now_ns) {
  // Meant for a member that had our address before (we restarted under another
  // name): do not vouch for it.
  if (!m.target.empty() && m.target != config_.name) {
    ++counters_.ping_drop_misdirected;
    return;
  }
  // It pinged us itself: alive now.
  if (Member* src = table_.find(m.source); src != nullptr && !src->is_tombstone()) src->heard_ns = now_ns;
  const Address& to = m.source_addr.empty() ? from : m.source_addr;
  Compound msgs{Ack{m.seq_no, config_.name}};
  // Buddy rule, both ways: a member we suspect, or hold dead or left, is
  // evidently running, so tell it at once; it refutes with a higher incarnation.
  // (Lifeguard does this on our pings; a slow prober may not ping it for long.)
  if (const Member* src = table_.find(m.source); src != nullptr && m.source != config_.name) {
    if (src->status == MemberStatus::kSuspect)
      msgs.emplace_back(Suspect{src->incarnation, src->name, config_.name});
    else if (src->status == MemberStatus::kDead)
      msgs.emplace_back(Dead{src->incarnation, src->name, config_.name});
    else if (src->status == MemberStatus::kLeft)
      msgs.emplace_back(Leave{src->incarnation, src->name});
  }
  send(to, PriorityClass::kProbe, std::move(msgs), true);
}

void Engine::on_indirect_ping(const Address& from, const IndirectPing& m, std::uint64_t now_ns) {
  Address target = m.target_addr;
  if (target.empty()) {
    const Member* t = table_.find(m.target);
    // No address to probe: nothing we can do for the requester.
    if (t == nullptr) return;
    target = t->addr();
  }
  const std::uint32_t seq = next_seq_++;
  // Lifeguard: nack at 80% of the probe timeout, so it reaches the prober
  // before its probe closes (at probe_interval); a nack sent at the full
  // timeout arrives just after the prober gave up and never counts.
  Relay relay{m.seq_no, m.source_addr.empty() ? from : m.source_addr, m.want_nack,
              now_ns + config_.probe_timeout_ns * 4 / 5, m.target};
  if (probes_.add_relay(seq, std::move(relay)) == nullptr) {
    ++counters_.relay_drop_full;
    return;
  }
  ++counters_.relay_started;
  send(target, PriorityClass::kProbe, Compound{Ping{seq, m.target, config_.name, config_.addr}}, true);
}

void Engine::on_ack(const Ack& m, std::uint64_t now_ns) {
  std::optional<Probe>& probe = probes_.current();
  if (probe && probe->seq_no == m.seq_no) {
    // Our probe's number but not the probed member's name: it proves nothing
    // about the target (the pinged member answers with its own name).
    if (m.source != probe->target) {
      ++counters_.ack_drop_unsolicited;
      return;
    }
    // It answered (directly or through a helper): alive now.
    if (Member* t = table_.find(m.source)) t->heard_ns = now_ns;
    if (!probe->indirect_sent) {
      // Healthy round trip: we are probably fine, relax.
      awareness_.apply_delta(-1);
      ++counters_.probe_ack_direct;
    } else {
      ++counters_.probe_ack_indirect;
    }
    probe.reset();
    return;
  }
  // The answer to a proof ping (a probationer proving it is alive) or to a
  // last ping (a newcomer in a storm, before a verdict).
  if (Member* t = table_.find(m.source); t != nullptr) {
    if (auto pp = proof_seqs_.find(t->name.id()); pp != proof_seqs_.end() && pp->second == m.seq_no) {
      t->heard_ns = now_ns;
      proof_seqs_.erase(pp);
      if (t->probation) ++counters_.probation_proof_acks;
      return;
    }
  }
  const Relay* relay = probes_.find_relay(m.seq_no);
  // Late or unknown ack (probe or relay already finished, or a number we never
  // used): nothing waits for it.
  if (relay == nullptr) {
    ++counters_.ack_drop_unsolicited;
    return;
  }
  // Not from the member we ping for the requester: forwarding it would vouch
  // for a target that never answered.
  if (!relay->target.empty() && m.source != relay->target) {
    ++counters_.ack_drop_unsolicited;
    return;
  }
  send(relay->origin, PriorityClass::kProbe, Compound{Ack{relay->origin_seq, m.source}}, true);
  ++counters_.relay_ack_forwarded;
  probes_.erase_relay(m.seq_no);
}

void Engine::on_nack(const Nack& m) {
  std::optional<Probe>& probe = probes_.current();
  // A nack for a probe that is over (or never was) tells us nothing any more.
  if (!probe || probe->seq_no != m.seq_no) {
    ++counters_.nack_drop_unsolicited;
    return;
  }
  // Only the helpers we asked, once each: extra nacks would hide from Lifeguard
  // that our own network is the problem.
  auto helper = std::find(probe->awaiting_nack.begin(), probe->awaiting_nack.end(), m.source);
  if (helper == probe->awaiting_nack.end()) {
    ++counters_.nack_drop_unsolicited;
    return;
  }
  // Only the helpers that count for our health count their nacks.
  if (std::find(probe->counted_helpers.begin(), probe->counted_helpers.end(), m.source) != probe->counted_helpers.end())
    ++probe->nacks;
  probe->awaiting_nack.erase(helper);
  ++counters_.probe_nack_received;
}

void Engine::on_user_data(const UserData& m) {
  ++counters_.user_data_in;
  if (user_data_.size() >= config_.max_events) {
    user_data_.pop_front();
    ++counters_.events_drop_full;
  }
  user_data_.push_back(m);
}

// ---------------------------------------------------------------- state merging

bool Engine::far_future(std::uint64_t incarnation, const Member* known) const {
  const std::uint64_t jump = config_.max_incarnation_jump;
  // Near the top of the range: refuting it (heard + 1) would overflow.
  if (incarnation > UINT64_MAX - jump) return true;
  return known != nullptr && incarnation > known->incarnation && incarnation - known->incarnation > jump;
}

void Engine::refute(std::uint64_t heard_incarnation, bool told) {
  Member& me = self();
  me.incarnation = std::max(me.incarnation, heard_incarnation) + 1;
  ++counters_.refutations;
  // Lifeguard: being suspected hints that we are the slow one.
  awareness_.apply_delta(1);
  // A suspicion told on the ring is held by a few (spread_suspicion): the
  // refutation goes to the one that told us directly, and out as often as a
  // gossiped suspicion would (suspicion_retransmit_mult), which still reaches
  // all but about e^-10 of 10,000 members; with the whole limit every false
  // suspicion cost each member N-fold more than the few that held it needed.
  // A death, or a suspicion everyone held, is refuted with the whole limit.
  queue_broadcast(config_.name, self_alive(), PriorityClass::kUrgent, told ? suspicion_retransmit_limit() : 0);
  if (told && inbound_from_ != nullptr) send(*inbound_from_, PriorityClass::kUrgent, Compound{self_alive()}, false);
}

void Engine::apply_alive(const Alive& a, std::uint64_t now_ns, AliveSource source, std::uint32_t name_id) {
  const bool from_join = source == AliveSource::kJoinAnswer;
  // Nameless, or a name no sane member has: not a member (and not worth storing).
  if (a.node.empty() || a.node.size() > kMaxNameBytes) {
    ++counters_.alive_drop_bad_name;
    return;
  }
  // Oversized metadata: refuse it rather than store or relay it.
  if (tag_bytes(a.tags) > config_.max_tag_bytes) {
    ++counters_.tags_drop_too_large;
    return;
  }
  // No endpoint: a member we could never probe or gossip to (and a claim about
  // us that nobody else will store either).
  if (a.addr.empty()) {
    ++counters_.alive_drop_no_addr;
    return;
  }
  Member* m = table_.find(a.node, name_id);
  // Incarnations only grow by the member's own refutations and restarts: one far
  // beyond what we hold is corrupt or hostile, and trusting it would pin the
  // member (or us, through refutation) near the top of the range.
  if (far_future(a.incarnation, m)) {
    ++counters_.update_drop_far_future;
    return;
  }
  // About us (our entry is always in the table: compared by name id, not text).
  if (m != nullptr && m->name.id() == self_name_.id()) {
    // We are the authority.
    const Member& me = self();
    // Our name at another address: another host claims to be us (or our previous
    // life echoes). Never trusted; refute, so our own entry wins everywhere.
    if (a.addr != me.addr()) {
      ++counters_.conflict_self_name;
      if (!leaving_) refute(a.incarnation);
      return;
    }
    // Leaving: our Leave is the last word about us.
    if (leaving_) return;
    // A newer incarnation of "us" (our previous life), or ours with other
    // metadata: refute by out-numbering it.
    if (a.incarnation > me.incarnation || (a.incarnation == me.incarnation && a.tags != me.tags()))
      refute(a.incarnation);
    return;
  }
  if (m == nullptr) {
    // Its tombstone expired, and this is no newer life: stale gossip still
    // moving (a restart comes with a higher incarnation).
    if (const auto dead_at = table_.buried(a.node); dead_at && a.incarnation <= *dead_at) {
      ++counters_.alive_drop_graveyard;
      correct_buried(a.node, *dead_at);
      return;
    }
    // A never-seen member: admission control first (bounded table, policy, rate).
    if (table_.full()) {
      ++counters_.admission_drop_table_full;
      return;
    }
    const AdmitVerdict verdict =
        from_join ? (admission_.policy_allows(a.node, a.tags) ? AdmitVerdict::kAdmit : AdmitVerdict::kPolicy)
                  : admission_.admit(a.node, a.tags, now_ns);
    switch (verdict) {
      case AdmitVerdict::kPolicy:
        ++counters_.admission_drop_policy;
        return;
      case AdmitVerdict::kRateLimited:
        // Over the rate: it waits for a token rather than being lost until the
        // next sync brings it again (everyone else has stopped gossiping it).
        if (pending_admissions_.size() >= config_.max_pending_admissions) {
          ++counters_.admission_drop_rate;
          return;
        }
        ++counters_.admission_deferred;
        pending_admissions_.push_back(a);
        return;
      case AdmitVerdict::kAdmit:
        break;
    }
    Member fresh;
    fresh.name = a.node;
    fresh.set_profile(a.addr, a.tags, a.protocol_version);
    fresh.incarnation = a.incarnation;
    fresh.state_change_ns = now_ns;
    // In a storm, or a surge of arrivals, a newcomer waits outside the view
    // (probed, not gossiped) until it has lived through its probation: most
    // phantoms are gone before that.
    fresh.probation = config_.probation_ns > 0 && (in_storm(now_ns) || in_surge(now_ns));
    m = table_.insert(std::move(fresh));
    if (m == nullptr) return;
    note_arrival(now_ns);
    probes_.add_member(m->name, rng_);
    remember_newcomer(*m);
    if (m->probation) {
      ++counters_.probation_started;
      probationers_.emplace_back(now_ns + config_.probation_ns, a.node);
      if (inbound_from_ != nullptr && !inbound_from_->empty() && introducers_.size() < config_.max_members)
        introducers_[m->name.id()] = *inbound_from_;
      return;
    }
    joined(*m, source, now_ns);
    if (!from_join) queue_broadcast(a.node, a, PriorityClass::kGossip);
    return;
  }
  if (m->is_tombstone()) {
    // The dead stay dead: only a restart (a newer incarnation) brings one back.
    if (a.incarnation <= m->incarnation) {
      ++counters_.alive_drop_tombstone;
      correct(*m);
      return;
    }
    m->incarnation = a.incarnation;
    m->set_profile(a.addr, a.tags, a.protocol_version);
    table_.set_status(*m, MemberStatus::kAlive, now_ns);
    probes_.add_member(m->name, rng_);
    remember_newcomer(*m);
    joined(*m, source, now_ns);
    queue_broadcast(a.node, a, PriorityClass::kGossip);
    return;
  }
  // Older or same incarnation: ignore (only the member itself raises it). At
  // another address it is a second host claiming the name (or an old address
  // echoing): the live member keeps its address until it moves with a newer
  // incarnation.
  if (a.incarnation <= m->incarnation) {
    if (a.addr != m->addr())
      ++counters_.conflict_address;
    else
      ++counters_.update_drop_stale;
    return;
  }
  const bool changed = a.addr != m->addr() || a.tags != m->tags();
  m->incarnation = a.incarnation;
  m->set_profile(a.addr, a.tags, a.protocol_version);
  // A newer incarnation refutes any suspicion.
  suspicions_.erase(a.node);
  table_.set_status(*m, MemberStatus::kAlive, now_ns);
  // On probation: not in the view yet, so nothing to tell anyone.
  if (m->probation) return;
  if (changed) {
    ++counters_.updates;
    emit(EventKind::kUpdate, *m);
  }
  queue_broadcast(a.node, a, PriorityClass::kGossip);
}

void Engine::apply_suspect(const Suspect& s, std::uint64_t now_ns, bool merged) {
  Member* m = table_.find(s.node);
  // Unknown member: we cannot suspect what we never admitted. If we buried
  // it, the sender is behind: tell it.
  if (m == nullptr) {
    ++counters_.update_drop_unknown;
    if (const auto dead_at = table_.buried(s.node); dead_at && s.incarnation <= *dead_at)
      correct_buried(s.node, *dead_at);
    return;
  }
  // Beyond belief (corrupt or hostile): about us it would make us refute to an
  // absurd incarnation.
  if (far_future(s.incarnation, m)) {
    ++counters_.update_drop_far_future;
    return;
  }
  // Older incarnation: already refuted. The sender missed the refutation;
  // with everyone else past it, nothing would reach it before its own
  // suspicion runs out (no confirmations come): tell it.
  if (s.incarnation < m->incarnation) {
    ++counters_.update_drop_stale;
    correct_stale(*m);
    return;
  }
  if (suspicions_.find(s.node) != nullptr) {
    // Already suspected: an independent accuser shortens the timeout (Lifeguard).
    if (suspicions_.confirm(s.node, s.from)) {
      ++counters_.suspicion_confirmations;
      // Our own probe failed too: tell the accusers (confirm_to_accusers).
      // Another's confirmation is not passed on.
      if (s.from == config_.name) confirm_to_accusers(s);
    }
    return;
  }
  // Dead or left: the accuser is behind (tell it); suspected already: nothing new.
  if (m->is_tombstone()) {
    if (s.incarnation <= m->incarnation) correct(*m, true);
    return;
  }
  if (m->status != MemberStatus::kAlive) return;
  if (s.node == config_.name) {
    // About us: refute (unless we are leaving anyway).
    if (!leaving_) refute(s.incarnation, ring_shared() && !newcomer(*m, now_ns));
    return;
  }
  m->incarnation = s.incarnation;
  table_.set_status(*m, MemberStatus::kSuspect, now_ns);
  ++counters_.suspicions;
  if (newcomer(*m, now_ns)) note_newcomer_failure(s.node, now_ns);
  const std::size_t n = table_.live_count();
  std::uint32_t k = config_.suspicion_mult > 2 ? config_.suspicion_mult - 2 : 0;
  // Too few members to expect k independent confirmations.
  if (n < k + 2) k = 0;
  const std::uint64_t min_ns = suspicion_min_timeout(config_.suspicion_mult, n, config_.probe_interval_ns);
  const std::uint64_t max_ns = config_.suspicion_max_timeout_mult * min_ns;
  suspicions_.start(s.node, Suspicion(s.from, k, min_ns, max_ns, now_ns));
  // On others' word: if their verdict has not reached us by the time it
  // should have, we look for ourselves (hearsay_target).
  if (s.from != config_.name && k > 0 && hearsay_checks_.size() < config_.max_members)
    hearsay_checks_.push_back({now_ns + min_ns + config_.probe_interval_ns, s.incarnation, m->name});
  spread_suspicion(s, *m, now_ns, merged);
}

void Engine::spread_suspicion(const Suspect& s, const Member& m, std::uint64_t now_ns, bool merged) {
  // A newcomer's suspicion is each member's storm signal: everyone hears it.
  // Without the ring nobody knows who probes the suspect next: an epidemic.
  if (newcomer(m, now_ns) || !ring_shared()) {
    queue_broadcast(s.node, s, PriorityClass::kGossip, suspicion_transmit_cap(m, now_ns));
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
  if (s.from != config_.name && !merged) return;
  const Compound told{s};
  const auto tell = [&](const Address& to) {
    if (send(to, PriorityClass::kGossip, told, true)) ++counters_.suspicion_tells;
  };
  tell(m.addr());
  for (const Member* p : next_probers(m.name.str(), config_.suspicion_told_probers, now_ns)) tell(p->addr());
  if (retells_.size() >= config_.max_members) {
    ++counters_.retell_drop_full;
    return;
  }
  retells_.push_back({now_ns + config_.probe_interval_ns, s});
}

void Engine::retell_suspicions(std::uint64_t now_ns) {
  while (!retells_.empty() && retells_.front().due_ns <= now_ns) {
    Retell r = std::move(retells_.front());
    retells_.pop_front();
    // Refuted, buried or forgotten meanwhile (or a newer suspicion of ours
    // retells itself): done.
    const Member* m = table_.find(r.suspect.node);
    if (m == nullptr || m->status != MemberStatus::kSuspect || m->incarnation != r.suspect.incarnation ||
        suspicions_.find(r.suspect.node) == nullptr)
      continue;
    if (send(m->addr(), PriorityClass::kGossip, Compound{r.suspect}, true)) ++counters_.suspicion_retells;
    r.due_ns = now_ns + config_.probe_interval_ns;
    retells_.push_back(std::move(r));
  }
}

bool Engine::ring_shared() const { return config_.probe_ring && table_.view_size() >= 3; }

std::vector<const Member*> Engine::next_probers(const std::string& target, std::uint32_t k,
                                                std::uint64_t now_ns) const {
  // The ring's schedule read backwards (ring_offset): this round's prober of
  // the target, then the next ones', in our view (the views of a settled
  // cluster agree); never us.
  std::vector<const Member*> out;
  const std::size_t l = table_.view_size();
  const std::size_t pos = table_.view_lower_bound(target);
  if (l < 3 || pos >= l || table_.view_at(pos).name != target) return out;
  const std::uint64_t round = now_ns / config_.probe_interval_ns;
  for (std::uint64_t r = round; out.size() < k && r < round + k + 1; ++r) {
    const Member& p = table_.view_at((pos + l - ring_offset(r, l)) % l);
    if (p.name != config_.name) out.push_back(&p);
  }
  return out;
}

std::optional<std::string> Engine::hearsay_target(std::uint64_t now_ns) {
  while (!hearsay_checks_.empty() && hearsay_checks_.front().due_ns <= now_ns) {
    const HearsayCheck c = std::move(hearsay_checks_.front());
    hearsay_checks_.pop_front();
    const Member* m = table_.find(c.name);
    const Suspicion* s = suspicions_.find(c.name);
    // Buried, refuted or forgotten meanwhile: the verdict reached us. Our own
    // probe failed on it already: we are one of the accusers. A newcomer in
    // a storm: our own failed probe would bury it at once (finish_probe_failed),
    // on one path where the accusers' verdict took several; the storm's own
    // probes of newcomers (young_target) look for the dead among them.
    if (m == nullptr || m->status != MemberStatus::kSuspect || m->incarnation != c.incarnation || s == nullptr ||
        s->confirmers().contains(config_.name) || (young(*m, now_ns) && in_storm(now_ns)))
      continue;
    return c.name.str();
  }
  return std::nullopt;
}

void Engine::confirm_to_accusers(const Suspect& s) {
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
    if (accuser == config_.name) return;
    const Member* a = table_.find(accuser);
    if (a == nullptr || a->is_tombstone() || a->probation) return;
    send(a->addr(), PriorityClass::kGossip, Compound{s}, true);
  };
  tell(held->accuser());
  for (const std::string& c : held->confirmers()) tell(c);
  if (const Member* m = table_.find(s.node)) spread_suspicion(s, *m, last_now_ns_, false);
}

void Engine::apply_dead(std::uint64_t incarnation, const std::string& node, const std::string& from,
                        MemberStatus status, std::uint64_t now_ns) {
  Member* m = table_.find(node);
  // Unknown member: news of its death overtook news of its life (or we never
  // admitted it). Nothing to bury, but a trace in the graveyard, so that the
  // Alive still on its way cannot bring it in after the others buried it.
  if (m == nullptr) {
    ++counters_.update_drop_unknown;
    if (node != config_.name && !node.empty() && node.size() <= kMaxNameBytes && !far_future(incarnation, nullptr))
      table_.bury(node, incarnation);
    return;
  }
  // Beyond belief (corrupt or hostile): it would bury the member for good, or
  // make us refute to an absurd incarnation.
  if (far_future(incarnation, m)) {
    ++counters_.update_drop_far_future;
    return;
  }
  // Older incarnation: the member has moved on since (the sender missed it:
  // tell it, as for a stale suspicion).
  if (incarnation < m->incarnation) {
    ++counters_.update_drop_stale;
    correct_stale(*m);
    return;
  }
  // Already a tombstone: nothing new, except that a failed member's own
  // Leave (late, or given by an operator's force-leave) marks it left.
  if (m->is_tombstone() && !(status == MemberStatus::kLeft && m->status == MemberStatus::kDead)) return;
  if (node == config_.name) {
    // About us: refute, unless it is our own farewell coming back.
    if (!leaving_) refute(incarnation);
    return;
  }
  m->incarnation = incarnation;
  suspicions_.erase(node);
  if (status == MemberStatus::kDead && m->status == MemberStatus::kAlive && newcomer(*m, now_ns))
    note_newcomer_failure(node, now_ns);
  forget_newcomer(node);
  // A probationer never joined the view: it leaves no event either (its Dead
  // still goes out, for the others that heard of it).
  const bool was_probation = m->probation;
  if (was_probation) {
    ++counters_.probation_died;
    if (auto intro = introducers_.find(m->name.id()); intro != introducers_.end()) {
      // Its introducer vouched for it: tell it first-hand (it may be the only
      // one with it in its view; a death is gossiped only by those who knew).
      if (status == MemberStatus::kDead && (inbound_from_ == nullptr || intro->second != *inbound_from_)) {
        ++counters_.probation_death_told;
        send(intro->second, PriorityClass::kUrgent, Compound{Dead{incarnation, node, config_.name}}, false);
      }
      introducers_.erase(intro);
    }
    proof_seqs_.erase(m->name.id());
  }
  // A newcomer's death (in a storm, thousands) waits for the next round like
  // any news; an established member's is what every application is waiting
  // for: it goes out now, and each member that learns it passes it on at once.
  if (!was_probation && !young(*m, now_ns)) gossip_soon(now_ns);
  table_.set_status(*m, status, now_ns);
  // Keep gossiping to it a while: if it is alive after all, it hears and refutes.
  // Not to a probationer, nor to a young member in a storm: those were buried
  // without the wait because they are almost all phantoms, and in a storm of
  // them every gossip round would go mostly to the dead, starving the living
  // of the very deaths that round carries.
  if (status == MemberStatus::kDead && !was_probation && !(young(*m, now_ns) && in_storm(now_ns))) {
    if (recently_dead_.size() >= kMaxRecentlyDead) recently_dead_.pop_front();
    recently_dead_.push_back(m->name);
  }
  if (status == MemberStatus::kLeft) {
    ++counters_.leaves;
    if (!was_probation) emit(EventKind::kLeave, *m);
    queue_broadcast(node, Leave{incarnation, node}, PriorityClass::kUrgent);
  } else {
    ++counters_.deaths;
    if (!was_probation) emit(EventKind::kFailed, *m);
    // Only the member that declared the death names itself: no receiver
    // acts on who it was, and relays are nearly all of a death's
    // transmissions (N x retransmit_limit), a third of whose bytes the
    // name was.
    queue_broadcast(node, Dead{incarnation, node, from == config_.name ? from : std::string{}}, PriorityClass::kUrgent);
  }
}

void Engine::merge(const std::vector<MemberState>& members, const std::string& from, std::uint64_t now_ns,
                   bool from_join) {
  // A sync carries hundreds of members: each entry is asked for a few
  // members ahead of its turn, so that its cache miss overlaps the work.
  // Their ids are kept (in a ring of twice that) for their turn.
  constexpr std::size_t kAhead = 8;
  std::array<std::uint32_t, 2 * kAhead> ids;
  for (std::size_t i = 0; i < std::min(kAhead, members.size()); ++i) ids[i] = table_.prefetch(members[i].node);
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i + kAhead < members.size()) ids[(i + kAhead) % ids.size()] = table_.prefetch(members[i + kAhead].node);
    const MemberState& s = members[i];
    switch (s.status) {
      case MemberStatus::kAlive:
        apply_alive(Alive{s.incarnation, s.node, s.addr, s.tags, 0}, now_ns,
                    from_join ? AliveSource::kJoinAnswer : AliveSource::kSync, ids[i % ids.size()]);
        break;
      case MemberStatus::kLeft:
        apply_dead(s.incarnation, s.node, s.node, MemberStatus::kLeft, now_ns);
        break;
      case MemberStatus::kSuspect:
      case MemberStatus::kDead:
        // Merged deaths start as suspicion (memberlist): the member gets a chance
        // to refute before every node buries it on one peer's word. In a storm,
        // a dead newcomer is buried at once (as our own failed probe would).
        if (s.status == MemberStatus::kDead && in_storm(now_ns)) {
          const Member* m = table_.find(s.node);
          if (m != nullptr && !m->is_tombstone() && young(*m, now_ns)) {
            apply_dead(s.incarnation, s.node, from, MemberStatus::kDead, now_ns);
            break;
          }
        }
        apply_suspect(Suspect{s.incarnation, s.node, from}, now_ns, true);
        break;
    }
  }
}

// ---------------------------------------------------------------- sync

template <typename Sync>
void Engine::send_sync(const Address& to, std::uint32_t seq_no, bool join, bool whole_view, std::uint64_t digest,
                       const std::vector<std::uint8_t>* only, const std::vector<std::uint32_t>& buckets) {
  // A joiner gets (and sends) the whole view, up to max_sync_bytes: at a
  // follow-up, its view repairs what the responder missed (an epidemic misses
  // a few members per thousand joins; windows take many intervals to come
  // round to any one name). A periodic
  // sync is a rotating window of sync_bytes_per_sec times its interval: the
  // interval grows with N, and so does the window, so that anti-entropy costs
  // the same bytes per member per second at any N (a full table every interval
  // would grow as N / log N), and a large table is covered over several syncs.
  std::size_t cap = config_.max_sync_bytes;
  if (config_.sync_bytes_per_sec > 0) {
    const std::uint64_t window = config_.sync_bytes_per_sec * (sync_interval() / kMillisecond) / 1000;
    cap = static_cast<std::size_t>(std::clamp<std::uint64_t>(window, config_.max_packet_bytes, config_.max_sync_bytes));
  }
  // Changes since the last interval lead the window (a delta sync). A joiner
  // gets every live member and tombstones within the periodic window's bytes
  // (after a storm there are thousands of dead phantoms; it needs the living).
  const std::uint64_t since = last_now_ns_ > sync_interval() ? last_now_ns_ - sync_interval() : 0;
  SyncManager::Window w =
      whole_view ? syncs_.build_join_view(table_, config_.name, config_.max_packet_bytes, config_.max_sync_bytes, cap)
                 : syncs_.build_window(table_, config_.name, config_.max_packet_bytes, cap, since, only);
  const auto parts = static_cast<std::uint32_t>(w.parts.size());
  for (std::uint32_t i = 0; i < parts; ++i) {
    Sync msg;
    msg.seq_no = seq_no;
    msg.source = config_.name;
    if constexpr (std::is_same_v<Sync, SyncRequest>) msg.join = join;
    msg.part = i;
    msg.parts = parts;
    msg.members = std::move(w.parts[i]);
    msg.digest = digest;
    // A request's parts may each be the first to arrive (and be answered); a
    // response's buckets are kept by the asker from its first part.
    if (std::is_same_v<Sync, SyncRequest> || i == 0) msg.buckets = buckets;
    if constexpr (std::is_same_v<Sync, SyncRequest>)
      if (digest != 0) msg.view_size = static_cast<std::uint32_t>(table_.live_count());
    send(to, PriorityClass::kBulk, Compound{std::move(msg)}, false);
  }
  counters_.sync_bytes_out += w.bytes;
}

void Engine::on_sync_request(const Address& from, const SyncRequest& m, std::uint64_t now_ns) {
  const SyncManager::Serve serve =
      syncs_.on_request(m.source, m.seq_no, m.parts, estimated_sync_size(m), now_ns, m.join);
  // Larger than a sync can be (this part, or the parts so far): not merged, and a
  // first part is not answered either (no slot, no token spent on it).
  if (serve == SyncManager::Serve::kOversize) {
    ++counters_.sync_drop_oversize;
    return;
  }
  // Over the concurrency cap or the answer rate: neither merge nor answer (the
  // sender retries: a joiner after sync_timeout, others at their next interval).
  // Either way the sender's own entry is merged (it is one member, and gossip
  // then spreads it): a refused joiner is still known, and probed.
  if (serve == SyncManager::Serve::kBusy || serve == SyncManager::Serve::kRateLimited) {
    if (serve == SyncManager::Serve::kBusy)
      ++counters_.sync_drop_concurrency;
    else if (m.join)
      ++counters_.join_drop_rate;
    else
      ++counters_.sync_drop_rate;
    for (const MemberState& s : m.members)
      if (s.node == m.source) merge({s}, m.source, now_ns);
    return;
  }
  merge(m.members, m.source, now_ns);
  if (serve == SyncManager::Serve::kNew) {
    ++counters_.sync_answered;
    if (m.join) ++counters_.join_answered;
    // Asked with a digest: an equal view is answered with the digest alone,
    // another with our window and our digest (the asker then knows whether
    // it still has something we lack).
    if (!m.join && m.digest != 0) {
      const std::uint64_t ours = table_.view_digest();
      if (ours == m.digest) {
        ++counters_.sync_digest_equal;
        send(from, PriorityClass::kBulk, Compound{SyncResponse{m.seq_no, config_.name, 0, 1, {}, ours, {}}}, false);
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
      const std::size_t live = table_.live_count();
      // Not in a storm: there every newcomer's view is short, and a whole
      // view for each phantom is what the storm rules exist to avoid.
      const bool short_view = m.view_size > 0 && m.view_size + live / kFarBehindFraction < live;
      const bool spread = differing * kSpreadFraction > bucket_differ_.size() && differing > 0;
      if ((short_view || spread) && !in_storm(now_ns) && syncs_.take_join_answer(now_ns)) {
        ++counters_.sync_whole_views;
        send_sync<SyncResponse>(from, m.seq_no, false, true, ours, nullptr, bucket_ours_);
        return;
      }
      // With bucket digests: the members of the buckets that differ only
      // (what is missing on either side is there), and ours, so that the
      // asker can send what we lack in turn. A difference no bucket shows
      // (a 32-bit fold collision) gets the whole window.
      if (differing > 0) {
        ++counters_.sync_bucket_windows;
        send_sync<SyncResponse>(from, m.seq_no, false, false, ours, &bucket_differ_, bucket_ours_);
        return;
      }
      send_sync<SyncResponse>(from, m.seq_no, false, false, ours);
      return;
    }
    send_sync<SyncResponse>(from, m.seq_no, false, m.join);
  }
}

void Engine::on_sync_response(const SyncResponse& m, std::uint64_t now_ns) {
  switch (syncs_.on_response(m.seq_no, m.part, m.parts, estimated_sync_size(m))) {
    case SyncManager::Answer::kMerge:
      break;
    // Not an answer to one of our syncs: unsolicited state is not merged.
    case SyncManager::Answer::kUnsolicited:
      ++counters_.sync_drop_unsolicited;
      return;
    // Larger than any sync we would send: the rest of it is not trusted.
    case SyncManager::Answer::kOversize:
      ++counters_.sync_drop_oversize;
      return;
  }
  const bool join_answer = std::find(join_seqs_.begin(), join_seqs_.end(), m.seq_no) != join_seqs_.end();
  // Joined once an answer is in (SyncManager::answered: all parts, or the last
  // and all but a few): an answer cut short would leave our view short of
  // whole ranges of members; the join retry asks again. A follow-up counts
  // the same way (see tick()); what a lost part held comes with another
  // answer, whose losses fall elsewhere, or the first periodic sync.
  if (const auto f = std::find(followup_seqs_.begin(), followup_seqs_.end(), m.seq_no);
      f != followup_seqs_.end() && syncs_.answered(m.seq_no)) {
    followup_seqs_.erase(f);
    if (followup_joins_ > 0 && --followup_joins_ == 0) next_followup_ns_ = UINT64_MAX;
  }
  if (join_answer && syncs_.answered(m.seq_no) && !joined_) {
    joined_ = true;
    join_answer_cut_ = syncs_.awaiting(m.seq_no);
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
    if (!in_storm(now_ns)) {
      followup_joins_ = kFollowupJoins;
      followup_attempts_ = 0;
      next_followup_ns_ = now_ns + config_.join_retry_min_ns + rng_.uniform(config_.join_retry_min_ns);
      next_sync_ns_ =
          std::min(next_sync_ns_, now_ns + 8 * config_.join_retry_min_ns + rng_.uniform(4 * config_.join_retry_min_ns));
    }
  }
  merge(m.members, m.source, now_ns, join_answer);
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
  if (m.digest == 0 || m.digest == table_.view_digest()) return;
  ++counters_.sync_digest_differ;
  const Member* peer = table_.find(m.source);
  if (peer == nullptr || peer->is_tombstone() || leaving_ || !syncs_.has_capacity()) return;
  const std::uint32_t seq = next_seq_++;
  syncs_.start(seq, now_ns);
  ++counters_.sync_started;
  // Their buckets known: ours of the buckets that still differ, with our
  // digests (they answer with what still differs, or the digest alone).
  if (compare_buckets(theirs) > 0) {
    ++counters_.sync_bucket_windows;
    send_sync<SyncRequest>(peer->addr(), seq, false, false, table_.view_digest(), &bucket_differ_, bucket_ours_);
    return;
  }
  send_sync<SyncRequest>(peer->addr(), seq, false, false);
}

std::size_t Engine::compare_buckets(const std::vector<std::uint32_t>& theirs) {
  bucket_ours_.clear();
  bucket_differ_.clear();
  if (theirs.empty() || theirs.size() > kMaxSyncBuckets) return 0;
  table_.bucket_digests(theirs.size(), bucket_ours_);
  return differing_buckets(bucket_ours_, theirs, bucket_differ_);
}

std::size_t Engine::sync_bucket_count() const {
  const std::size_t live = table_.live_count();
  if (live <= 2 * kMembersPerSyncBucket) return 0;
  // What fits in one datagram beside the request's other fields.
  constexpr std::size_t kRequestOverhead = 64 + kMaxNameBytes;
  const std::size_t room =
      config_.max_packet_bytes > kRequestOverhead ? (config_.max_packet_bytes - kRequestOverhead) / 4 : 0;
  const std::size_t cap = std::bit_floor(std::min(kMaxSyncBuckets, room));
  const std::size_t want = std::bit_ceil((live + kMembersPerSyncBucket - 1) / kMembersPerSyncBucket);
  const std::size_t n = std::min(want, cap);
  return n >= 2 ? n : 0;
}

void Engine::start_sync(std::uint64_t now_ns) {
  // Cap on concurrent syncs: skip this round.
  if (!syncs_.has_capacity()) return;
  // A random peer, preferring one that is not a young newcomer (in a storm
  // most newcomers are gone, and a sync sent there repairs nothing); in
  // steady state nobody is young and the choice is uniform.
  std::vector<std::string> peer = random_peers(4, {});
  const auto settled =
      std::find_if(peer.begin(), peer.end(), [&](const std::string& p) { return !young(*table_.find(p), now_ns); });
  if (settled != peer.end()) std::iter_swap(peer.begin(), settled);
  // Syncs to the failed go on a timer of their own (reconnect), never
  // instead of this one: anti-entropy with the living is what repairs a view
  // that missed a death, and a run of syncs to the dead left one member
  // holding a dead phantom for 70 s (ci/phantom-storm seed 39).
  if (!peer.empty()) sync_with(table_.find(peer.front())->addr(), now_ns);
}

std::uint64_t Engine::next_reconnect_at(std::uint64_t now_ns) {
  const std::uint64_t interval = config_.reconnect_interval_ns;
  if (interval == 0) return UINT64_MAX;
  // Jittered, so that a cluster started together does not reconnect in step.
  return now_ns + interval / 2 + rng_.uniform(interval) + 1;
}

void Engine::reconnect(std::uint64_t now_ns) {
  // No tombstones at all (the usual case): nobody to reconnect to, and no walk.
  if (table_.size() <= table_.live_count() + table_.probation_count()) return;
  // Reconnect (as Serf does): a partition leaves both sides thinking the other
  // dead, and nobody talks to the dead after gossip_to_the_dead_ns; a group
  // that restarted together through seeds among them (ci/restart seed 223:
  // both shared seeds) knows only itself. A sync to a failed (not left)
  // member with probability D / (L + D), and always when nobody live is
  // left, heals both through refutation or the newer lives it brings back.
  // Not members that died as newcomers: a storm's thousands of dead phantoms
  // would take nearly every reconnect (partitions part established members).
  std::vector<const Member*> failed;
  table_.for_each_outside_view([&](const Member& m) {
    if (m.status == MemberStatus::kDead && !young(m, m.state_change_ns)) failed.push_back(&m);
  });
  if (failed.empty() || !syncs_.has_capacity()) return;
  const std::uint64_t live = table_.live_count() - 1;
  if (rng_.uniform(live + failed.size()) >= failed.size()) return;
  ++counters_.sync_reconnects;
  sync_with(failed[static_cast<std::size_t>(rng_.uniform(failed.size()))]->addr(), now_ns);
}

void Engine::sync_with(const Address& to, std::uint64_t now_ns) {
  const std::uint32_t seq = next_seq_++;
  syncs_.start(seq, now_ns);
  ++counters_.sync_started;
  if (!config_.sync_digest) {
    send_sync<SyncRequest>(to, seq, false, false);
    return;
  }
  // Digest first: in steady state every view is the same, and the window
  // would repeat what the peer holds already.
  if (digest_seqs_.size() >= kDigestSyncsRemembered) digest_seqs_.pop_front();
  digest_seqs_.push_back({seq, {}});
  table_.bucket_digests(sync_bucket_count(), bucket_ours_);
  send(to, PriorityClass::kBulk,
       Compound{SyncRequest{seq,
                            config_.name,
                            false,
                            0,
                            1,
                            {},
                            table_.view_digest(),
                            bucket_ours_,
                            static_cast<std::uint32_t>(table_.live_count())}},
       false);
}

void Engine::join(std::span<const Address> seeds, std::uint64_t now_ns) {
  seeds_.clear();
  for (const Address& seed : seeds) {
    // Ourselves (a shared seed list) or no address: nobody to ask.
    if (seed == config_.addr || seed.empty()) continue;
    if (seeds_.size() >= kMaxSeeds) break;
    seeds_.push_back(seed);
  }
  // No seed to ask: we are the first member.
  if (seeds_.empty()) {
    joined_ = true;
    next_join_ns_ = UINT64_MAX;
    return;
  }
  join_attempts_ = 0;
  joined_ = false;
  send_join(now_ns);
}

void Engine::send_join(std::uint64_t now_ns) {
  if (join_attempts_ > 0) ++counters_.join_retries;
  ++join_attempts_;
  std::vector<Address> targets = seeds_;
  // A retry also asks one member we have heard of meanwhile (a refused joiner
  // is merged by its seed and gossiped, so others get to know it): the whole
  // cluster can answer, not only a busy seed.
  if (join_attempts_ > 1) {
    const std::vector<std::string> peer = random_peers(1, {});
    if (!peer.empty()) {
      const Address& a = table_.find(peer.front())->addr();
      if (std::find(targets.begin(), targets.end(), a) == targets.end()) targets.push_back(a);
    }
  }
  for (const Address& seed : targets) {
    const std::uint32_t seq = next_seq_++;
    join_seqs_.push_back(seq);
    syncs_.start(seq, now_ns);
    ++counters_.sync_started;
    send_sync<SyncRequest>(seed, seq, true, true);
  }
  // Bounded: only the latest rounds' sequence numbers matter (a late answer to
  // an older round is still welcome).
  const std::size_t keep = (kMaxSeeds + 1) * kJoinRoundsRemembered;
  if (join_seqs_.size() > keep)
    join_seqs_.erase(join_seqs_.begin(), join_seqs_.end() - static_cast<std::ptrdiff_t>(keep));
  // Capped exponential backoff, for ever (a node started before its seeds
  // joins when they come up), with +-25 % jitter so that refused joiners do
  // not come back in step.
  std::uint64_t wait = config_.join_retry_min_ns;
  for (std::uint32_t i = 1; i < join_attempts_ && wait < config_.join_retry_max_ns; ++i) wait *= 2;
  wait = std::min(wait, config_.join_retry_max_ns);
  wait = wait - wait / 4 + rng_.uniform(wait / 2 + 1);
  next_join_ns_ = now_ns + wait;
}

// ---------------------------------------------------------------- probing

std::optional<std::string> Engine::young_target(std::uint64_t now_ns) {
  // Random picks; one that grew up, died or was forgotten is removed on the
  // spot (swap with the last), so the list stays the live newcomers.
  for (int attempt = 0; attempt < 16 && !newcomers_.empty(); ++attempt) {
    const auto i = static_cast<std::size_t>(rng_.uniform(newcomers_.size()));
    const Member* m = table_.find_id(newcomers_[i]);
    if (m != nullptr && !m->is_tombstone() && newcomer(*m, now_ns)) return m->name.str();
    forget_newcomer_at(i);
  }
  return std::nullopt;
}

void Engine::forget_newcomer(const std::string& name) {
  const Member* m = table_.find(name);
  if (m == nullptr || m->newcomer_slot == 0) return;
  forget_newcomer_at(m->newcomer_slot - 1);
}

void Engine::forget_newcomer_at(std::size_t i) {
  if (Member* m = table_.find_id(newcomers_[i])) m->newcomer_slot = 0;
  if (i + 1 != newcomers_.size()) {
    newcomers_[i] = newcomers_.back();
    if (Member* moved = table_.find_id(newcomers_[i])) moved->newcomer_slot = static_cast<std::uint32_t>(i + 1);
  }
  newcomers_.pop_back();
}

bool Engine::ring_in_use() {
  // A slow member (health above 0) probes less often than once a round: it
  // leaves the ring's timing alone and walks its own round-robin.
  if (!config_.probe_ring || awareness_.score() != 0 || config_.probe_interval_ns == 0) return false;
  if (ring_version_ != table_.version()) {
    ring_version_ = table_.version();
    ring_pos_ = table_.view_lower_bound(config_.name);
    // Not in our own view (leaving): no ring.
    ring_self_ = ring_pos_ < table_.view_size() && table_.view_at(ring_pos_).name == config_.name;
  }
  return ring_self_ && table_.view_size() >= 3;
}

std::optional<std::string> Engine::ring_target(std::uint64_t now_ns) {
  if (!ring_in_use()) return std::nullopt;
  const std::size_t l = table_.view_size();
  return table_.view_at((ring_pos_ + ring_offset(now_ns / config_.probe_interval_ns, l)) % l).name.str();
}

std::uint64_t Engine::next_probe_at(std::uint64_t now_ns) {
  const std::uint64_t interval = config_.probe_interval_ns;
  if (!ring_in_use()) return now_ns + probe_interval_ns();
  // Position i probes at i / L of each interval: the member probed by i in
  // round r is probed by i - 1 in round r + 1, one interval less 1/L later.
  const std::uint64_t phase = interval / table_.view_size() * ring_pos_;
  const std::uint64_t base = now_ns >= phase ? now_ns - phase : 0;
  std::uint64_t next = (base / interval + 1) * interval + phase;
  // The phase moved (members joined or left): never twice within half an
  // interval, never more than one and a half apart.
  if (next < now_ns + interval / 2) next += interval;
  // Never before the probe just started has its verdict: a new probe replaces
  // the current one, and one cut short accuses nobody. While members arrive
  // the phase moves on every arrival, and probes cut short at half an
  // interval never failed: in an arrival storm at 68 a second no dead
  // newcomer was ever found (phantom-storm at full size).
  if (const auto& p = probes_.current()) next = std::max(next, p->final_deadline_ns);
  return next;
}

void Engine::start_probe(std::uint64_t now_ns) {
  // A suspicion we hold on hearsay whose verdict never came goes first: it
  // is rare (a member that missed every copy of a Dead), and it would wait
  // the longest timeout otherwise. It takes this round's ring slot.
  std::optional<std::string> target = hearsay_target(now_ns);
  if (target) {
    ++counters_.probe_hearsay;
  } else {
    // In a storm, every other probe goes to a random newcomer: that is where
    // the dead are, and a member that missed news of a newcomer's death finds
    // out in seconds instead of a whole probe round (the view's size in probe
    // intervals). The round-robin walk goes on with the other half. Outside
    // a storm, probing is the ring (or SWIM's round robin) only.
    probe_newcomer_next_ = !probe_newcomer_next_;
    if (probe_newcomer_next_ && in_storm(now_ns)) target = young_target(now_ns);
    if (target) ++counters_.probe_newcomer;
  }
  if (!target) target = ring_target(now_ns);
  if (!target) target = probes_.next_target(table_, config_.name, rng_);
  // Nobody to probe yet.
  if (!target) return;
  const Member& m = *table_.find(*target);
  Probe p;
  p.target = *target;
  p.seq_no = next_seq_++;
  p.start_ns = now_ns;
  p.direct_deadline_ns = now_ns + probe_timeout_ns();
  p.final_deadline_ns = now_ns + probe_interval_ns();
  p.incarnation = m.incarnation;
  probes_.current() = p;
  ++counters_.probe_started;
  Compound msgs{Ping{p.seq_no, m.name, config_.name, config_.addr}};
  // Buddy system (Lifeguard): tell a suspected member so at once, so it can refute.
  if (m.status == MemberStatus::kSuspect) msgs.emplace_back(Suspect{m.incarnation, m.name, config_.name});
  send(m.addr(), PriorityClass::kProbe, std::move(msgs), true);
}

void Engine::send_indirect_probes(std::uint64_t now_ns) {
  Probe& p = *probes_.current();
  p.indirect_sent = true;
  const Member* target = table_.find(p.target);
  // Forgotten meanwhile: the final deadline will close the probe.
  if (target == nullptr) return;
  const std::vector<std::string> helpers = probe_helpers(config_.indirect_checks, p.target);
  // Only established helpers' silence counts against our health (Lifeguard):
  // a newcomer that is gone already cannot nack.
  p.counted_helpers.clear();
  for (const std::string& h : helpers)
    if (helper_counts(*table_.find(h), now_ns)) p.counted_helpers.push_back(h);
  p.expected_nacks = static_cast<std::uint32_t>(p.counted_helpers.size());
  p.helpers = static_cast<std::uint32_t>(helpers.size());
  p.awaiting_nack = helpers;
  for (const std::string& h : helpers) {
    ++counters_.probe_indirect_sent;
    send(table_.find(h)->addr(), PriorityClass::kProbe,
         Compound{IndirectPing{p.seq_no, p.target, target->addr(), true, config_.name, config_.addr}}, true);
  }
  // The same ping once more (fallback_ping): its ack closes the probe like a
  // helper's, so one lost datagram of the first round trip no longer leaves
  // the verdict to the helpers alone.
  if (config_.fallback_ping) {
    ++counters_.probe_fallback_sent;
    send(target->addr(), PriorityClass::kProbe, Compound{Ping{p.seq_no, p.target, config_.name, config_.addr}}, true);
  }
}

void Engine::finish_probe_failed(std::uint64_t now_ns) {
  const Probe p = *probes_.current();
  probes_.current().reset();
  // A newer life (or a refutation) of the target arrived while we waited: our
  // silence was about the incarnation we pinged, so it proves nothing about
  // this one (a restarted member would be suspected a second after it is
  // back). No verdict, and no blame on our health either.
  if (const Member* now = table_.find(p.target);
      now != nullptr && !now->is_tombstone() && now->incarnation != p.incarnation) {
    ++counters_.probe_outdated;
    return;
  }
  ++counters_.probe_failed;
  const Member* m = table_.find(p.target);
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
  // newcomer buried in a storm (apply_dead). Its refutation comes too late for
  // the others: each has buried it by then. So the verdict needs two paths
  // that failed: when no helper nacked (the helpers were phantoms too, or our
  // own network is the problem), only our own path failed (the probe and its
  // fallback ping, a moment apart on the same links), and a short burst of
  // loss would bury a live member everywhere; it gets one more direct ping
  // first (last_ping), and the verdict a probe interval later. Outside a
  // storm a newcomer is suspected like anyone (a newcomer that stalls for a
  // few seconds is not a phantom). A probationer
  // has no standing at all (it was never in the view, and its proof pings are
  // the second path): it too is dead at once, storm or not.
  if (m->probation || (young(*m, now_ns) && in_storm(now_ns))) {
    if (!m->probation && p.nacks == 0 && last_ping(*m, now_ns)) return;
    ++counters_.young_declared_dead;
    apply_dead(m->incarnation, p.target, config_.name, MemberStatus::kDead, now_ns);
    return;
  }
  apply_suspect(Suspect{m->incarnation, p.target, config_.name}, now_ns);
}

std::optional<std::uint32_t> Engine::send_proof_ping(const Member& m) {
  // Nothing left to track the answer with.
  if (proof_seqs_.size() >= config_.max_members) return std::nullopt;
  const std::uint32_t seq = next_seq_++;
  proof_seqs_[m.name.id()] = seq;
  send(m.addr(), PriorityClass::kProbe, Compound{Ping{seq, m.name, config_.name, config_.addr}}, false);
  return seq;
}

bool Engine::last_ping(const Member& m, std::uint64_t now_ns) {
  // One is on its way already (a probe out of turn failed meanwhile): its
  // verdict stands for both.
  if (proof_seqs_.contains(m.name.id())) return true;
  // None can be sent: the verdict now, as before.
  const std::optional<std::uint32_t> seq = send_proof_ping(m);
  if (!seq) return false;
  last_pings_.push_back({now_ns + config_.probe_interval_ns, now_ns, m.incarnation, *seq, m.name});
  ++counters_.young_last_pings;
  return true;
}

void Engine::expire_last_pings(std::uint64_t now_ns) {
  while (!last_pings_.empty() && last_pings_.front().due_ns <= now_ns) {
    const LastPing lp = std::move(last_pings_.front());
    last_pings_.pop_front();
    // Unanswered: forget its number (unless a proof ping of a newer life
    // took the slot meanwhile).
    if (auto pp = proof_seqs_.find(lp.name.id()); pp != proof_seqs_.end() && pp->second == lp.seq_no)
      proof_seqs_.erase(pp);
    Member* m = table_.find(lp.name);
    // Gone, buried, or refuted meanwhile (a newer life is a newer question):
    // no verdict of ours.
    if (m == nullptr || m->is_tombstone() || m->probation || m->incarnation != lp.incarnation) continue;
    // It answered (this ping, a probe of ours) or pinged us since: alive.
    if (m->heard_ns >= lp.sent_ns) {
      ++counters_.young_last_acks;
      continue;
    }
    // Silent twice. Still a newcomer in a storm: dead at once, as the rule
    // has it; otherwise suspected like anyone.
    const std::string& name = lp.name;
    if (young(*m, now_ns) && in_storm(now_ns)) {
      ++counters_.young_declared_dead;
      apply_dead(m->incarnation, name, config_.name, MemberStatus::kDead, now_ns);
    } else {
      apply_suspect(Suspect{m->incarnation, name, config_.name}, now_ns);
    }
  }
}

void Engine::expire_relays(std::uint64_t now_ns) {
  for (const std::uint32_t seq : probes_.due_relays(now_ns)) {
    const Relay* relay = probes_.find_relay(seq);
    // Lifeguard nack: "I could not reach it either", so the prober knows its own
    // link is fine.
    if (relay->want_nack) {
      ++counters_.relay_nack_sent;
      send(relay->origin, PriorityClass::kProbe, Compound{Nack{relay->origin_seq, config_.name}}, true);
    }
    probes_.erase_relay(seq);
  }
}

void Engine::expire_suspicions(std::uint64_t now_ns) {
  // Every suspicion waits its Lifeguard timeout, a young member's in a storm
  // and a probationer's too: our own failed probe buries those at once (see
  // finish_probe_failed), but on others' word we wait. The accuser may be a
  // phantom that is failing itself, and a gossiped Suspect's `from` may only
  // be a sync peer that held the suspicion: buried at once on that, with the
  // Dead each of us then sends, a live newcomer was buried everywhere within
  // 0.1 s, before it could hear of the suspicion and refute.
  const std::vector<std::string> expired = suspicions_.due(now_ns);
  for (const std::string& name : expired) {
    const Member* m = table_.find(name);
    suspicions_.erase(name);
    if (m == nullptr || m->status != MemberStatus::kSuspect) continue;
    apply_dead(m->incarnation, name, config_.name, MemberStatus::kDead, now_ns);
  }
}

// ---------------------------------------------------------------- gossip

std::vector<std::string> Engine::gossip_targets(std::uint64_t now_ns) {
  // Forget the dead that are past gossip_to_the_dead_ns, rejoined or expired.
  std::erase_if(recently_dead_, [&](const Name& name) {
    const Member* m = table_.find(name);
    return m == nullptr || m->status != MemberStatus::kDead ||
           m->state_change_ns + config_.gossip_to_the_dead_ns <= now_ns;
  });
  // Suspects too (as memberlist): they need the news most, and skipping them
  // lets an update's whole retransmit budget pass them by.
  std::vector<std::string> peers = random_peers(config_.gossip_nodes, {}, true);
  // In a storm most newcomers are phantoms on their way out: a round spent on
  // them is lost to the members that stay, and news (a refutation above all)
  // that misses a steady member in its burst of transmissions may not reach
  // it before a verdict does. Twice the candidates, the settled first.
  if (in_storm(now_ns) && !peers.empty()) {
    peers = random_peers(2 * config_.gossip_nodes, {}, true);
    std::stable_partition(peers.begin(), peers.end(),
                          [&](const std::string& p) { return !young(*table_.find(p), now_ns); });
    if (peers.size() > config_.gossip_nodes) peers.resize(config_.gossip_nodes);
  }
  if (recently_dead_.empty()) return peers;
  // memberlist draws gossip targets from live and recently dead members alike:
  // each slot goes to a recently dead member with probability D / (L + D).
  const std::uint64_t dead = recently_dead_.size();
  const std::uint64_t live = table_.live_count() > 0 ? table_.live_count() - 1 : 0;
  // At most one slot per round goes to the dead, so that however many have
  // just died (a mass crash), the living get most of each round.
  const std::size_t slots = std::max<std::size_t>(peers.size(), peers.empty() ? 1 : 0);
  peers.resize(slots);
  for (std::string& p : peers) {
    if (rng_.uniform(live + dead) >= dead) continue;
    const std::string& pick = recently_dead_[static_cast<std::size_t>(rng_.uniform(dead))].str();
    if (std::find(peers.begin(), peers.end(), pick) == peers.end()) p = pick;
    break;
  }
  std::erase(peers, std::string{});
  return peers;
}

void Engine::gossip(std::uint64_t now_ns) {
  // Nothing to disseminate: no datagrams (and no draws from the RNG).
  if (broadcasts_.empty()) return;
  for (const std::string& peer : gossip_targets(now_ns)) {
    // Nothing (left) to disseminate: no empty datagrams.
    if (broadcasts_.empty()) break;
    Compound msgs;
    const PriorityClass cls = broadcasts_.take(config_.max_packet_bytes, retransmit_limit(), msgs);
    if (msgs.empty()) break;
    send(table_.find(peer)->addr(), cls, std::move(msgs), false);
  }
}

// ---------------------------------------------------------------- timers

void Engine::after_own_stall(std::uint64_t now_ns) {
  ++counters_.own_stalls;
  // A suspicion that ran out while we were away ran out on our absence: the
  // refutation may be in the backlog we have not read yet. Each waits at
  // least another probe interval (Lifeguard: a slow member's own timeouts are
  // the least trustworthy).
  const std::uint64_t hold = now_ns + probe_interval_ns();
  suspicions_.hold_all(hold);
  // So did our probe: its ack may be in the backlog too. No verdict, but our
  // health takes the blame.
  if (probes_.current() && probes_.current()->final_deadline_ns <= now_ns) {
    probes_.current().reset();
    ++counters_.probe_abandoned_stall;
    awareness_.apply_delta(1);
  }
}

void Engine::tick(std::uint64_t now_ns) {
  // Due a while ago and not run since (neither tick nor message): stalled.
  if (due_ns_ != 0 && due_ns_ != UINT64_MAX && now_ns > std::max(due_ns_, last_now_ns_) + config_.probe_interval_ns)
    after_own_stall(now_ns);
  last_now_ns_ = std::max(last_now_ns_, now_ns);
  expire_relays(now_ns);

  if (probes_.current()) {
    if (!probes_.current()->indirect_sent && now_ns >= probes_.current()->direct_deadline_ns)
      send_indirect_probes(now_ns);
    if (now_ns >= probes_.current()->final_deadline_ns) finish_probe_failed(now_ns);
  }
  if (now_ns >= next_probe_ns_) {
    // A leaving member accuses nobody.
    if (!leaving_) start_probe(now_ns);
    next_probe_ns_ = next_probe_at(now_ns);
  }

  expire_last_pings(now_ns);
  expire_suspicions(now_ns);
  retell_suspicions(now_ns);

  if (now_ns >= next_gossip_ns_) {
    gossip(now_ns);
    last_gossip_ns_ = now_ns;
    next_gossip_ns_ = now_ns + config_.gossip_interval_ns;
    if (eager_rounds_ > 0 && --eager_rounds_ > 0) next_gossip_ns_ = now_ns + eager_gap_ns();
  }

  admit_pending(now_ns);
  promote_probationers(now_ns);

  syncs_.expire(now_ns);
  // A digest sync of ours that timed out with parts missing (a whole view
  // is tens of datagrams, and parts are in name order: the same names would
  // be missing until the next interval): once more, soon, with another peer.
  for (auto it = digest_seqs_.begin(); it != digest_seqs_.end();) {
    if (it->partial && !syncs_.awaiting(it->seq_no)) {
      it = digest_seqs_.erase(it);
      ++counters_.sync_incomplete_retries;
      next_sync_ns_ =
          std::min(next_sync_ns_, now_ns + config_.join_retry_min_ns + rng_.uniform(config_.join_retry_min_ns));
    } else {
      ++it;
    }
  }
  if (!joined_ && now_ns >= next_join_ns_) send_join(now_ns);
  // Follow-ups until kFollowupJoins whole answers are in (a lost part, and the
  // same members would be missing from every view a follow-up brings: parts
  // are in name order), within kMaxFollowupAttempts.
  if (followup_joins_ > 0 && now_ns >= next_followup_ns_ && followup_attempts_ >= kMaxFollowupAttempts) {
    followup_joins_ = 0;
    next_followup_ns_ = UINT64_MAX;
  }
  if (followup_joins_ > 0 && now_ns >= next_followup_ns_) {
    ++followup_attempts_;
    // Our join answer lost parts: only the follow-ups bring what those held
    // (their own losses fall elsewhere), so the next comes sooner.
    next_followup_ns_ = now_ns + (join_answer_cut_ ? 1 : 4) * config_.join_retry_min_ns;
    // Another member than the seeds (their view is the one we have), not a
    // young one.
    std::vector<std::string> peer = random_peers(8, {});
    const auto settled = std::find_if(peer.begin(), peer.end(), [&](const std::string& p) {
      const Member& m = *table_.find(p);
      return !young(m, now_ns) && std::find(seeds_.begin(), seeds_.end(), m.addr()) == seeds_.end();
    });
    if (settled != peer.end()) {
      const std::uint32_t seq = next_seq_++;
      join_seqs_.push_back(seq);
      syncs_.start(seq, now_ns);
      ++counters_.sync_started;
      ++counters_.join_followups;
      followup_seqs_.push_back(seq);
      if (followup_seqs_.size() > kMaxFollowupAttempts) followup_seqs_.erase(followup_seqs_.begin());
      send_sync<SyncRequest>(table_.find(*settled)->addr(), seq, true, true);
    }
  }
  // In a storm, push-pull at the base interval (not scaled with N): members
  // that missed some deaths get them from a peer's recent changes within
  // seconds of the storm's end rather than minutes.
  if (in_storm(now_ns)) next_sync_ns_ = std::min(next_sync_ns_, now_ns + config_.push_pull_interval_ns);
  if (now_ns >= next_sync_ns_) {
    if (!leaving_) start_sync(now_ns);
    next_sync_ns_ = now_ns + sync_interval();
  } else if (now_ns >= settle_sync_ns_ && !leaving_ && !in_storm(now_ns)) {
    // Arrivals have stopped: one digest sync (cheap when the views agree).
    // An epidemic misses a member now and then, and the periodic sync that
    // would repair that is minutes away at scale: ci/congestion seed 25 kept
    // a member without the last joiner for the 60 s to the end of the run.
    start_sync(now_ns);
  }
  if (now_ns >= settle_sync_ns_) settle_sync_ns_ = UINT64_MAX;
  if (now_ns >= next_reconnect_ns_) {
    if (!leaving_) reconnect(now_ns);
    next_reconnect_ns_ = next_reconnect_at(now_ns);
  }

  counters_.tombstones_expired += table_.expire_tombstones(now_ns);
  due_ns_ = next_deadline();
}

std::uint64_t Engine::next_deadline() const {
  std::uint64_t t =
      std::min({next_probe_ns_, next_gossip_ns_, next_sync_ns_, table_.next_expiry(), syncs_.next_expiry()});
  if (!joined_) t = std::min(t, next_join_ns_);
  t = std::min({t, settle_sync_ns_, next_reconnect_ns_});
  if (followup_joins_ > 0) t = std::min(t, next_followup_ns_);
  if (!pending_admissions_.empty()) t = std::min(t, admission_.next_token_ns());
  if (!probationers_.empty()) t = std::min(t, probationers_.front().first);
  if (!proof_checks_.empty()) t = std::min(t, proof_checks_.front().first);
  if (!last_pings_.empty()) t = std::min(t, last_pings_.front().due_ns);
  if (!retells_.empty()) t = std::min(t, retells_.front().due_ns);
  if (const auto& p = probes_.current()) {
    t = std::min(t, p->indirect_sent ? p->final_deadline_ns : p->direct_deadline_ns);
  }
  t = std::min(t, probes_.earliest_relay_deadline());
  t = std::min(t, suspicions_.earliest());
  return t;
}

// ---------------------------------------------------------------- local changes

void Engine::leave(std::uint64_t now_ns) {
  // Leaving twice says nothing new.
  if (leaving_) return;
  leaving_ = true;
  probes_.current().reset();
  const Member& me = self();
  queue_broadcast(config_.name, Leave{me.incarnation, me.name}, PriorityClass::kUrgent);
  gossip_soon(std::max(now_ns, last_now_ns_));
}

bool Engine::leave_done() const {
  if (!leaving_) return false;
  // Transmitted enough (retired from the queue), or nobody left to tell.
  return !broadcasts_.contains({BroadcastQueue::Kind::kMember, config_.name}) || table_.live_count() <= 1;
}

bool Engine::set_tags(std::vector<Tag> tags, std::uint64_t /*now_ns*/) {
  // Bounded metadata: refuse rather than truncate silently.
  if (tag_bytes(tags) > config_.max_tag_bytes) return false;
  Member& me = self();
  me.set_profile(me.addr(), tags, me.protocol_version());
  ++me.incarnation;
  queue_broadcast(config_.name, self_alive(), PriorityClass::kGossip);
  return true;
}

void Engine::send_user_data(std::string data, std::uint64_t /*now_ns*/) {
  broadcasts_.push({BroadcastQueue::Kind::kUserData, config_.name}, UserData{config_.name, std::move(data)},
                   PriorityClass::kGossip);
}

std::vector<Outgoing> Engine::take_outbox() { return std::exchange(outbox_, {}); }

void Engine::take_outbox(std::vector<Outgoing>& out) {
  out.clear();
  out.swap(outbox_);
}

std::vector<MemberEvent> Engine::take_events() {
  std::vector<MemberEvent> out;
  take_events(out);
  return out;
}

void Engine::take_events(std::vector<MemberEvent>& out) {
  out.assign(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
}

std::vector<UserData> Engine::take_user_data() {
  std::vector<UserData> out(std::make_move_iterator(user_data_.begin()), std::make_move_iterator(user_data_.end()));
  user_data_.clear();
  return out;
}

}  // namespace gw::cp::engine
