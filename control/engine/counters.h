// The engine's counters, described once: GW_ENGINE_COUNTERS lists each scalar
// counter with what it counts, and every reader (the gateway's stats and
// metrics, gossipsim's result.json, the tests) walks that list instead of
// naming the counters again. The two arrays by message type and the one by
// class dropped are beside it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "control/engine/messages.h"

namespace gw::cp::engine {

// X(name, what it counts). Order: as the stats JSON lists them.
#define GW_ENGINE_COUNTERS(X)                                                                                         \
  X(packets_in, "datagrams handled")                                                                                  \
  X(packets_out, "datagrams queued for sending")                                                                      \
  X(outbox_drop_full, "datagrams not queued: the outbox was full")                                                    \
  X(events_drop_full, "member events and user data dropped: nobody drained them")                                     \
  X(broadcast_superseded, "queued broadcasts replaced by newer news about the same member")                           \
  X(admission_drop_rate, "never-seen members over the admission rate with the waiting list full")                     \
  X(admission_deferred, "never-seen members over the admission rate: waiting for a token")                            \
  X(alive_drop_graveyard, "stale Alive about a member whose tombstone expired")                                       \
  X(graveyard_evictions, "oldest graveyard traces forgotten (bound)")                                                 \
  X(graveyard_expired, "graveyard traces forgotten graveyard_ttl_ns after they were laid")                            \
  X(admission_drop_policy, "never-seen members refused by the name or tag policy")                                    \
  X(admission_drop_table_full, "never-seen members refused: the member table was full")                               \
  X(alive_drop_tombstone, "stale Alive about a Dead or Left member")                                                  \
  X(update_drop_stale, "older incarnation about a live member")                                                       \
  X(update_drop_unknown, "Suspect, Dead or Leave about an unknown member")                                            \
  X(update_drop_far_future, "incarnation beyond max_incarnation_jump")                                                \
  X(update_drop_beyond_clock, "incarnation beyond Unix time now + incarnation_clock_slack_ns (in microseconds)")       \
  X(conflict_self_name, "an Alive with our name at another address")                                                  \
  X(conflict_address, "a live member's name at another address, not newer")                                          \
  X(tags_drop_too_large, "Alive whose tags exceed max_tag_bytes")                                                     \
  X(alive_drop_no_addr, "Alive without an address")                                                                   \
  X(msg_drop_martian_addr, "Alive, ping or indirect ping naming an address no member can have (ours, broadcast...)")  \
  X(alive_drop_bad_name, "Alive with an empty name or one longer than kMaxNameBytes")                                 \
  X(build_drop_too_long, "builds longer than kMaxBuildBytes dropped (the member kept, its build unknown)")             \
  X(release_drop_unlisted, "sync entries naming no release of their sync (the member kept, its release unknown)")     \
  X(refutations, "suspicions or deaths of ourselves refuted")                                                         \
  X(suspicions, "members suspected")                                                                                  \
  X(young_declared_dead, "newcomers that failed a probe in a storm: dead at once")                                    \
  X(young_last_pings, "... whose probe no helper could vouch for: pinged once more first")                            \
  X(young_last_acks, "... that answered it: alive, no verdict")                                                       \
  X(probation_started, "newcomers admitted on probation (storm or surge)")                                            \
  X(surges, "arrival surges recognised (probation for arrivals)")                                                     \
  X(gossip_eager, "gossip rounds brought forward for news of a death")                                                \
  X(own_stalls, "ticks that came a probe interval late: we were stalled")                                             \
  X(probe_abandoned_stall, "probes whose deadlines passed while we were stalled")                                     \
  X(probation_promoted, "probationers that lived through probation and joined the view")                              \
  X(probation_died, "probationers that died on probation (never in the view)")                                        \
  X(probation_proof_pings, "proof-of-life pings sent to probationers")                                                \
  X(probation_proof_acks, "proof-of-life pings answered")                                                             \
  X(probation_unproven, "probationers unanswered by all their proof pings: declared dead (also in probation_died)")          \
  X(probation_death_told, "probationer deaths told to the member that introduced them")                               \
  X(probation_forgotten, "probationers never proved alive: forgotten, no verdict")                                    \
  X(stale_corrections, "datagrams answering stale news: our Dead or Leave, our Suspect, the newer Alive")             \
  X(suspicion_confirmations, "independent confirmations of a suspicion (Lifeguard)")                                  \
  X(suspicion_confirm_drop_unvouched, "confirmations refused: not from a live view member at the sender's address")    \
  X(suspicion_tells, "datagrams telling our suspicion to the suspect and its next probers")                           \
  X(suspicion_retells, "... to the suspect again, each probe interval while it lasts")                                \
  X(retell_drop_full, "suspicions told once but not retold: the retell list was full")                                \
  X(deaths, "members declared dead")                                                                                  \
  X(leaves, "members that left")                                                                                      \
  X(joins, "members that joined the view")                                                                            \
  X(updates, "members whose address or tags changed")                                                                 \
  X(tombstones_expired, "Dead or Left members forgotten after tombstone_ttl_ns")                                      \
  X(probe_started, "probes started")                                                                                  \
  X(probe_newcomer, "probes sent to a newcomer out of round-robin order")                                             \
  X(probe_hearsay, "probes of a member suspected on others' word whose verdict never came")                           \
  X(probe_ack_direct, "probes answered directly")                                                                     \
  X(probe_ack_indirect, "probes answered through a helper")                                                           \
  X(probe_failed, "probes unanswered")                                                                                \
  X(probe_outdated, "unanswered probes whose target moved to a newer incarnation meanwhile: no verdict")              \
  X(probe_indirect_sent, "indirect pings sent to helpers")                                                            \
  X(probe_fallback_sent, "second direct pings sent with the indirect probes (fallback_ping)")                         \
  X(probe_nack_received, "nacks received from helpers we asked")                                                      \
  X(ack_drop_unsolicited, "acks no probe or relay waits for (late or unknown)")                                       \
  X(nack_drop_unsolicited, "nacks not for our probe, or not from a helper we asked")                                  \
  X(ping_drop_misdirected, "pings meant for another member at our address")                                           \
  X(relay_started, "indirect probes run for others")                                                                  \
  X(relay_drop_full, "indirect probes refused: the relay table was full")                                             \
  X(relay_ack_forwarded, "acks forwarded to the member that asked")                                                   \
  X(relay_nack_sent, "nacks sent to the member that asked")                                                           \
  X(sync_started, "syncs started (periodic, join, follow-up, reconnect)")                                             \
  X(sync_reconnects, "syncs sent to a member we consider failed")                                                     \
  X(reconnect_expired, "failed members given up reconnect_timeout after their death (a split that long)")            \
  X(reconnect_evicted, "failed members forgotten early: the reconnect list was full")                                 \
  X(dead_told, "datagrams telling a member we hold dead that we do (alive, it refutes)")                             \
  X(sync_answered, "sync requests answered")                                                                          \
  X(sync_digest_equal, "periodic syncs that found both views the same")                                               \
  X(sync_digest_differ, "periodic syncs whose views still differed after the responder's window")                     \
  X(sync_bucket_windows, "sync windows of the differing buckets only")                                                \
  X(sync_whole_views, "periodic syncs answered with the whole view (far behind)")                                     \
  X(sync_incomplete_retries, "digest syncs of ours that timed out with parts missing, retried")                       \
  X(join_answered, "join syncs answered (also in sync_answered)")                                                     \
  X(join_drop_rate, "join syncs over the join answer rate (the joiner retries)")                                      \
  X(join_retries, "join rounds that had no answer and were sent again")                                               \
  X(join_followups, "whole-view syncs with other members after joining")                                              \
  X(rejoins, "whole-view syncs with a member that held us dead (we were cut off)")                                    \
  X(dead_unproven_suspected, "probation verdicts (Dead, unproven) about members held established: taken as a suspicion")\
  X(join_view_corroborated, "never-seen members of a whole-view answer another member's answer listed: admitted")   \
  X(join_view_one_word, "never-seen members of a whole-view answer on one member's word: through admission")         \
  X(join_view_unnoted, "never-seen members of a whole-view answer not noted for corroboration (max_members noted)")  \
  X(sync_drop_concurrency, "sync requests refused: too many syncs in flight")                                         \
  X(sync_drop_source_busy, "multi-part sync requests refused: the sender holds a sync slot already")                  \
  X(sync_drop_rate, "sync requests refused: over the answer rate")                                                    \
  X(sync_drop_destination_rate, "sync requests refused: over the bytes a second one address may be answered")         \
  X(sync_cookies_sent, "sync requests from an address not proven answered with a cookie only (no reflection)")        \
  X(sync_cookie_invalid, "sync requests with a cookie not this address's or expired (answered with a fresh one)")     \
  X(sync_cookie_retries, "our sync requests sent again with the cookie a responder gave us")                          \
  X(sync_cookie_ignored, "cookies for syncs of ours not awaited any more or already retried once")                    \
  X(route_proven_answer, "addresses proven by an answer to our ping or sync from where we sent it")              \
  X(route_proven_cookie, "addresses proven by a valid cookie")                                                        \
  X(route_proven_check, "addresses proven by the ack to a route check (a ping after news to them was held back)")    \
  X(route_checks_sent, "route checks sent: pings to an address not proven that news was held back from")            \
  X(route_held, "news held back from an address not proven until it proves itself")                                \
  X(route_held_sent, "... sent once the address was proven")                                                        \
  X(route_held_dropped, "... not held: the holding table or that address's datagram was full")                      \
  X(route_held_expired, "... dropped: the address did not prove itself within a probe interval")                    \
  X(route_evictions, "proven-address entries forgotten at the table's bound")                                         \
  X(reply_refused_unproven, "replies to an address not proven not sent: over the bytes of the datagram handled")     \
  X(reply_trimmed_unproven, "... sent without their last messages to fit those bytes")                                \
  X(reply_piggyback_cut_unproven, "... whose piggybacked news was cut to those bytes")                                \
  X(sync_drop_unsolicited, "sync responses to no sync of ours")                                                       \
  X(sync_drop_oversize, "received syncs over max_sync_bytes or their part count")                                     \
  X(sync_bytes_out, "estimated encoded bytes of sync parts sent")                                                     \
  X(sync_drop_budget, "syncs not started or answered: the egress budget's sync share was spent")                     \
  X(gossip_budget_short, "gossip rounds cut short by the egress budget (the news waits for the next)")              \
  X(probation_proof_deferred, "proof pings put off a probe interval: the egress budget had no room (probation lasts longer)") \
  X(user_data_in, "user data messages received")

struct Counters {
  std::array<std::uint64_t, kMessageTypes> msg_in = {};  // by Message alternative
  std::array<std::uint64_t, kMessageTypes> msg_out = {};
  std::array<std::uint64_t, kPriorityClasses> broadcast_drop = {};  // by class dropped
#define GW_ENGINE_COUNTER_FIELD(name, what) std::uint64_t name = 0;
  GW_ENGINE_COUNTERS(GW_ENGINE_COUNTER_FIELD)
#undef GW_ENGINE_COUNTER_FIELD
};

// One scalar counter of Counters: its name (the field's), what it counts, and
// where it is.
struct CounterInfo {
  std::string_view name;
  std::string_view what;
  std::uint64_t Counters::*field;
};

inline constexpr std::array kCounterInfo = {
#define GW_ENGINE_COUNTER_INFO(name, what) CounterInfo{#name, what, &Counters::name},
    GW_ENGINE_COUNTERS(GW_ENGINE_COUNTER_INFO)
#undef GW_ENGINE_COUNTER_INFO
};

// Every word of Counters is described: the arrays plus kCounterInfo.
static_assert((2 * kMessageTypes + kPriorityClasses + kCounterInfo.size()) * sizeof(std::uint64_t) ==
                  sizeof(Counters),
              "a Counters field is outside GW_ENGINE_COUNTERS");

// The index in kCounterInfo of the counter called `name`, or
// kCounterInfo.size(). An index rather than a pointer: GCC 12 with
// -fsanitize=undefined cannot fold a pointer comparison in a constant
// expression.
constexpr std::size_t counter_index(std::string_view name) {
  for (std::size_t i = 0; i < kCounterInfo.size(); ++i)
    if (kCounterInfo[i].name == name) return i;
  return kCounterInfo.size();
}

}  // namespace gw::cp::engine
