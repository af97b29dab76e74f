// The dispatcher: inputs routed to the policies, timers run in order, the
// effects policies ask for carried out. The member table's rules: state.cc.
#include "control/engine/engine.h"

#include <algorithm>
#include <array>
#include <type_traits>

#include "control/engine/wire_size.h"

namespace gw::cp::engine {

Engine::Engine(EngineConfig config, std::uint64_t seed, std::uint64_t now_ns)
    : core_(std::move(config), seed, now_ns),
      newcomers_(core_, *this, now_ns),
      probing_(core_, *this, now_ns),
      dissemination_(core_, *this, now_ns),
      anti_entropy_(core_, *this, now_ns),
      joining_(core_, *this) {
  // Announce ourselves to whoever we talk to first: our life's news, with
  // what we run.
  Alive hello = core_.self_alive();
  hello.build = core_.self().build();
  broadcast(core_.config.name, std::move(hello), PriorityClass::kGossip, 0);
}

// ---------------------------------------------------------------- inputs

void Engine::handle(const Address& from, const Compound& messages, std::uint64_t now_ns) {
  core_.last_now_ns = std::max(core_.last_now_ns, now_ns);
  ++core_.counters.packets_in;
  inbound_.corrections.clear();
  inbound_.from = &from;
  // What this datagram may cause to be sent to addresses that have not
  // proven they receive ours: its own bytes, sealed as it came (no
  // reflection: docs/membership.md).
  inbound_.bounded.clear();
  inbound_.messages = &messages;
  inbound_.credit = Inbound::kUncounted;
  // A member we hold failed is talking to us (after a partition heals, a
  // reconnect from the other side): it is told, and refutes.
  if (anti_entropy_.any_failed())
    if (const std::string_view sender = sender_of(messages); !sender.empty())
      tell_if_failed(identities().find_name(sender), from, now_ns);
  // The entries of the members this datagram is about, asked for together
  // before any is read (a piggybacked datagram carries a dozen or more); the
  // first kNamedAhead names' ids are kept for their turn (hashed once).
  std::array<std::uint32_t, kNamedAhead> ids;
  const bool prefetched = messages.size() > 1;
  if (prefetched)
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const std::uint32_t id = core_.table.prefetch(message_subject(messages[i]));
      if (i < ids.size()) ids[i] = id;
    }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Message& msg = messages[i];
    ++core_.counters.msg_in[msg.index()];
    std::visit(
        [&](const auto& m) {
          using T = std::decay_t<decltype(m)>;
          if constexpr (std::is_same_v<T, Ping>)
            probing_.on_ping(from, m, now_ns);
          else if constexpr (std::is_same_v<T, Ack>)
            on_ack(from, m, now_ns);
          else if constexpr (std::is_same_v<T, IndirectPing>)
            probing_.on_indirect_ping(from, m, now_ns);
          else if constexpr (std::is_same_v<T, Nack>)
            probing_.on_nack(m);
          else if constexpr (std::is_same_v<T, Alive>)
            apply_alive(m, now_ns, AliveSource::kGossip, prefetched && i < ids.size() ? ids[i] : IdentityPool::kNone);
          else if constexpr (std::is_same_v<T, Suspect>)
            apply_suspect(m, now_ns);
          else if constexpr (std::is_same_v<T, Dead>)
            apply_dead(m.incarnation, m.node, m.from, MemberStatus::kDead, now_ns, m.unproven);
          else if constexpr (std::is_same_v<T, Leave>)
            apply_dead(m.incarnation, m.node, m.node, MemberStatus::kLeft, now_ns);
          else if constexpr (std::is_same_v<T, SyncRequest>)
            anti_entropy_.on_request(from, m, now_ns);
          else if constexpr (std::is_same_v<T, SyncResponse>)
            on_sync_response(from, m, now_ns);
          else
            on_user_data(m);
        },
        msg);
  }
  // The sender spread news older than ours about members we hold dead or left
  // (an Alive or Suspect of an incarnation we buried), or a Suspect or Dead
  // of an incarnation the member has since refuted: tell it, in one datagram
  // back, so it stops spreading them. Without it, a member that
  // missed a death keeps a zombie for a whole suspicion timeout, because
  // everyone it asks has long stopped gossiping the death.
  if (!inbound_.corrections.empty()) {
    ++core_.counters.stale_corrections;
    send(from, PriorityClass::kUrgent, std::move(inbound_.corrections), false);
    inbound_.corrections.clear();
  }
  check_routes(now_ns);
  piggyback_bounded();
  // A sender not proven banks what its datagram was not answered with.
  if (!core_.routes.proven(from, now_ns)) {
    std::size_t left = credit();
    for (const Inbound::Bounded& b : inbound_.bounded)
      if (core_.outbox[b.index].to == from) left = b.credit;
    if (left > 0) core_.routes.earn(from, left, now_ns);
  }
  inbound_.bounded.clear();
  inbound_.from = nullptr;
  inbound_.messages = nullptr;
}

std::string_view Engine::sender_of(const Compound& messages) {
  for (const Message& msg : messages) {
    if (const auto* p = std::get_if<Ping>(&msg)) return p->source;
    if (const auto* p = std::get_if<IndirectPing>(&msg)) return p->source;
    if (const auto* n = std::get_if<Nack>(&msg)) return n->source;
    if (const auto* r = std::get_if<SyncRequest>(&msg)) return r->source;
    if (const auto* r = std::get_if<SyncResponse>(&msg)) return r->source;
  }
  return {};
}

void Engine::tell_if_failed(std::uint32_t name_id, const Address& to, std::uint64_t now_ns) {
  if (name_id == IdentityPool::kNone) return;
  FailedMembers::Entry* e = anti_entropy_.failed(name_id);
  if (e == nullptr || (e->told_ns != 0 && now_ns - std::min(now_ns, e->told_ns) < core_.config.probe_interval_ns))
    return;
  // Its tombstone says more (a later death) while it lasts.
  std::uint64_t incarnation = e->incarnation;
  if (const Member* m = core_.table.find_id(name_id); m != nullptr && m->status == MemberStatus::kDead)
    incarnation = std::max(incarnation, m->incarnation);
  e->told_ns = now_ns;
  ++core_.counters.dead_told;
  send(to, PriorityClass::kUrgent, Compound{Dead{incarnation, e->name.str(), core_.config.name}}, false);
}

void Engine::on_ack(const Address& from, const Ack& m, std::uint64_t now_ns) {
  // The probed member's own answer, from its own address, to a ping we sent
  // there: that address receives our datagrams (return_routes.h). A relayed
  // ack comes from the helper's address, and proves nothing of it.
  const Member* acker = core_.table.find(m.source);
  const bool direct = acker != nullptr && !acker->is_tombstone() && acker->addr() == from;
  if (direct && probing_.answers_probe(m)) prove_route(from, now_ns, core_.counters.route_proven_answer);
  // A route check's ack (check_routes), from where we sent it: whoever
  // answers there receives our datagrams.
  if (core_.routes.answers_check(from, m.seq_no)) {
    prove_route(from, now_ns, core_.counters.route_proven_check);
    return;
  }
  // Our probe's, a proof or last ping's (newcomers), or a relay's.
  if (probing_.on_probe_ack(m, now_ns) || newcomers_.on_ack(m, now_ns)) {
    // A proof or last ping's, answered from the newcomer's address (its
    // number matched: Newcomers::on_ack).
    if (direct) prove_route(from, now_ns, core_.counters.route_proven_answer);
    // The build we asked for (our ping's want_build), first-hand.
    if (!m.build.empty()) take_build(m.source, m.build);
    return;
  }
  probing_.on_relay_ack(m);
}

void Engine::on_sync_response(const Address& from, const SyncResponse& m, std::uint64_t now_ns) {
  // Not the answer yet: a cookie to ask again with (no reflection).
  if (m.cookie != 0) {
    anti_entropy_.on_cookie(m);
    return;
  }
  if (!anti_entropy_.accept(m, inbound_.from)) return;
  // The answer to our request, from the address we sent it to: that address
  // receives our datagrams, as a direct ack to our ping shows.
  if (const Address* asked = anti_entropy_.asked_at(m.seq_no); asked != nullptr && *asked == from)
    prove_route(from, now_ns, core_.counters.route_proven_answer);
  const bool join_answer = joining_.on_answer(m.seq_no, now_ns);
  merge(m.members, m.releases, m.source, now_ns, join_answer);
  anti_entropy_.after_merge(m, now_ns);
}

void Engine::on_user_data(const UserData& m) {
  ++core_.counters.user_data_in;
  if (core_.user_data.size() >= core_.config.max_events) {
    core_.user_data.pop_front();
    ++core_.counters.events_drop_full;
  }
  core_.user_data.push_back(m);
}

// ---------------------------------------------------------------- timers

void Engine::tick(std::uint64_t now_ns) {
  // Due a while ago and not run since (neither tick nor message): stalled.
  if (due_ns_ != 0 && due_ns_ != UINT64_MAX &&
      now_ns > std::max(due_ns_, core_.last_now_ns) + core_.config.probe_interval_ns)
    probing_.after_own_stall(now_ns);
  core_.last_now_ns = std::max(core_.last_now_ns, now_ns);
  // In this order: a verdict reached in one step is seen by the next.
  probing_.run_probes(now_ns);
  newcomers_.weigh_suspicions(now_ns);
  newcomers_.expire_last_pings(now_ns);
  probing_.run_suspicions(now_ns);
  dissemination_.run(now_ns);
  newcomers_.admit_waiting(now_ns);
  newcomers_.end_probations(now_ns);
  anti_entropy_.expire(now_ns);
  joining_.run(now_ns);
  anti_entropy_.run(now_ns);
  core_.counters.tombstones_expired += core_.table.expire_tombstones(now_ns);
  due_ns_ = next_deadline();
}

std::uint64_t Engine::next_deadline() const {
  return std::min({core_.table.next_expiry(), newcomers_.next_deadline(), probing_.next_deadline(),
                   dissemination_.next_deadline(), anti_entropy_.next_deadline(), joining_.next_deadline()});
}

// ---------------------------------------------------------------- effects

bool Engine::emit(const Address& to, PriorityClass cls, Compound messages, bool piggyback, bool gossip, bool ours) {
  // Nowhere to send to.
  if (to.empty()) return false;
  if (core_.outbox.size() >= core_.config.max_outbox) {
    ++core_.counters.outbox_drop_full;
    return false;
  }
  // A reply to an address that has not proven it receives our datagrams:
  // within the bytes of the datagram being handled.
  if (!ours && inbound_.from != nullptr && !core_.routes.proven(to, core_.last_now_ns))
    return emit_bounded(to, cls, messages, piggyback, gossip);
  // The datagram travels in the most important class it carries.
  for (const Message& m : messages) cls = std::min(cls, default_priority(m));
  EgressBudget& budget = core_.budget;
  const bool budgeted = !budget.unlimited();
  if (budgeted) budget.refill(core_.last_now_ns);
  const PriorityClass own_cls = cls;
  std::size_t own = 0;    // estimated codec bytes before piggybacking
  std::size_t extra = 0;  // ... of the news piggybacked
  if (piggyback || budgeted) own = estimated_size(messages);
  if (piggyback && own < core_.config.max_packet_bytes) {
    // News rides along only as far as the budget's gossip has room: at a
    // tight budget every ack filled to a whole datagram was what starved the
    // probes themselves.
    const std::size_t room = static_cast<std::size_t>(
        std::min<std::uint64_t>(core_.config.max_packet_bytes - own, budget.gossip_room()));
    const std::size_t before = messages.size();
    const PriorityClass best = room > 0 ? dissemination_.piggyback(room, messages) : PriorityClass::kBulk;
    if (messages.size() > before) {
      if (best < cls) cls = best;
      if (budgeted) extra = estimated_size(messages) - std::min(own, estimated_size(messages));
    }
  }
  if (budgeted) {
    const std::uint64_t bytes = own + EgressBudget::kDatagramOverheadBytes;
    if (gossip)
      budget.charge_gossip(bytes);
    else if (own_cls == PriorityClass::kBulk)
      budget.charge_bulk(bytes);
    else
      budget.charge_essential(bytes);
    budget.charge_gossip(extra);
  }
  for (const Message& m : messages) ++core_.counters.msg_out[m.index()];
  ++core_.counters.packets_out;
  core_.outbox.push_back(Outgoing{to, cls, std::move(messages)});
  return true;
}

std::size_t Engine::credit() const {
  // Counted when first needed: most datagrams cause nothing to be sent to
  // an address not proven.
  if (inbound_.credit == Inbound::kUncounted) {
    std::size_t n = EgressBudget::kDatagramOverheadBytes;
    if (inbound_.messages != nullptr)
      for (const Message& m : *inbound_.messages) n += exact_size(m);
    inbound_.credit = n;
  }
  return inbound_.credit;
}

std::size_t Engine::reply_room(const Address& to) const {
  if (inbound_.from == nullptr || core_.routes.proven(to, core_.last_now_ns)) return SIZE_MAX;
  std::size_t left = credit();
  for (const Inbound::Bounded& b : inbound_.bounded)
    if (core_.outbox[b.index].to == to) left = b.credit;
  const std::size_t fixed = EgressBudget::kDatagramOverheadBytes;
  return left > fixed ? left - fixed : 0;
}

bool Engine::emit_bounded(const Address& to, PriorityClass cls, Compound& messages, bool piggyback, bool gossip) {
  Counters& n = core_.counters;
  const std::size_t packet = core_.config.max_packet_bytes;
  // Gathered with the reply already going there (an ack, the news we tell
  // the sender, our corrections): one datagram's sealing, not several.
  // Sizes as the codec writes them, as the datagram handled was counted.
  // Each destination has the datagram's bytes: what a victim is sent is
  // bounded whatever else the datagram causes (a relay's ping to its target,
  // a Dead told to a member named in a sync answer).
  // Beyond that, what the destination sent us earlier and was not answered
  // with (ReturnRoutes::bank).
  Inbound::Bounded* into = nullptr;
  std::size_t own = credit();
  std::size_t size = 0;
  for (const Message& m : messages) size += exact_size(m);
  for (Inbound::Bounded& b : inbound_.bounded)
    if (core_.outbox[b.index].to == to) {
      own = b.credit;
      if (estimated_size(core_.outbox[b.index].messages) + size <= packet) into = &b;
    }
  const std::size_t banked = core_.routes.bank(to);
  std::size_t left = own + banked;
  const std::size_t fixed = into != nullptr ? 0 : EgressBudget::kDatagramOverheadBytes;
  bool trimmed = false;
  while (size + fixed > left && messages.size() > 1) {
    size -= std::min(size, exact_size(messages.back()));
    hold_for_check(to, std::move(messages.back()));
    messages.pop_back();
    trimmed = true;
  }
  // An ack asked for our build (a ping's want_build): without it rather
  // than not at all, if it would make the ack larger than the ping.
  if (size + fixed > left)
    if (Ack* a = std::get_if<Ack>(&messages.front()); a != nullptr && !a->build.empty()) {
      size -= exact_size(messages.front());
      a->build.clear();
      size += exact_size(messages.front());
      trimmed = true;
    }
  if (size + fixed > left) {
    ++n.reply_refused_unproven;
    for (Message& m : messages) hold_for_check(to, std::move(m));
    return false;
  }
  if (trimmed) ++n.reply_trimmed_unproven;
  if (size + fixed > own) core_.routes.spend(to, size + fixed - own);
  own -= std::min(own, size + fixed);
  for (Inbound::Bounded& b : inbound_.bounded)
    if (core_.outbox[b.index].to == to) b.credit = own;
  for (const Message& m : messages) cls = std::min(cls, default_priority(m));
  EgressBudget& budget = core_.budget;
  if (!budget.unlimited()) {
    budget.refill(core_.last_now_ns);
    const std::uint64_t bytes = size + fixed;
    if (gossip)
      budget.charge_gossip(bytes);
    else if (cls == PriorityClass::kBulk)
      budget.charge_bulk(bytes);
    else
      budget.charge_essential(bytes);
  }
  for (const Message& m : messages) ++n.msg_out[m.index()];
  if (into != nullptr) {
    Outgoing& o = core_.outbox[into->index];
    o.priority = std::min(o.priority, cls);
    for (Message& m : messages) o.messages.push_back(std::move(m));
    into->piggyback = into->piggyback || piggyback;
    return true;
  }
  ++n.packets_out;
  core_.outbox.push_back(Outgoing{to, cls, std::move(messages)});
  inbound_.bounded.push_back({core_.outbox.size() - 1, piggyback, own});
  return true;
}

void Engine::hold_for_check(const Address& to, Message m) {
  // Membership news only (a correction, the buddy rule's Suspect, a Dead
  // told): an ack or a ping held would be late for its purpose.
  if (!std::holds_alternative<Alive>(m) && !std::holds_alternative<Suspect>(m) && !std::holds_alternative<Dead>(m) &&
      !std::holds_alternative<Leave>(m))
    return;
  const std::size_t bytes = exact_size(m);
  if (!core_.routes.hold(to, std::move(m), bytes, core_.config.max_packet_bytes, core_.last_now_ns,
                         core_.config.probe_interval_ns)) {
    ++core_.counters.route_held_dropped;
    return;
  }
  ++core_.counters.route_held;
  if (std::find(inbound_.held_for.begin(), inbound_.held_for.end(), to) == inbound_.held_for.end())
    inbound_.held_for.push_back(to);
}

void Engine::check_routes(std::uint64_t now_ns) {
  // Each address news was held back from gets a ping of ours (one a probe
  // interval at most), within what the datagram handled still allows: its
  // ack, from there, proves the address and the news goes (prove_route).
  for (const Address& to : inbound_.held_for) {
    const std::uint32_t seq = core_.take_seq();
    if (!core_.routes.start_check(to, seq, now_ns, core_.config.probe_interval_ns)) continue;
    // As small as a ping is: no target (anyone answers), no name, no reply
    // address (the ack comes back to where this goes from).
    if (emit(to, PriorityClass::kProbe, Compound{Ping{seq, {}, {}, {}, 0}}, false, false, false))
      ++core_.counters.route_checks_sent;
    else
      core_.routes.answers_check(to, seq);  // not sent: not awaited
  }
  inbound_.held_for.clear();
  core_.counters.route_held_expired += core_.routes.take_held_expired();
}

void Engine::prove_route(const Address& to, std::uint64_t now_ns, std::uint64_t& counter) {
  if (!core_.routes.proven(to, now_ns)) {
    core_.routes.prove(to, now_ns, core_.proven_ttl());
    ++counter;
  }
  // What was held back from it goes now (it receives our datagrams).
  Compound news = core_.routes.take_held(to, now_ns);
  core_.counters.route_held_expired += core_.routes.take_held_expired();
  if (news.empty()) return;
  core_.counters.route_held_sent += news.size();
  send(to, PriorityClass::kUrgent, std::move(news), false);
}

void Engine::piggyback_bounded() {
  EgressBudget& budget = core_.budget;
  const std::size_t packet = core_.config.max_packet_bytes;
  for (Inbound::Bounded& b : inbound_.bounded) {
    if (!b.piggyback) continue;
    Outgoing& o = core_.outbox[b.index];
    const std::size_t own = estimated_size(o.messages);
    if (own >= packet) continue;
    if (!budget.unlimited()) budget.refill(core_.last_now_ns);
    const std::size_t room = static_cast<std::size_t>(std::min<std::uint64_t>(packet - own, budget.gossip_room()));
    const std::size_t bounded = std::min(room, b.credit);
    const std::size_t before = o.messages.size();
    const PriorityClass best = bounded > 0 ? dissemination_.piggyback(bounded, o.messages) : PriorityClass::kBulk;
    // News left for other datagrams than this one (the credit was short).
    if (bounded < room && dissemination_.broadcasts().size() > 0) ++core_.counters.reply_piggyback_cut_unproven;
    if (o.messages.size() == before) continue;
    o.priority = std::min(o.priority, best);
    const std::size_t extra = estimated_size(o.messages) - std::min(own, estimated_size(o.messages));
    b.credit -= std::min(b.credit, extra);
    if (!budget.unlimited()) budget.charge_gossip(extra);
    for (std::size_t i = before; i < o.messages.size(); ++i) ++core_.counters.msg_out[o.messages[i].index()];
  }
}

void Engine::broadcast(const std::string& node, Message msg, PriorityClass cls, std::uint32_t transmit_cap) {
  // A build is said first-hand only (our hello; every member's entry in the
  // syncs): relayed, it went N x retransmit_limit times with every join, and
  // under an egress budget those 20 bytes an Alive doubled the time a cluster
  // took to form (ci/budget: converged at 75-82 s instead of 43 s).
  if (Alive* a = std::get_if<Alive>(&msg); a != nullptr && !a->build.empty() && node != core_.config.name)
    a->build.clear();
  dissemination_.queue(node, std::move(msg), cls, transmit_cap);
}

void Engine::promote(Member& m, std::uint64_t now_ns) {
  core_.table.promote(m);
  ++core_.counters.probation_promoted;
  member_joined(m, AliveSource::kGossip, now_ns);
  broadcast(m.name.str(), Alive{m.incarnation, m.name, m.addr(), m.tags(), m.protocol_version(), m.build()},
            PriorityClass::kGossip, 0);
}

void Engine::forget_probationer(const std::string& name) {
  probing_.drop_suspicion(name);
  core_.table.forget_probationer(name);
}

std::vector<std::string> Engine::random_peers(std::size_t k, const std::string& exclude, bool include_suspect) {
  std::vector<std::string> out;
  if (k == 0) return out;
  const MemberTable& table = core_.table;
  // By name id (one text per id): no hash or string compare per candidate.
  const std::uint32_t self_id = core_.self_name.id();
  const std::uint32_t exclude_id = identities().find_name(exclude);  // kNone if empty or unknown
  auto usable = [&](const Name& name) {
    if (name.id() == self_id || name.id() == exclude_id) return false;
    const Member* m = table.find(name);
    if (m == nullptr) return false;
    const bool eligible = !m->probation && (m->status == MemberStatus::kAlive ||
                                            (include_suspect && m->status == MemberStatus::kSuspect));
    return eligible && std::find(out.begin(), out.end(), name.str()) == out.end();
  };
  // The probe list holds every live member (and stale names: checked).
  const std::vector<Name>& list = probing_.candidates();
  if (list.size() <= 4 * k + 16) {
    // Small: exact selection over a shuffled copy.
    std::vector<std::string> all;
    for (const Name& name : list)
      if (usable(name)) all.push_back(name.str());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    core_.rng.shuffle(all);
    if (all.size() > k) all.resize(k);
    return all;
  }
  // Large: sample (bounded attempts).
  for (std::size_t attempt = 0; attempt < 8 * k && out.size() < k; ++attempt) {
    const Name& name = list[static_cast<std::size_t>(core_.rng.uniform(list.size()))];
    if (usable(name)) out.push_back(name.str());
  }
  return out;
}

// ---------------------------------------------------------------- local changes

void Engine::leave(std::uint64_t now_ns) {
  // Leaving twice says nothing new.
  if (core_.leaving) return;
  core_.leaving = true;
  probing_.abandon_probe();
  const Member& me = core_.self();
  broadcast(core_.config.name, Leave{me.incarnation, me.name}, PriorityClass::kUrgent, 0);
  dissemination_.soon(std::max(now_ns, core_.last_now_ns));
}

bool Engine::leave_done() const {
  if (!core_.leaving) return false;
  // Transmitted enough (retired from the queue), or nobody left to tell.
  return dissemination_.told_our_leave() || core_.table.live_count() <= 1;
}

bool Engine::set_tags(std::vector<Tag> tags, std::uint64_t /*now_ns*/) {
  // Bounded metadata: refuse rather than truncate silently.
  if (tag_bytes(tags) > core_.config.max_tag_bytes) return false;
  Member& me = core_.self();
  me.set_profile(me.addr(), tags, me.protocol_version(), me.build());
  ++me.incarnation;
  broadcast(core_.config.name, core_.self_alive(), PriorityClass::kGossip, 0);
  return true;
}

void Engine::send_user_data(std::string data, std::uint64_t /*now_ns*/) {
  dissemination_.queue_user_data(std::move(data));
}

// ---------------------------------------------------------------- outputs and state

std::vector<Outgoing> Engine::take_outbox() { return std::exchange(core_.outbox, {}); }

void Engine::take_outbox(std::vector<Outgoing>& out) {
  out.clear();
  out.swap(core_.outbox);
}

std::vector<MemberEvent> Engine::take_events() {
  std::vector<MemberEvent> out;
  take_events(out);
  return out;
}

void Engine::take_events(std::vector<MemberEvent>& out) {
  out.assign(std::make_move_iterator(core_.events.begin()), std::make_move_iterator(core_.events.end()));
  core_.events.clear();
}

std::vector<UserData> Engine::take_user_data() {
  std::vector<UserData> out(std::make_move_iterator(core_.user_data.begin()),
                            std::make_move_iterator(core_.user_data.end()));
  core_.user_data.clear();
  return out;
}

std::vector<Member> Engine::members() const {
  std::vector<Member> out;
  out.reserve(core_.table.size());
  core_.table.for_each([&](const Member& m) { out.push_back(m); });
  return out;
}

Counters Engine::counters() const {
  Counters c = core_.counters;
  c.broadcast_drop = dissemination_.broadcasts().drops();
  c.broadcast_superseded = dissemination_.broadcasts().superseded();
  c.graveyard_evictions = core_.table.graveyard_evictions();
  c.graveyard_expired = core_.table.graveyard_expired();
  c.route_evictions = core_.routes.evictions();
  return c;
}

std::optional<std::uint64_t> Engine::suspicion_deadline(const std::string& name) const {
  const Suspicion* s = probing_.suspicion(name);
  if (s == nullptr) return std::nullopt;
  return s->deadline();
}

std::optional<std::uint32_t> Engine::suspicion_confirmations(const std::string& name) const {
  const Suspicion* s = probing_.suspicion(name);
  if (s == nullptr) return std::nullopt;
  return s->confirmations();
}

}  // namespace gw::cp::engine
