// Membership engine configuration with memberlist-like presets. Every duration is
// in nanoseconds of the host's (virtual or monotonic) clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control/engine/messages.h"

namespace gw::cp::engine {

inline constexpr std::uint64_t kMillisecond = 1'000'000ULL;
inline constexpr std::uint64_t kSecond = 1'000 * kMillisecond;

struct EngineConfig {
  // --- identity ---
  std::string name;                       // unique member name; required, no default
  Address addr;                           // our gossip endpoint as others should reach it; required
  std::vector<Tag> tags;                  // our metadata carried in Alive; default none
  std::uint32_t protocol_version = 1;     // carried in Alive; default 1
  // Our build (the gateway's version and git revision, "0.1.0+aa83e72b1c2d"),
  // carried in Alive and syncs so that every member shows what each runs; at
  // most kMaxBuildBytes. Default none (the gateway sets it).
  std::string build;
  std::uint64_t initial_incarnation = 0;  // a restarted member may start above its
                                          // old tombstone; default 0 (it refutes instead)

  // --- failure detection (SWIM + Lifeguard) ---
  std::uint64_t probe_interval_ns = 1 * kSecond;        // one probe per interval; LAN 1 s
  std::uint64_t probe_timeout_ns = 500 * kMillisecond;  // direct ack wait; LAN 500 ms
  std::uint32_t indirect_checks = 3;                    // helpers asked on a missed ack (k); LAN 3
  // With the indirect probes, ping the target directly once more (memberlist's
  // TCP fallback ping, on the one transport we have). A live member is then
  // suspected only if both direct round trips fail as well as every helper's:
  // at 1 % loss that is about 50 x rarer, and each false suspicion costs every
  // member its refutation's retransmissions, so the cost of false suspicions
  // grows with N. true
  bool fallback_ping = true;
  std::uint32_t awareness_max_multiplier = 8;  // local health score cap; LAN 8
  // Probe targets from a ring shared by all: the view in name order, where
  // in round r (probe_interval_ns of wall time) the member at position i
  // probes position i + 1 + r mod (L - 1), at a phase of i / L of the
  // interval. Each round every member is probed by exactly one other, and
  // the probes of one member come about one interval apart, so a crash is
  // probed within about one interval (with independent random round-robins
  // the wait is exponential, and its tail is what delays detection). With a
  // health score above 0, or fewer than 3 members, probing falls back to
  // SWIM's randomised round-robin. false = always that. true
  bool probe_ring = true;
  std::uint32_t suspicion_mult = 4;              // min suspicion = mult*log10(N)*interval; LAN 4
  std::uint32_t suspicion_max_timeout_mult = 6;  // max suspicion = this*min; LAN 6
  std::uint32_t max_pending_relays = 1024;       // indirect probes we run for others; 1024
  // Lifeguard counts a helper's missing nack against our own health only if the
  // helper has been live in our view this long (or half as long as we have
  // been running, if that is shorter): in a storm of short-lived members, a
  // dead newcomer's silence says nothing about us. 30 s
  std::uint64_t helper_established_ns = 30 * kSecond;
  // A newcomer: live in our view for less than this (and for less than half as
  // long as we have been running). Newcomers get every other probe, and in a
  // storm (below) a newcomer that fails a probe, direct and indirect, is
  // declared dead at once instead of suspected: a newcomer that vanished is
  // the phantom storm, and a live one refutes. 0 = none. 60 s
  std::uint64_t young_member_ns = 60 * kSecond;
  // A storm: this many newcomers suspected or declared dead here within
  // storm_window_ns. Only then is a failing newcomer dead at once (it lasts
  // storm_window_ns after the last such failure). 0 = never. 20 in 30 s
  std::uint32_t storm_newcomer_failures = 20;
  std::uint64_t storm_window_ns = 30 * kSecond;
  // In a storm, a never-seen member is admitted on probation for this long:
  // probed, but not in the view, not gossiped, no join event until it has
  // lived through it (most phantoms do not). 0 = never. 10 s
  std::uint64_t probation_ns = 10 * kSecond;
  // An arrival surge: within surge_window_ns, at least surge_min_arrivals
  // never-seen members and at least surge_arrival_pct % of our view were
  // admitted, and we have been live for probation_ns ourselves (in a cluster
  // that is starting, everybody arrives at once). Once on, until
  // surge_window_ns after the last arrival (at any rate), never-seen members
  // are admitted on probation as in a storm: a storm's first seconds, before
  // its newcomers start to fail, no longer fill the view. The price: a
  // legitimate burst of new names into a running cluster, and the arrivals
  // that follow it without a pause, enter the view after probation_ns.
  // 0 = never. 16 and 25 % in 2 s
  std::uint32_t surge_min_arrivals = 16;
  std::uint32_t surge_arrival_pct = 25;
  std::uint64_t surge_window_ns = 2 * kSecond;

  // --- dissemination ---
  std::uint64_t gossip_interval_ns = 200 * kMillisecond;  // LAN 200 ms
  std::uint32_t gossip_nodes = 3;                         // random peers per gossip round; LAN 3
  std::uint64_t gossip_to_the_dead_ns = 30 * kSecond;     // keep gossiping to the newly dead; 30 s
  std::uint32_t retransmit_mult = 4;                      // transmits = mult*ceil(log10(N+1)); LAN 4
  // A suspicion is news for the few, not the many: the suspect (to refute)
  // and the members whose own probes fail next (their confirmations go to the
  // accusers). The others only wait for the Dead or the refutation. With the
  // probe ring it is told to those directly (suspicion_told_probers, below);
  // without it, each member gossips a Suspect at most
  // mult*ceil(log10(N+1)) times: with 2 (10 sends at 10,000 members, 6 at
  // 100) it still reaches all but about e^-6 of them (with 1, a live member
  // missed its own suspicion on partition-heal often enough to be buried).
  // A refutation of a told suspicion goes out this many times too (and to
  // the teller directly). Set it to retransmit_mult for memberlist's full
  // dissemination. A newcomer's suspicion always goes out the whole limit
  // (each member's storm signal). LAN 2
  std::uint32_t suspicion_retransmit_mult = 2;
  // With the probe ring a suspicion is not gossiped at all: the member whose
  // probe failed tells the suspect and the members that probe it in this and
  // the next rounds (by its view: this many), directly; each of those whose
  // probe fails too tells the ones after it, and the suspect is told again
  // every probe interval while it lasts. A suspicion merged from a peer's
  // sync is told the same way. Members that only heard it pass nothing on
  // (everyone hears the Dead or the refutation). The cost is a few
  // datagrams per round of the suspicion cluster-wide, whatever N is; gossiped
  // (above, and always for a newcomer or without the ring), every member
  // holds every suspicion. 3
  std::uint32_t suspicion_told_probers = 3;
  std::uint32_t max_broadcasts = 1024;    // broadcast queue entries, at least (the bound
                                          // also grows with the member table: one entry
                                          // per member fits); 1024
  std::uint32_t max_packet_bytes = 1400;  // encoded Compound bytes per datagram; 1400

  // --- anti-entropy ---
  std::uint64_t push_pull_interval_ns = 30 * kSecond;  // base sync interval, scaled up past 32 members; LAN 30 s
  std::uint32_t max_concurrent_syncs = 8;              // syncs in flight: ours awaiting an answer plus
                                                       // multi-part ones we are receiving; 8
  std::uint32_t sync_answer_rate = 10;                 // sync requests answered per second; 10
  std::uint32_t sync_answer_burst = 20;                // answer token bucket depth; 20
  std::uint64_t sync_timeout_ns = 10 * kSecond;        // an incomplete sync frees its slot after
                                                       // this; 10 s
  std::uint32_t join_answer_rate = 50;                 // join syncs answered per second, apart from the
                                                       // periodic ones (a joiner needs the whole view
                                                       // at once; the egress shaper paces the bytes); 50
  std::uint32_t join_answer_burst = 100;               // join answer token bucket depth; 100
  std::uint64_t join_retry_min_ns = 2 * kSecond;       // first retry of an unanswered join; 2 s
  std::uint64_t join_retry_max_ns = 60 * kSecond;      // retries back off to this, for ever; 60 s
  // Reconnect (as Serf does): every reconnect interval (jittered by +-50 %),
  // with probability D / (L + D) for D failed members (not left, and not
  // newcomers that died young) and L live ones, a sync goes to a random
  // failed member. Both sides of a partition think the other dead, and a
  // group that restarted together (shared seeds among them) knows nobody
  // else: only a sync to the "dead" brings them back together. Not scaled
  // with N: cluster-wide about D reconnects an interval, and a member's cost
  // is D / L of one sync. 0 = never (a partition then heals only by chance
  // gossip to the dead). LAN 30 s
  std::uint64_t reconnect_interval_ns = 30 * kSecond;
  // How long a member that failed (as an established member: not a
  // newcomer that died young, not one that left) stays a reconnect candidate
  // after its death, however long its tombstone lasts: a partition of any
  // length up to this heals (Serf's reconnect_timeout). Past it the member is
  // given up, counted in reconnect_expired (the host logs it): a split that
  // long is reported, not silently permanent. 24 h
  std::uint64_t reconnect_timeout_ns = 24 * 3600 * kSecond;
  // A periodic sync sends at most this many bytes per second of its interval
  // (each way), as a rotating window of the table: anti-entropy costs the same
  // per member at any N. Join syncs send the whole view (max_sync_bytes).
  // 0 = a whole table (up to max_sync_bytes) every time. 48 B/s
  std::uint32_t sync_bytes_per_sec = 48;
  // A periodic sync first compares view digests (MemberTable::view_digest):
  // equal views (the steady state) exchange two small datagrams and nothing
  // else; unequal ones exchange windows as above (the responder's at once,
  // ours in a second sync when the views still differ). false = windows
  // every time. true
  bool sync_digest = true;
  std::uint32_t max_sync_bytes = 4 * 1024 * 1024;  // encoded bytes one side sends per sync,
                                                   // and the most we merge from one received
                                                   // sync (all its parts); keep it cluster-
                                                   // wide. A join answer is the whole view,
                                                   // about 40 B a member: 4 MiB holds
                                                   // 100,000 (256 KiB held 6,500); 4 MiB

  // --- egress budget ---
  // The bytes per second (sealed: codec bytes plus the gateway's header and
  // tag) the host's egress shaper lets this member send; 0 = unlimited. The
  // engine plans what it sends to it (egress_budget.h): probes and urgent news
  // first, gossip from what is left, syncs from a share of their own and no
  // larger than that share sends in sync_timeout_ns; so a tight budget slows
  // gossip and syncs, never probes or urgent news. The gateway fills it from
  // membership.egress_bytes_per_sec, gossipsim from the scenario's budget.
  // 0 (the gateway: 1 MiB/s)
  std::uint64_t egress_bytes_per_sec = 0;

  // --- tombstones and bounds ---
  std::uint64_t tombstone_ttl_ns = 300 * kSecond;  // Dead/Left kept this long; 5 min
                                                   // (then a 16-byte trace, the graveyard,
                                                   // keeps refusing their stale gossip)
  std::uint32_t max_graveyard = 0;                 // graveyard traces; 0 = max_members
  // A graveyard trace is forgotten this long after it was laid (issue 51: a
  // trace laid by a lie must not refuse a name for ever); 1 h
  std::uint64_t graveyard_ttl_ns = 3600 * kSecond;
  std::uint32_t max_members = 65536;               // member table entries incl. tombstones; 65536
  // Largest believable rise of a member's incarnation in one message; default 2^40.
  // Hosts may start at Unix seconds (about 2^31 today), so a restart after years
  // away must still pass; a larger jump is corrupt or hostile and is dropped.
  // Claims within this distance of UINT64_MAX are dropped for every member, so a
  // refutation (heard + 1) can never overflow. Must be in [1, 2^63].
  std::uint64_t max_incarnation_jump = 1ULL << 40;
  // The absolute bound (issue 51): Unix time minus the host's clock (the
  // now_ns the engine is given), in ns; 0 = no wall clock known (simulator,
  // tests): only the relative bound above applies. Set, incarnations count
  // Unix time in microseconds (a gateway starts at its start time's
  // microseconds, initial_incarnation) and any claim above Unix time now +
  // incarnation_clock_slack_ns, in microseconds, is refused (counted
  // update_drop_beyond_clock), whoever it is about; the relative bound is then
  // not applied (a restart after months away may jump far). Since the bound
  // grows by 10^6 a second and a member raises its own incarnation by one a
  // refutation, a member pushed to the bound refutes past it a microsecond
  // later: no key holder can pin a member (docs/membership.md). default 0
  std::uint64_t unix_clock_offset_ns = 0;
  // The clock skew tolerated between members for that bound: a member whose
  // clock runs ahead of ours by more is refused until ours catches up. 10 min
  std::uint64_t incarnation_clock_slack_ns = 600 * kSecond;
  std::uint32_t max_tag_bytes = 512;  // sum of key+value bytes of one member; 512
  std::uint32_t max_events = 4096;    // undrained events kept; oldest dropped; 4096
  std::uint32_t max_outbox = 4096;    // undrained datagrams kept; newest dropped; 4096

  // --- admission of new members ---
  std::uint32_t admit_rate = 100;                  // never-seen members admitted per second; 100
  std::uint32_t admit_burst = 200;                 // token bucket depth; 200 (members over the
                                                   // rate wait, up to max_pending_admissions, and
                                                   // are admitted as tokens come; so are names
                                                   // in a whole-view answer on one member's word:
                                                   // two members' answers admit them at once)
  std::uint32_t max_pending_admissions = 4096;     // waiting for an admission token; 4096
  std::vector<std::string> allowed_name_prefixes;  // empty = any name; default empty
  std::vector<Tag> required_tags;                  // all must be present; empty = none; default empty

  // Presets. Each leaves identity (name, addr, tags) empty for the caller.
  static EngineConfig lan();
  static EngineConfig wan();
  static EngineConfig local();
  // The preset named `name` (lan, wan or local: membership.preset in the
  // gateway's config, engine.preset in a gossipsim scenario); none for any
  // other name.
  static std::optional<EngineConfig> preset(std::string_view name);

  // Empty if usable, else "<field>: <why>" for the first problem found.
  std::string validate() const;
};

inline std::string EngineConfig::validate() const {
  if (name.empty()) return "name: must not be empty";
  if (!(addr.ip.size() == 4 || addr.ip.size() == 16)) return "addr: needs a 4- or 16-byte ip";
  if (probe_interval_ns == 0) return "probe_interval_ns: must be > 0";
  if (probe_timeout_ns == 0 || probe_timeout_ns >= probe_interval_ns)
    return "probe_timeout_ns: must be > 0 and below probe_interval_ns";
  if (gossip_interval_ns == 0) return "gossip_interval_ns: must be > 0";
  if (push_pull_interval_ns == 0) return "push_pull_interval_ns: must be > 0";
  if (reconnect_timeout_ns == 0) return "reconnect_timeout_ns: must be > 0";
  if (sync_timeout_ns == 0) return "sync_timeout_ns: must be > 0";
  if (join_retry_min_ns == 0 || join_retry_max_ns < join_retry_min_ns)
    return "join_retry_min_ns: must be > 0 and at most join_retry_max_ns";
  if (suspicion_mult == 0) return "suspicion_mult: must be > 0";
  if (suspicion_max_timeout_mult == 0) return "suspicion_max_timeout_mult: must be > 0";
  if (retransmit_mult == 0) return "retransmit_mult: must be > 0";
  if (suspicion_retransmit_mult == 0) return "suspicion_retransmit_mult: must be > 0";
  if (suspicion_told_probers == 0) return "suspicion_told_probers: must be > 0";
  if (awareness_max_multiplier == 0) return "awareness_max_multiplier: must be > 0";
  if (max_members < 1) return "max_members: must be >= 1";
  if (max_packet_bytes < 128) return "max_packet_bytes: must be >= 128";
  if (max_sync_bytes < max_packet_bytes) return "max_sync_bytes: must be >= max_packet_bytes";
  if (max_incarnation_jump == 0 || max_incarnation_jump > (1ULL << 63))
    return "max_incarnation_jump: must be in [1, 2^63]";
  if (initial_incarnation > UINT64_MAX - max_incarnation_jump)
    return "initial_incarnation: must leave max_incarnation_jump below UINT64_MAX";
  std::size_t tag_total = 0;
  for (const Tag& t : tags) tag_total += t.key.size() + t.value.size();
  if (tag_total > max_tag_bytes) return "tags: larger than max_tag_bytes";
  if (build.size() > kMaxBuildBytes) return "build: longer than kMaxBuildBytes (64)";
  return {};
}

inline std::optional<EngineConfig> EngineConfig::preset(std::string_view name) {
  if (name == "lan") return lan();
  if (name == "wan") return wan();
  if (name == "local") return local();
  return std::nullopt;
}

inline EngineConfig EngineConfig::lan() { return EngineConfig{}; }

// Higher latency, more loss: slower probes, longer timeouts (memberlist WAN).
inline EngineConfig EngineConfig::wan() {
  EngineConfig c;
  c.probe_interval_ns = 5 * kSecond;
  c.probe_timeout_ns = 3 * kSecond;
  c.suspicion_mult = 6;
  c.gossip_interval_ns = 500 * kMillisecond;
  c.gossip_nodes = 4;
  c.gossip_to_the_dead_ns = 60 * kSecond;
  c.push_pull_interval_ns = 60 * kSecond;
  c.sync_timeout_ns = 30 * kSecond;
  c.reconnect_interval_ns = 60 * kSecond;
  c.tombstone_ttl_ns = 600 * kSecond;
  return c;
}

// Loopback/same host: fast probes, fewer helpers (memberlist Local).
inline EngineConfig EngineConfig::local() {
  EngineConfig c;
  c.probe_interval_ns = 1 * kSecond;
  c.probe_timeout_ns = 200 * kMillisecond;
  c.indirect_checks = 1;
  c.suspicion_mult = 3;
  c.gossip_interval_ns = 100 * kMillisecond;
  c.gossip_to_the_dead_ns = 15 * kSecond;
  c.retransmit_mult = 2;
  c.push_pull_interval_ns = 15 * kSecond;
  c.sync_timeout_ns = 5 * kSecond;
  c.reconnect_interval_ns = 15 * kSecond;
  c.tombstone_ttl_ns = 60 * kSecond;
  return c;
}

}  // namespace gw::cp::engine
