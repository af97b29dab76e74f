// The membership engine (SWIM + Lifeguard) as a pure, deterministic state machine.
//
// Inputs: decoded messages with their sender address, timer ticks, join/leave and
// metadata calls, each with the current (virtual or monotonic) time in ns. Outputs:
// datagrams to send (take_outbox) and member events (take_events). All randomness
// comes from the seeded Rng it owns, and output is produced only by walking
// ordered containers, so the same seed and inputs give byte-identical outputs.
// Nothing here touches DPDK, sockets, threads or the wall clock.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "control/engine/admission.h"
#include "control/engine/awareness.h"
#include "control/engine/broadcast_queue.h"
#include "control/engine/config.h"
#include "control/engine/member_table.h"
#include "control/engine/messages.h"
#include "control/engine/probe_scheduler.h"
#include "control/engine/rng.h"
#include "control/engine/suspicion.h"
#include "control/engine/sync.h"

namespace gw::cp::engine {

// One datagram to send: the host encodes `messages` (control/codec.h), seals it
// and queues it in `priority`'s egress class.
struct Outgoing {
  Address to;
  PriorityClass priority = PriorityClass::kGossip;
  Compound messages;
};

enum class EventKind : std::uint8_t { kJoin, kLeave, kFailed, kUpdate };

struct MemberEvent {
  EventKind kind = EventKind::kJoin;
  std::string node;
  Address addr;
  std::uint64_t incarnation = 0;
  std::vector<Tag> tags;
};

struct Counters {
  std::array<std::uint64_t, kMessageTypes> msg_in = {};  // by Message alternative
  std::array<std::uint64_t, kMessageTypes> msg_out = {};
  std::uint64_t packets_in = 0;
  std::uint64_t packets_out = 0;
  std::uint64_t outbox_drop_full = 0;
  std::uint64_t events_drop_full = 0;
  std::array<std::uint64_t, kPriorityClasses> broadcast_drop = {};  // by class dropped
  std::uint64_t broadcast_superseded = 0;
  std::uint64_t admission_drop_rate = 0;   // over the rate with the waiting list full
  std::uint64_t admission_deferred = 0;    // over the rate: waiting for a token
  std::uint64_t alive_drop_graveyard = 0;  // stale Alive about a member whose tombstone expired
  std::uint64_t graveyard_evictions = 0;   // oldest graveyard traces forgotten (bound)
  std::uint64_t admission_drop_policy = 0;
  std::uint64_t admission_drop_table_full = 0;
  std::uint64_t alive_drop_tombstone = 0;    // stale Alive about a Dead/Left member
  std::uint64_t update_drop_stale = 0;       // older incarnation about a live member
  std::uint64_t update_drop_unknown = 0;     // Suspect/Dead/Leave about an unknown member
  std::uint64_t update_drop_far_future = 0;  // incarnation beyond max_incarnation_jump
  std::uint64_t conflict_self_name = 0;      // an Alive with our name at another address
  std::uint64_t conflict_address = 0;        // a live member's name at another address, not newer
  std::uint64_t tags_drop_too_large = 0;
  std::uint64_t alive_drop_no_addr = 0;
  std::uint64_t alive_drop_bad_name = 0;  // empty or longer than kMaxNameBytes
  std::uint64_t refutations = 0;
  std::uint64_t suspicions = 0;
  std::uint64_t young_declared_dead = 0;    // newcomers that failed a probe in a storm: dead at once
  std::uint64_t young_last_pings = 0;       // ... whose probe no helper could vouch for: pinged once more first
  std::uint64_t young_last_acks = 0;        // ... that answered it: alive, no verdict
  std::uint64_t probation_started = 0;      // newcomers admitted on probation (storm or surge)
  std::uint64_t surges = 0;                 // arrival surges recognised (probation for arrivals)
  std::uint64_t gossip_eager = 0;           // gossip rounds brought forward for news of a death
  std::uint64_t own_stalls = 0;             // ticks that came a probe interval late: we were stalled
  std::uint64_t probe_abandoned_stall = 0;  // probes whose deadlines passed while we were stalled
  std::uint64_t probation_promoted = 0;     // ... that lived through it and joined the view
  std::uint64_t probation_died = 0;         // ... that died on probation (never in the view)
  std::uint64_t probation_proof_pings = 0;  // proof-of-life pings sent to probationers
  std::uint64_t probation_proof_acks = 0;   // ... answered
  std::uint64_t probation_unproven = 0;     // ... unanswered kProofPings times: declared dead (also in probation_died)
  std::uint64_t probation_death_told = 0;   // ... whose death we told the member that told us of it
  std::uint64_t probation_forgotten = 0;    // ... never proved alive: forgotten, no verdict
  std::uint64_t stale_corrections = 0;  // datagrams answering stale news: our Dead/Leave, our Suspect, the newer Alive
  std::uint64_t suspicion_confirmations = 0;
  std::uint64_t suspicion_tells = 0;    // datagrams telling our suspicion to the suspect and its next probers
  std::uint64_t suspicion_retells = 0;  // ... to the suspect again, each probe interval while it lasts
  std::uint64_t retell_drop_full = 0;   // suspicions told once but not retold: the retell list was full
  std::uint64_t deaths = 0;
  std::uint64_t leaves = 0;
  std::uint64_t joins = 0;
  std::uint64_t updates = 0;
  std::uint64_t tombstones_expired = 0;
  std::uint64_t probe_started = 0;
  std::uint64_t probe_newcomer = 0;  // probes sent to a newcomer out of round-robin order
  std::uint64_t probe_hearsay = 0;   // ... to a member we suspected on others' word whose verdict never came
  std::uint64_t probe_ack_direct = 0;
  std::uint64_t probe_ack_indirect = 0;
  std::uint64_t probe_failed = 0;
  std::uint64_t probe_outdated = 0;  // unanswered, but the target moved to a newer incarnation meanwhile: no verdict
  std::uint64_t probe_indirect_sent = 0;
  std::uint64_t probe_fallback_sent = 0;  // second direct pings sent with the indirect probes (fallback_ping)
  std::uint64_t probe_nack_received = 0;
  std::uint64_t ack_drop_unsolicited = 0;   // no probe or relay waits for it (late or unknown)
  std::uint64_t nack_drop_unsolicited = 0;  // not our probe, or not from a helper we asked
  std::uint64_t ping_drop_misdirected = 0;
  std::uint64_t relay_started = 0;
  std::uint64_t relay_drop_full = 0;
  std::uint64_t relay_ack_forwarded = 0;
  std::uint64_t relay_nack_sent = 0;
  std::uint64_t sync_started = 0;
  std::uint64_t sync_reconnects = 0;  // syncs sent to a member we consider failed
  std::uint64_t sync_answered = 0;
  std::uint64_t sync_digest_equal = 0;        // periodic syncs that found both views the same
  std::uint64_t sync_digest_differ = 0;       // ... that did not, after the responder's window
  std::uint64_t sync_bucket_windows = 0;      // sync windows of the differing buckets only
  std::uint64_t sync_whole_views = 0;         // periodic syncs answered with the whole view (far behind)
  std::uint64_t sync_incomplete_retries = 0;  // our digest syncs that timed out with parts missing, retried
  std::uint64_t join_answered = 0;            // join syncs answered (also in sync_answered)
  std::uint64_t join_drop_rate = 0;           // join syncs over the join answer rate (the joiner retries)
  std::uint64_t join_retries = 0;             // join rounds that had no answer and were sent again
  std::uint64_t join_followups = 0;           // whole-view syncs with other members after joining
  std::uint64_t sync_drop_concurrency = 0;
  std::uint64_t sync_drop_rate = 0;
  std::uint64_t sync_drop_unsolicited = 0;
  std::uint64_t sync_drop_oversize = 0;  // a received sync over max_sync_bytes or its part count
  std::uint64_t sync_bytes_out = 0;      // estimated encoded bytes of sync parts sent
  std::uint64_t user_data_in = 0;
};

class Engine {
 public:
  // `config` should pass EngineConfig::validate(); zero intervals are raised to
  // 1 ms so that timers always advance.
  Engine(EngineConfig config, std::uint64_t seed, std::uint64_t now_ns);

  // ---- inputs ----
  // One decoded datagram from `from` (the transport source address).
  void handle(const Address& from, const Compound& messages, std::uint64_t now_ns);
  // Runs every timer that is due at `now_ns`. Call at or after next_deadline().
  void tick(std::uint64_t now_ns);
  // Sends a join SyncRequest to each seed (at most kMaxSeeds), retried while no
  // seed has answered.
  void join(std::span<const Address> seeds, std::uint64_t now_ns);
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

  // ---- state ----
  const std::string& name() const { return config_.name; }
  const EngineConfig& config() const { return config_; }
  std::uint64_t incarnation() const;
  const MemberTable& table() const { return table_; }
  std::vector<Member> members() const;
  const Member* member(const std::string& name) const { return table_.find(name); }
  // Alive or Suspect members, ourselves included.
  std::size_t num_live() const { return table_.live_count(); }
  Counters counters() const;
  std::uint32_t health_score() const { return awareness_.score(); }
  // The probe timeout/interval as currently stretched by local health.
  std::uint64_t probe_timeout_ns() const { return awareness_.scale(config_.probe_timeout_ns); }
  std::uint64_t probe_interval_ns() const { return awareness_.scale(config_.probe_interval_ns); }
  // When the suspicion of `name` will declare it dead, if it is suspected.
  std::optional<std::uint64_t> suspicion_deadline(const std::string& name) const;
  std::optional<std::uint32_t> suspicion_confirmations(const std::string& name) const;
  std::uint32_t retransmit_limit() const;
  // How often we send a Suspect ourselves (config suspicion_retransmit_mult).
  std::uint32_t suspicion_retransmit_limit() const;
  const BroadcastQueue& broadcasts() const { return broadcasts_; }
  // A storm of short-lived members: storm_newcomer_failures newcomers failed
  // within storm_window_ns (and until storm_window_ns after the last such).
  bool in_storm(std::uint64_t now_ns) const;
  // An arrival surge (config: surge_*): never-seen members arrive faster
  // than a running cluster grows; they are admitted on probation.
  bool in_surge(std::uint64_t now_ns) const { return now_ns < surge_until_ns_; }
  bool leaving() const { return leaving_; }
  // Joined: a seed (or a member asked later) answered our join, or we had no seed.
  bool joined() const { return joined_; }
  std::uint32_t join_attempts() const { return join_attempts_; }
  std::size_t pending_admissions() const { return pending_admissions_.size(); }

  static constexpr std::size_t kMaxSeeds = 16;
  static constexpr std::size_t kMaxNameBytes = 255;
  static constexpr std::size_t kMaxRecentlyDead = 64;
  // A datagram's first this many subjects are looked up once, when their
  // entries are prefetched (more than a datagram's budget holds).
  static constexpr std::size_t kNamedAhead = 64;
  // Join rounds whose sequence numbers are still recognised as join answers.
  static constexpr std::uint32_t kJoinRoundsRemembered = 4;
  // Digest-only syncs of ours whose answers are still recognised.
  static constexpr std::size_t kDigestSyncsRemembered = 4;
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

 private:
  // Message handlers (one per type).
  void on_ping(const Address& from, const Ping& m, std::uint64_t now_ns);
  void on_indirect_ping(const Address& from, const IndirectPing& m, std::uint64_t now_ns);
  void on_ack(const Ack& m, std::uint64_t now_ns);
  void on_nack(const Nack& m);
  void on_sync_request(const Address& from, const SyncRequest& m, std::uint64_t now_ns);
  void on_sync_response(const SyncResponse& m, std::uint64_t now_ns);
  void on_user_data(const UserData& m);

  // Where an Alive came from: a gossiped message, a sync's window, or the
  // answer to our own join (admitted by policy alone, not rate-limited).
  enum class AliveSource : std::uint8_t { kGossip, kSync, kJoinAnswer };
  // State updates shared by gossip and sync merges. `name_id`: what
  // MemberTable::prefetch returned for a.node, when the caller prefetched its
  // entry (checked, not trusted: see MemberTable::find); kNone: looked up.
  void apply_alive(const Alive& a, std::uint64_t now_ns, AliveSource source = AliveSource::kGossip,
                   std::uint32_t name_id = IdentityPool::kNone);
  void admit_pending(std::uint64_t now_ns);
  void promote_probationers(std::uint64_t now_ns);
  // True if `h` may count against our health when it does not nack.
  bool helper_counts(const Member& h, std::uint64_t now_ns) const;
  // Live in our view for less than young_member_ns.
  bool newcomer(const Member& m, std::uint64_t now_ns) const;
  // A newcomer that also arrived well after us (in a cluster that is starting,
  // nobody is young).
  bool young(const Member& m, std::uint64_t now_ns) const;
  void remember_newcomer(Member& m);
  // A newcomer was suspected or declared dead here.
  void note_newcomer_failure(const std::string& name, std::uint64_t now_ns);
  void forget_newcomer(const std::string& name);
  void forget_newcomer_at(std::size_t i);
  // A never-seen member was admitted: counts towards an arrival surge.
  void note_arrival(std::uint64_t now_ns);
  // News that should not wait for the next gossip round (a death or a
  // departure of an established member): the round is brought forward.
  void gossip_soon(std::uint64_t now_ns);
  // A member joined our view: counted, reported, and (news by gossip) the
  // settle sync armed.
  void joined(const Member& m, AliveSource source, std::uint64_t now_ns);
  // After the last join heard: about as long as a join's epidemic lasts
  // (5 s on LAN), so that the peer asked has heard it too.
  std::uint64_t settle_delay() const { return 25 * config_.gossip_interval_ns; }
  // We were not run for a while (a starved control lcore): our own timeouts
  // measured our absence, not the others'.
  void after_own_stall(std::uint64_t now_ns);
  std::uint64_t eager_gap_ns() const { return config_.gossip_interval_ns / 10; }
  static constexpr std::uint32_t kEagerRounds = 3;
  // A random live newcomer to probe, if there is one.
  std::optional<std::string> young_target(std::uint64_t now_ns);
  // A member we suspect on others' word whose verdict should have reached us
  // by now (hearsay_checks_), if there is one.
  std::optional<std::string> hearsay_target(std::uint64_t now_ns);
  // Our target in this round of the probe ring, if the ring is in use.
  std::optional<std::string> ring_target(std::uint64_t now_ns);
  bool ring_in_use();
  // When our next probe is due: on our phase of the ring, or one scaled
  // interval from now.
  std::uint64_t next_probe_at(std::uint64_t now_ns);
  // merged: from a peer's sync (a tombstone or suspicion there), not a message.
  void apply_suspect(const Suspect& s, std::uint64_t now_ns, bool merged = false);
  // Our own failed probe confirmed a suspicion we held: the accusers are told.
  void confirm_to_accusers(const Suspect& s);
  // Our suspicion of m (or one merged from a sync), to those who act on it:
  // the suspect and its next probers on the ring (a newcomer's, or without
  // the ring: gossiped).
  void spread_suspicion(const Suspect& s, const Member& m, std::uint64_t now_ns, bool merged);
  // The probe ring's schedule is in force cluster-wide (probe_ring, 3+ members).
  bool ring_shared() const;
  // Up to k members that probe `target` this round and the next ones, by our view.
  std::vector<const Member*> next_probers(const std::string& target, std::uint32_t k, std::uint64_t now_ns) const;
  void apply_dead(std::uint64_t incarnation, const std::string& node, const std::string& from, MemberStatus status,
                  std::uint64_t now_ns);
  void merge(const std::vector<MemberState>& members, const std::string& from, std::uint64_t now_ns,
             bool from_join = false);
  // told: the suspicion was told on the ring, not gossiped (spread_suspicion).
  void refute(std::uint64_t heard_incarnation, bool told = false);
  // Queues our Dead/Leave about tombstoned `m` as a reply to the current sender.
  void correct(const Member& m, bool accused = false);
  // Queues our newer Alive about live `m` (us included) as a reply to a
  // sender that spread an older incarnation's Suspect or Dead.
  void correct_stale(const Member& m);
  // The same for a member we hold only as a graveyard trace.
  void correct_buried(const std::string& node, std::uint64_t incarnation);
  // True if `incarnation` is beyond belief: more than max_incarnation_jump above
  // what we hold for `known` (nullptr: never seen), or near UINT64_MAX.
  bool far_future(std::uint64_t incarnation, const Member* known) const;

  // Timers.
  void start_probe(std::uint64_t now_ns);
  void send_indirect_probes(std::uint64_t now_ns);
  void finish_probe_failed(std::uint64_t now_ns);
  // A newcomer in a storm that failed our probe with no helper's word against
  // it: one more direct ping before the verdict. False if none could be sent.
  bool last_ping(const Member& m, std::uint64_t now_ns);
  // A ping of its own number, no helpers, no suspicion (a probationer's proof
  // ping, a newcomer's last ping), its number kept in proof_seqs_; nullopt
  // when proof_seqs_ is full.
  std::optional<std::uint32_t> send_proof_ping(const Member& m);
  void expire_last_pings(std::uint64_t now_ns);
  void expire_relays(std::uint64_t now_ns);
  void expire_suspicions(std::uint64_t now_ns);
  void gossip(std::uint64_t now_ns);
  std::vector<std::string> gossip_targets(std::uint64_t now_ns);
  void start_sync(std::uint64_t now_ns);
  void sync_with(const Address& to, std::uint64_t now_ns);
  // The reconnect timer's round: maybe a sync to a failed member.
  void reconnect(std::uint64_t now_ns);
  std::uint64_t next_reconnect_at(std::uint64_t now_ns);
  void send_join(std::uint64_t now_ns);

  // Output helpers.
  template <typename Sync>
  // `only`: the buckets to send (differing_buckets), null or empty = all;
  // `buckets`: our bucket digests, sent with the digest (on every part of a
  // request, on the first part of a response).
  void send_sync(const Address& to, std::uint32_t seq_no, bool join, bool whole_view, std::uint64_t digest = 0,
                 const std::vector<std::uint8_t>* only = nullptr, const std::vector<std::uint32_t>& buckets = {});
  // How many buckets our periodic syncs compare (0 = the whole digest only).
  std::size_t sync_bucket_count() const;
  // Our bucket digests beside a peer's (`theirs`, as a sync carried them):
  // into bucket_ours_ and bucket_differ_; returns how many differ. 0, both
  // empty, when theirs is empty or longer than kMaxSyncBuckets.
  std::size_t compare_buckets(const std::vector<std::uint32_t>& theirs);
  // True if the datagram went into the outbox (not: no address, or the outbox full, counted).
  bool send(const Address& to, PriorityClass cls, Compound messages, bool piggyback);
  void emit(EventKind kind, const Member& m);
  // `transmit_cap`: BroadcastQueue::push's (0 = retransmit_limit()).
  void queue_broadcast(const std::string& node, Message msg, PriorityClass cls, std::uint32_t transmit_cap = 0);
  // The transmit cap of a Suspect of `m`: suspicion_retransmit_limit(), or
  // none (0) for a newcomer.
  std::uint32_t suspicion_transmit_cap(const Member& m, std::uint64_t now_ns) const;
  Alive self_alive() const;
  Member& self();
  const Member& self() const;
  // Up to k distinct random peers (not us, not `exclude`): Alive ones, and
  // Suspect ones too if `include_suspect`.
  std::vector<std::string> random_peers(std::size_t k, const std::string& exclude, bool include_suspect = false);
  // Up to k indirect-probe helpers: Alive, not `target`, the longest-known of a
  // random sample (in a storm of short-lived members, the established ones).
  std::vector<std::string> probe_helpers(std::size_t k, const std::string& target);
  std::uint64_t sync_interval() const;

  EngineConfig config_;
  Name self_name_;  // config_.name, interned: self() finds our entry by id
  Rng rng_;
  MemberTable table_;
  ProbeScheduler probes_;
  SuspicionSet suspicions_;
  BroadcastQueue broadcasts_;
  SyncManager syncs_;
  Admission admission_;
  Awareness awareness_;
  Counters counters_;

  std::vector<Outgoing> outbox_;
  // Replies to the sender of the datagram being handled (stale news corrected).
  Compound corrections_;
  static constexpr std::size_t kMaxCorrections = 64;
  std::deque<MemberEvent> events_;
  std::deque<UserData> user_data_;
  // Members declared dead recently: still gossiped to for gossip_to_the_dead_ns.
  std::deque<Name> recently_dead_;  // interned: the per-round check finds them by id
  // Members admitted (or back from a tombstone) recently, in no order, by
  // name id (each knows its index: Member::newcomer_slot).
  std::vector<std::uint32_t> newcomers_;
  bool probe_newcomer_next_ = false;
  // The probe ring (config probe_ring): the table's view in name order; our
  // position in it, found again when the table's version moves.
  bool ring_self_ = false;
  std::uint64_t ring_version_ = UINT64_MAX;
  std::size_t ring_pos_ = 0;
  // The last storm_newcomer_failures distinct newcomers that failed: (when, name hash).
  std::deque<std::pair<std::uint64_t, std::uint64_t>> newcomer_failures_;
  std::uint64_t storm_until_ns_ = 0;
  // When never-seen members were admitted, within the last surge_window_ns.
  std::deque<std::uint64_t> arrivals_;
  std::uint64_t surge_until_ns_ = 0;
  std::uint64_t last_gossip_ns_ = 0;
  std::uint32_t eager_rounds_ = 0;  // brought-forward gossip rounds still to run
  // When the last series of brought-forward rounds began (gossip_soon); at
  // most one series per gossip interval.
  std::optional<std::uint64_t> eager_series_ns_;
  // Our periodic syncs that asked with a digest only, still unanswered, and
  // the responder's bucket digests once its first part is in.
  struct DigestSync {
    std::uint32_t seq_no = 0;
    std::vector<std::uint32_t> theirs;
    bool partial = false;  // some parts in (a whole view's may be many)
  };
  std::deque<DigestSync> digest_seqs_;
  // Scratch of compare_buckets (and of a digest sync's own buckets): once a
  // sync interval, so reused rather than allocated each time.
  std::vector<std::uint32_t> bucket_ours_;
  std::vector<std::uint8_t> bucket_differ_;
  std::uint64_t last_now_ns_ = 0;  // latest time seen (tick or handle)
  std::uint64_t due_ns_ = 0;       // next_deadline() as of the end of the last tick

  std::uint32_t next_seq_ = 1;
  std::uint64_t next_probe_ns_ = 0;
  std::uint64_t next_gossip_ns_ = 0;
  std::uint64_t next_sync_ns_ = 0;
  // A settle delay after the latest join we heard by gossip: one sync then
  // (tick()).
  std::uint64_t settle_sync_ns_ = UINT64_MAX;
  std::uint64_t next_reconnect_ns_ = UINT64_MAX;  // reconnect(); never with reconnect_interval_ns 0
  bool leaving_ = false;

  // Never-seen members over the admission rate, admitted as tokens come.
  std::deque<Alive> pending_admissions_;
  // Members on probation, by when they may join the view (in admission order).
  std::deque<std::pair<std::uint64_t, std::string>> probationers_;
  // Probationers sent a proof ping, by when to look again (in that order).
  std::deque<std::pair<std::uint64_t, std::string>> proof_checks_;
  // Probationers asked for proof of life, and newcomers sent a last ping:
  // name id -> that ping's number.
  std::unordered_map<std::uint32_t, std::uint32_t> proof_seqs_;
  // Suspicions we hold on others' word, by when the accusers' verdict should
  // have reached us: started + the shortest timeout + a probe interval. Only
  // the accusers' timers shrink (confirm_to_accusers), so a member that
  // missed every copy of their Dead would wait the longest timeout; it probes
  // the suspect itself instead (start_probe), and its own failed probe is a
  // confirmation that members holding the death answer with theirs.
  struct HearsayCheck {
    std::uint64_t due_ns;
    std::uint64_t incarnation;
    Name name;
  };
  std::deque<HearsayCheck> hearsay_checks_;
  // Suspicions we told on the ring (spread_suspicion), told to the suspect
  // again every probe interval while they last: one datagram is all it would
  // get otherwise, and after a partition heals the views (and so the ring's
  // probers) disagree for a while. In due order.
  struct Retell {
    std::uint64_t due_ns;
    Suspect suspect;
  };
  std::deque<Retell> retells_;
  void retell_suspicions(std::uint64_t now_ns);
  // Newcomers sent a last ping before a storm burial (finish_probe_failed),
  // by when to give the verdict (in that order).
  struct LastPing {
    std::uint64_t due_ns;
    std::uint64_t sent_ns;
    std::uint64_t incarnation;
    std::uint32_t seq_no;
    Name name;  // held, so that its id is not reused meanwhile
  };
  std::deque<LastPing> last_pings_;
  // Proof pings a probationer gets before it is declared dead unproven.
  static constexpr std::uint8_t kProofPings = 4;
  // Who told us of each probationer (the sender of the datagram that brought
  // it), by name id. Nobody gossips a probationer, so few members know one;
  // when it dies on probation here, the member that vouched for it may be the
  // only one holding it in its view: it is told directly, since gossip of a
  // death reaches only members that knew the dead.
  std::unordered_map<std::uint32_t, Address> introducers_;
  // Suspicions confirmed to a sender, as (sender, member id): each once.
  static constexpr std::size_t kMaxConfirmed = 256;
  std::deque<std::pair<Address, std::uint32_t>> confirmed_;
  // The sender of the datagram handle() is working through (nullptr in tick()).
  const Address* inbound_from_ = nullptr;

  // Join: seeds are retried until one answers, for ever, with capped
  // exponential backoff (join_retry_min_ns doubling up to join_retry_max_ns).
  std::vector<Address> seeds_;
  std::vector<std::uint32_t> join_seqs_;
  std::uint32_t join_attempts_ = 0;
  // Whole-view syncs still to do after joining, and when the next is due.
  static constexpr std::uint32_t kFollowupJoins = 2;
  static constexpr std::uint32_t kMaxFollowupAttempts = 6;
  std::uint32_t followup_joins_ = 0;  // whole follow-up answers still wanted
  bool join_answer_cut_ = false;      // the answer that ended our join lacked parts
  std::uint32_t followup_attempts_ = 0;
  std::vector<std::uint32_t> followup_seqs_;  // follow-ups sent, not yet wholly answered
  std::uint64_t next_followup_ns_ = UINT64_MAX;
  bool joined_ = false;
  std::uint64_t next_join_ns_ = UINT64_MAX;
};

}  // namespace gw::cp::engine
