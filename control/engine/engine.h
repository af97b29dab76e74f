// The membership engine (SWIM + Lifeguard) as a pure, deterministic state machine.
//
// Inputs: decoded messages with their sender address, timer ticks, join/leave and
// metadata calls, each with the current (virtual or monotonic) time in ns. Outputs:
// datagrams to send (take_outbox) and member events (take_events). All randomness
// comes from the seeded Rng it owns, and output is produced only by walking
// ordered containers, so the same seed and inputs give byte-identical outputs.
// Nothing here touches DPDK, sockets, threads or the wall clock.
//
// The engine is a dispatcher over five policies, each owning its queues and
// timers (docs/membership.md):
//   newcomers.h      admission, probation, storms and surges
//   joining.h        seeds, join retries, follow-ups
//   probing.h        the probe cycle, relays, suspicions, Lifeguard
//   dissemination.h  the broadcast queue, gossip rounds, eager rounds
//   anti_entropy.h   syncs, digests, settle syncs, reconnects
// It routes each input to the policy that handles it, applies the state
// changes policies ask for (effects.h) to the member table by SWIM's rules
// (state.cc), tells the policies that have to hear of a change, and takes its
// next deadline as the minimum over the policies'.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "control/engine/anti_entropy.h"
#include "control/engine/core.h"
#include "control/engine/dissemination.h"
#include "control/engine/effects.h"
#include "control/engine/joining.h"
#include "control/engine/newcomers.h"
#include "control/engine/probing.h"

namespace gw::cp::engine {

class Engine final : private Effects {
 public:
  // `config` should pass EngineConfig::validate(); zero intervals are raised to
  // 1 ms so that timers always advance.
  Engine(EngineConfig config, std::uint64_t seed, std::uint64_t now_ns);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // ---- inputs ----
  // One decoded datagram from `from` (the transport source address).
  void handle(const Address& from, const Compound& messages, std::uint64_t now_ns);
  // Runs every timer that is due at `now_ns`. Call at or after next_deadline().
  void tick(std::uint64_t now_ns);
  // Sends a join SyncRequest to each seed (at most kMaxSeeds), retried while no
  // seed has answered.
  void join(std::span<const Address> seeds, std::uint64_t now_ns) { joining_.join(seeds, now_ns); }
  // Broadcasts our Leave (urgent) and stops probing and syncing.
  void leave(std::uint64_t now_ns);
  // True once our Leave has been transmitted retransmit_limit() times (or there
  // is nobody left to tell): the host may exit.
  bool leave_done() const;
  // New metadata: bumps our incarnation and broadcasts an Alive. False (and no
  // change) if the tags exceed max_tag_bytes.
  bool set_tags(std::vector<Tag> tags, std::uint64_t now_ns);
  // Gossips an opaque payload from us (the latest replaces an unsent older one).
  void send_user_data(std::string data, std::uint64_t now_ns);

  // ---- outputs ----
  std::vector<Outgoing> take_outbox();
  // The same into `out` (emptied first), trading storage with it: a host that
  // drains the engine after every input, with one vector of its own, makes no
  // allocation for it once both have grown (the simulator, ten thousand
  // engines, drains after every event).
  void take_outbox(std::vector<Outgoing>& out);
  std::vector<MemberEvent> take_events();
  // The same into `out` (emptied first), which keeps its storage.
  void take_events(std::vector<MemberEvent>& out);
  std::vector<UserData> take_user_data();
  // Earliest time tick() has work to do (UINT64_MAX: none).
  std::uint64_t next_deadline() const;
  // The host's wall clock was stepped: Unix time minus now_ns is now this
  // (the incarnation ceiling follows). Ignored without a wall clock
  // (unix_clock_offset_ns 0 in the config) or for 0.
  void set_unix_clock_offset(std::uint64_t offset_ns) {
    if (core_.config.unix_clock_offset_ns != 0 && offset_ns != 0) core_.config.unix_clock_offset_ns = offset_ns;
  }
  // For tests: `a` receives our datagrams, as if it had acked our probe
  // (return_routes.h); and the keys of the address table and of cookies.
  void prove_address(const Address& a, std::uint64_t now_ns) { core_.routes.prove(a, now_ns); }
  bool address_proven(const Address& a, std::uint64_t now_ns) const { return core_.routes.proven(a, now_ns); }
  void set_route_keys(std::uint64_t k0, std::uint64_t k1, std::uint64_t c0, std::uint64_t c1) {
    core_.routes.set_keys(k0, k1, c0, c1);
  }
  // The secret of our sync cookies (return_routes.h): a host that faces a
  // network sets a random one (by default it derives from the seed).
  void set_cookie_key(std::uint64_t k0, std::uint64_t k1) { core_.routes.set_cookie_key(k0, k1); }

  // ---- state ----
  const std::string& name() const { return core_.config.name; }
  const EngineConfig& config() const { return core_.config; }
  std::uint64_t incarnation() const { return core_.self().incarnation; }
  const MemberTable& table() const { return core_.table; }
  std::vector<Member> members() const;
  const Member* member(const std::string& name) const { return core_.table.find(name); }
  // Alive or Suspect members, ourselves included.
  std::size_t num_live() const { return core_.table.live_count(); }
  Counters counters() const;
  std::uint32_t health_score() const { return probing_.awareness().score(); }
  // The share of our direct pings to live members that went unanswered
  // (Core::RoundTripLoss): what sets a probationer's proof pings.
  double round_trip_loss() const { return core_.round_trip_loss.fraction(); }
  // The probe ring's clock at our `now_ns` (Probing::ring_clock): what the
  // ring's rounds are read from, agreed through the pings.
  std::uint64_t ring_clock(std::uint64_t now_ns) const { return probing_.ring_clock(now_ns); }
  // The probe timeout/interval as currently stretched by local health.
  std::uint64_t probe_timeout_ns() const { return probing_.probe_timeout_ns(); }
  std::uint64_t probe_interval_ns() const { return probing_.probe_interval_ns(); }
  // When the suspicion of `name` will declare it dead, if it is suspected.
  std::optional<std::uint64_t> suspicion_deadline(const std::string& name) const;
  std::optional<std::uint32_t> suspicion_confirmations(const std::string& name) const;
  std::uint32_t retransmit_limit() const { return core_.retransmit_limit(); }
  // How often we send a Suspect ourselves (config suspicion_retransmit_mult).
  std::uint32_t suspicion_retransmit_limit() const { return core_.suspicion_retransmit_limit(); }
  const BroadcastQueue& broadcasts() const { return dissemination_.broadcasts(); }
  bool in_storm(std::uint64_t now_ns) const override { return newcomers_.in_storm(now_ns); }
  bool in_surge(std::uint64_t now_ns) const { return newcomers_.in_surge(now_ns); }
  bool leaving() const { return core_.leaving; }
  bool joined() const { return joining_.joined(); }
  std::uint32_t join_attempts() const { return joining_.attempts(); }
  std::size_t pending_admissions() const { return newcomers_.pending(); }

  static constexpr std::size_t kMaxSeeds = Joining::kMaxSeeds;
  static constexpr std::size_t kMaxNameBytes = engine::kMaxNameBytes;
  // A datagram's first this many subjects are looked up once, when their
  // entries are prefetched (more than a datagram's budget holds).
  static constexpr std::size_t kNamedAhead = 64;

 private:
  // ---- Effects: what the policies ask for ----
  bool send(const Address& to, PriorityClass cls, Compound messages, bool piggyback) override {
    return emit(to, cls, std::move(messages), piggyback, false, false);
  }
  bool send_gossip(const Address& to, PriorityClass cls, Compound messages) override {
    return emit(to, cls, std::move(messages), false, true, false);
  }
  bool send_request(const Address& to, Compound messages) override {
    return emit(to, PriorityClass::kBulk, std::move(messages), false, false, true);
  }
  std::size_t reply_room(const Address& to) const override;
  // What the datagram being handled still allows to addresses not proven.
  std::size_t credit() const;
  // A reply to an address not proven, bounded by the credit of the datagram
  // handled (docs/membership.md, "No reflection"): gathered with the other
  // replies to that address into one datagram, trimmed to the credit (its
  // last messages first), or refused if its first message does not fit.
  // True if sent (or gathered).
  bool emit_bounded(const Address& to, PriorityClass cls, Compound& messages, bool piggyback, bool gossip);
  // News piggybacked on the bounded replies, within what the credit leaves.
  void piggyback_bounded();
  // News a bounded reply could not carry, held until its address proves
  // itself (ReturnRoutes::hold; docs/membership.md, "News held for a route
  // check").
  void hold_for_check(const Address& to, Message m);
  // A route check (a ping) to each address news was held back from.
  void check_routes(std::uint64_t now_ns);
  // `to` receives our datagrams (counted in `counter` if news): proven, and
  // what was held back from it sent.
  void prove_route(const Address& to, std::uint64_t now_ns, std::uint64_t& counter);
  // Both: `gossip` charges the datagram to the budget's gossip; otherwise
  // it is charged by its class (bulk: the sync share; else probes and urgent
  // news), and what is piggybacked on it to gossip.
  // `ours`: a request of ours (send_request), not a reply.
  bool emit(const Address& to, PriorityClass cls, Compound messages, bool piggyback, bool gossip, bool ours);
  void broadcast(const std::string& node, Message msg, PriorityClass cls, std::uint32_t transmit_cap) override;
  void alive(const Alive& a, std::uint64_t now_ns, bool from_join) override {
    apply_alive(a, now_ns, from_join ? AliveSource::kJoinAnswer : AliveSource::kGossip);
  }
  void suspect(const Suspect& s, std::uint64_t now_ns) override { apply_suspect(s, now_ns); }
  void dead(std::uint64_t incarnation, const std::string& node, const std::string& from, MemberStatus status,
            std::uint64_t now_ns) override {
    apply_dead(incarnation, node, from, status, now_ns);
  }
  void merge(const std::vector<MemberState>& members, const std::vector<Release>& releases, const std::string& from,
             std::uint64_t now_ns, bool from_join) override;
  void promote(Member& m, std::uint64_t now_ns) override;
  void forget_probationer(const std::string& name) override;
  std::vector<std::string> random_peers(std::size_t k, const std::string& exclude, bool include_suspect) override;
  std::optional<std::string> newcomer_to_probe(std::uint64_t now_ns) override {
    return newcomers_.probe_target(now_ns);
  }
  bool last_ping(const Member& m, std::uint64_t now_ns) override { return newcomers_.last_ping(m, now_ns); }
  void request_whole_view(const Address& to, std::uint32_t seq_no, std::uint64_t now_ns,
                          bool push_view = true) override {
    anti_entropy_.request_whole_view(to, seq_no, now_ns, push_view);
  }
  bool sync_answered(std::uint32_t seq_no) const override { return anti_entropy_.answered(seq_no); }
  bool sync_awaiting(std::uint32_t seq_no) const override { return anti_entropy_.awaiting(seq_no); }
  void sync_by(std::uint64_t at_ns) override { anti_entropy_.sync_by(at_ns); }

  // ---- routing ----
  void on_ack(const Address& from, const Ack& m, std::uint64_t now_ns);
  void on_sync_response(const Address& from, const SyncResponse& m, std::uint64_t now_ns);
  void on_user_data(const UserData& m);

  // ---- the member table's rules (state.cc) ----
  // Where an Alive came from: a gossiped message, a sync's window, or the
  // answer to a whole-view request of ours (join, follow-up, rejoin: one
  // member's word goes through admission, two members' is admitted at once).
  enum class AliveSource : std::uint8_t { kGossip, kSync, kJoinAnswer };
  // `name_id`: what MemberTable::prefetch returned for a.node, when the
  // caller prefetched its entry (checked, not trusted: see
  // MemberTable::find); kNone: looked up.
  void apply_alive(const Alive& a, std::uint64_t now_ns, AliveSource source = AliveSource::kGossip,
                   std::uint32_t name_id = IdentityPool::kNone);
  // A never-seen member's Alive: admission, then into the table.
  void admit_new(const Alive& a, std::uint64_t now_ns, AliveSource source);
  // A known member's profile from an Alive. `new_life` (a newer incarnation):
  // its build is what the Alive says, unknown if it says none (a restart may
  // have brought another); otherwise a build not said stays as held. A
  // protocol version not said (0) stays as held.
  void set_profile(Member& m, const Alive& a, bool new_life);
  // A member's build said first-hand outside an Alive (an ack to our ping
  // that asked for it): taken for its current life.
  void take_build(const std::string& node, const std::string& build);
  // merged: from a peer's sync (a tombstone or suspicion there), not a message.
  void apply_suspect(const Suspect& s, std::uint64_t now_ns, bool merged = false);
  // `unproven`: a probation's verdict (Dead::unproven).
  void apply_dead(std::uint64_t incarnation, const std::string& node, const std::string& from, MemberStatus status,
                  std::uint64_t now_ns, bool unproven = false);
  // A member joined our view: counted, reported, and (news by gossip) the
  // settle sync armed.
  void member_joined(const Member& m, AliveSource source, std::uint64_t now_ns);
  // told: the suspicion was told on the ring, not gossiped (Probing::spread_suspicion).
  void refute(std::uint64_t heard_incarnation, bool told = false);
  // Queues our word about tombstoned `m` as a reply to the current sender: a
  // Leave, a newcomer's Dead, or our suspicion of an established member.
  void correct(const Member& m);
  // Queues our suspicion of an established member we hold dead, as a reply to
  // the current sender (once per sender and member).
  void correct_established(const Name& name, std::uint64_t incarnation);
  // Queues our newer Alive about live `m` (us included) as a reply to a
  // sender that spread an older incarnation's Suspect or Dead.
  void correct_stale(const Member& m);
  // The same for a member we hold only as a graveyard trace.
  void correct_buried(const std::string& node, std::uint64_t incarnation, std::uint64_t now_ns);
  // We hold the member `name_id` failed (FailedMembers) and have evidence it
  // may be alive (a datagram from it at `to`, or an Alive of it no newer than
  // its death): tell it, at most once a probe interval. Only the member can
  // refute; arguing with whoever still believes it alive settles nothing.
  void tell_if_failed(std::uint32_t name_id, const Address& to, std::uint64_t now_ns);
  // The sender of a datagram, as its messages name it (a ping, indirect ping,
  // nack or sync names its sender; an ack or user data may be relayed).
  static std::string_view sender_of(const Compound& messages);
  // True if `incarnation` is beyond belief: more than max_incarnation_jump above
  // what we hold for `known` (nullptr: never seen), or near UINT64_MAX.
  bool far_future(std::uint64_t incarnation, const Member* known) const;
  // The highest incarnation we believe now: Unix time now plus
  // incarnation_clock_slack_ns, in microseconds (UINT64_MAX without a wall
  // clock: unix_clock_offset_ns 0).
  std::uint64_t incarnation_ceiling(std::uint64_t now_ns) const;
  // True if a Suspect's `from` may count as a confirmation here: we, on a
  // tick; or a live member of the view at the datagram's source address.
  bool vouched(const std::string& from) const;
  // False (and counted) if `incarnation` is far_future or above the ceiling.
  bool believable(std::uint64_t incarnation, const Member* known, std::uint64_t now_ns);

  Core core_;
  Newcomers newcomers_;
  Probing probing_;
  Dissemination dissemination_;
  AntiEntropy anti_entropy_;
  Joining joining_;
  // The datagram handle() is working through: its sender (nullptr in tick())
  // and the corrections of stale news to send back to it; and the suspicions
  // we confirmed to a sender, as (sender, member id): each once.
  // While it is handled, what each address not proven may be sent (credit:
  // the datagram's codec bytes, its sealing counted as
  // kDatagramOverheadBytes) and the datagrams gathered for them, one per
  // address (outbox index; piggyback wanted; what it may still be sent).
  struct Inbound {
    const Address* from = nullptr;
    // The member whose whole-view answer is being merged (merge(), from_join).
    const std::string* answer_from = nullptr;
    Compound corrections;
    std::deque<std::pair<Address, std::uint32_t>> confirmed;
    const Compound* messages = nullptr;
    static constexpr std::size_t kUncounted = SIZE_MAX;
    mutable std::size_t credit = kUncounted;
    struct Bounded {
      std::size_t index = 0;
      bool piggyback = false;
      std::size_t credit = 0;  // what its destination may still be sent
    };
    std::vector<Bounded> bounded;
    // Addresses news was held back from while this datagram was handled.
    std::vector<Address> held_for;
  } inbound_;
  static constexpr std::size_t kMaxCorrections = 64;
  static constexpr std::size_t kMaxConfirmed = 256;
  std::uint64_t due_ns_ = 0;  // next_deadline() as of the end of the last tick
};

}  // namespace gw::cp::engine
