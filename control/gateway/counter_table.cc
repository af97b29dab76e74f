#include "control/gateway/counter_table.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iterator>

#include "base/endpoint.h"

namespace gw::cp {
namespace {

// ---- the families (docs/metrics.md lists them; their names are stable) ----

// Workers.
constexpr Family kRxPackets{"gossipgw_rx_packets_total", "counter",
                            "Packets received on the worker's rx queue (packets)"};
constexpr Family kVerdictPackets{"gossipgw_verdict_packets_total", "counter",
                                 "Received packets by check-ladder verdict: accepted or the drop reason (packets)"};
constexpr Family kReplayExpired{"gossipgw_replay_windows_expired_total", "counter",
                                "Replay windows freed because their newest datagram was older than "
                                "limits.replay_window_s (windows)"};
constexpr Family kReplayRebased{"gossipgw_replay_windows_rebased_total", "counter",
                                "Replay windows reset by a datagram stamped after everything they accepted: a "
                                "sender's counter had been pushed ahead (a key holder forging under its epoch) "
                                "(windows)"};
constexpr Family kTableEvictions{"gossipgw_table_evictions_total", "counter",
                                 "Entries evicted from a worker's bounded per-sender table: replay windows or "
                                 "rate-limit buckets (entries)"};
constexpr Family kAcceptedPackets{"gossipgw_accepted_packets_total", "counter",
                                  "Accepted packets handed to the control lcore, by priority class (packets)"};
constexpr Family kUnkeyedPackets{"gossipgw_unkeyed_packets_total", "counter",
                                 "drop_unkeyed packets by the classifier rule that matched (built-in signatures, "
                                 "operator rules, unmatched, unscanned) (packets)"};
constexpr Family kTxPackets{"gossipgw_tx_packets_total", "counter", "Datagrams transmitted (packets)"};
constexpr Family kTxBytes{"gossipgw_tx_bytes_total", "counter", "Bytes transmitted, Ethernet header included (bytes)"};
constexpr Family kTxNicDropped{"gossipgw_tx_nic_dropped_total", "counter",
                               "Datagrams the NIC's tx queue refused (packets)"};
constexpr Family kTxBroadcast{"gossipgw_tx_broadcast_unknown_mac_total", "counter",
                              "Datagrams sent to the broadcast MAC because the peer's MAC was not known yet (packets)"};
constexpr Family kRxBursts{"gossipgw_rx_bursts_total", "counter", "Non-empty rx bursts (bursts)"};
constexpr Family kIdlePolls{"gossipgw_idle_polls_total", "counter", "rx polls that returned no packet (polls)"};
constexpr Family kArp{"gossipgw_arp_total", "counter",
                      "ARP on the gateway's address: replies sent, peer MAC hints taken (only with "
                      "dataplane.arp_hints: true) (packets)"};

// The control lcore.
constexpr Family kMessages{"gossipgw_messages_total", "counter", "Gossip messages received, by type (messages)"};
constexpr Family kDecodeErrors{"gossipgw_message_decode_errors_total", "counter",
                               "Authenticated payloads that did not decode as a gossip Compound (payloads)"};
constexpr Family kMessageUnknown{"gossipgw_message_unknown_total", "counter",
                                 "Authenticated payloads with no message this version knows (payloads)"};
constexpr Family kHandoffDropped{"gossipgw_handoff_dropped_total", "counter",
                                 "Accepted payloads the control lcore's once-only check refused: reason replay "
                                 "(already accepted through another worker) or replay_table_full (payloads)"};
constexpr Family kHandoffs{"gossipgw_handoffs_total", "counter",
                           "Payloads the control lcore took from the workers' rings, by class (payloads)"};
constexpr Family kRingDepthMax{"gossipgw_ring_depth_max", "gauge",
                               "Deepest a worker-to-control ring of the class was seen (payloads)", true};
constexpr Family kClassMismatch{"gossipgw_class_mismatch_dropped_total", "counter",
                                "Decoded payloads dropped because their header class was more urgent than their "
                                "messages justify, by header class (payloads)"};
constexpr Family kTxQueue{"gossipgw_tx_queue_datagrams_total", "counter",
                          "Datagrams the control lcore queued for transmit, or dropped before the ring (datagrams)"};

// Membership (the engine host).
constexpr Family kIncarnation{"gossipgw_incarnation", "gauge", "This member's incarnation number"};
constexpr Family kLiveMembers{"gossipgw_live_members", "gauge",
                              "Alive or suspect members in our view, ourselves included (members)"};
constexpr Family kHealthScore{"gossipgw_health_score", "gauge",
                              "Lifeguard local health multiplier score (0 = healthy)"};
constexpr Family kProbeRtt{"gossipgw_probe_rtt_seconds", "histogram",
                           "Round trip of our direct probes, ping sent to ack received (seconds)"};
constexpr Family kProbeUnmatched{"gossipgw_probe_unmatched_total", "counter",
                                 "Probes forgotten before their ack came (more than 1,024 in flight) (probes)"};
constexpr Family kMembers{"gossipgw_members", "gauge", "Members in our view by state, tombstones included (members)"};
constexpr Family kMemberEvents{"gossipgw_member_events_total", "counter", "Member events by kind (events)"};
constexpr Family kSealed{"gossipgw_sealed_datagrams_total", "counter", "Datagrams sealed for transmit (datagrams)"};
constexpr Family kSealDropped{"gossipgw_seal_dropped_total", "counter",
                              "Outgoing datagrams dropped before sealing, by reason (datagrams)"};
constexpr Family kSenderKeysResets{"gossipgw_sender_keys_resets_total", "counter",
                                   "Times the table of which key each sender uses filled up and was cleared (resets)"};

// ---- the counter structs' fields: JSON key, member, family, labels ----

template <class S>
struct Field {
  std::string_view key;  // in the stats JSON
  std::uint64_t S::*member;
  const Family* family;
  std::string_view labels;  // fixed labels of the series, beside the context's (lcore, class)
  double scale = 1;         // Prometheus value = JSON value x scale (microseconds to seconds)
};

constexpr Field<dp::TxCounters> kTxFields[] = {
    {"tx_packets", &dp::TxCounters::tx_packets, &kTxPackets, ""},
    {"tx_bytes", &dp::TxCounters::tx_bytes, &kTxBytes, ""},
    {"tx_drop_nic", &dp::TxCounters::tx_drop_nic, &kTxNicDropped, ""},
    {"tx_broadcast_unknown_mac", &dp::TxCounters::tx_broadcast_unknown, &kTxBroadcast, ""},
};
static_assert(std::size(kTxFields) * sizeof(std::uint64_t) == sizeof(dp::TxCounters),
              "a TxCounters field is not exported");

constexpr Field<dp::TxQueueCounters> kTxQueueFields[] = {
    {"queued", &dp::TxQueueCounters::queued, &kTxQueue, R"(result="queued")"},
    {"drop_no_buffer", &dp::TxQueueCounters::drop_no_buffer, &kTxQueue, R"(result="drop_no_buffer")"},
    {"drop_ring_full", &dp::TxQueueCounters::drop_ring_full, &kTxQueue, R"(result="drop_ring_full")"},
    {"drop_too_large", &dp::TxQueueCounters::drop_too_large, &kTxQueue, R"(result="drop_too_large")"},
    {"drop_bad_endpoint", &dp::TxQueueCounters::drop_bad_endpoint, &kTxQueue, R"(result="drop_bad_endpoint")"},
};
static_assert(std::size(kTxQueueFields) * sizeof(std::uint64_t) == sizeof(dp::TxQueueCounters),
              "a TxQueueCounters field is not exported");

// The shaper's counters per class (label class).
constexpr Family kEgressSent{"gossipgw_egress_sent_datagrams_total", "counter",
                             "Datagrams the egress shaper let out (datagrams)"};
constexpr Family kEgressSentBytes{"gossipgw_egress_sent_bytes_total", "counter",
                                  "Bytes the egress shaper let out (bytes)"};
constexpr Family kEgressDeferred{"gossipgw_egress_deferred_total", "counter",
                                 "Datagrams that waited for budget (datagrams)"};
constexpr Family kEgressDropped{"gossipgw_egress_dropped_total", "counter",
                                "Datagrams dropped from the full egress queue (datagrams)"};
constexpr Family kEgressExpired{"gossipgw_egress_expired_total", "counter",
                                "Datagrams dropped for waiting longer than egress_max_age_ms (datagrams)"};
constexpr Family kEgressRefused{"gossipgw_egress_refused_total", "counter",
                                "Datagrams the transmit path refused (datagrams)"};
constexpr Family kEgressDepth{"gossipgw_egress_queue_depth", "gauge",
                              "Datagrams waiting in the egress queue now (datagrams)"};
constexpr Family kEgressDepthMax{"gossipgw_egress_queue_depth_max", "gauge",
                                 "Most datagrams ever waiting in the egress queue", true};
constexpr Field<cp::ShaperClassCounters> kShaperFields[] = {
    {"sent", &cp::ShaperClassCounters::sent, &kEgressSent, ""},
    {"sent_bytes", &cp::ShaperClassCounters::sent_bytes, &kEgressSentBytes, ""},
    {"deferred", &cp::ShaperClassCounters::deferred, &kEgressDeferred, ""},
    {"dropped", &cp::ShaperClassCounters::dropped, &kEgressDropped, ""},
    {"expired", &cp::ShaperClassCounters::expired, &kEgressExpired, ""},
    {"refused", &cp::ShaperClassCounters::refused, &kEgressRefused, ""},
    {"depth", &cp::ShaperClassCounters::depth, &kEgressDepth, ""},
    {"depth_max", &cp::ShaperClassCounters::depth_max, &kEgressDepthMax, ""},
};
static_assert(std::size(kShaperFields) * sizeof(std::uint64_t) == sizeof(cp::ShaperClassCounters),
              "a ShaperClassCounters field is not exported");

// The engine's own counters (control/engine/engine.h), as Prometheus
// families: one family per meaning and unit, the dimension that tells the
// counters of a family apart as a label, so that summing a family over its
// label gives a meaningful total (issue 18). A counter that is a subset of
// another (young_declared_dead of the failed changes, join_answered of the
// answered requests) has its own family, so no sum counts it twice. The stats
// JSON keeps the engine's flat names (`membership.engine_counters.KEY`), in
// this table's order; docs/metrics.md maps each key to its series.
namespace engine_families {
constexpr Family kMessages{"gossipgw_engine_messages_total", "counter",
                           "Messages the engine handled (in) or sent (out), by type (messages)"};
constexpr Family kBroadcastsDropped{"gossipgw_engine_broadcasts_dropped_total", "counter",
                                    "Broadcasts dropped from the full queue, by class (broadcasts)"};
constexpr Family kDatagrams{"gossipgw_engine_datagrams_total", "counter",
                            "Datagrams the engine handled (in) or queued for sending (out) (datagrams)"};
constexpr Family kOutboxDropped{"gossipgw_engine_outbox_dropped_total", "counter",
                                "Outgoing datagrams dropped because the engine's outbox was full (datagrams)"};
constexpr Family kEventsDropped{"gossipgw_engine_events_dropped_total", "counter",
                                "Member events dropped because nobody drained them in time (events)"};
constexpr Family kSuperseded{"gossipgw_engine_broadcasts_superseded_total", "counter",
                             "Queued broadcasts replaced by newer news about the same member (broadcasts)"};
constexpr Family kAdmissionRefused{
    "gossipgw_engine_admission_refused_total", "counter",
    "New members refused admission, by reason: rate (over the admission rate with the waiting list full), "
    "policy (name prefix or required tag), table_full (member table full) (members)"};
constexpr Family kAdmissionDeferred{"gossipgw_engine_admission_deferred_total", "counter",
                                    "New members over the admission rate, waiting for a token (members)"};
constexpr Family kIgnored{
    "gossipgw_engine_messages_ignored_total", "counter",
    "Received messages the engine ignored, by message type and reason (alive: tombstone, graveyard, no_addr, "
    "bad_name, tags_too_large; update (alive/suspect/dead/leave about a member): stale, unknown, far_future, "
    "beyond_clock; suspect (a confirmation): confirmer_unvouched; ack and nack: unsolicited; ping: misdirected; "
    "sync_response: unsolicited; sync: oversize; any (alive, ping, indirect ping): martian_addr) (messages)"};
constexpr Family kConflicts{"gossipgw_engine_name_conflicts_total", "counter",
                            "Alive messages claiming a name at another address: our_name (ours: we refute), "
                            "member_name (a live member's, not newer: ignored) (messages)"};
constexpr Family kChanges{
    "gossipgw_engine_member_changes_total", "counter",
    "Membership changes the engine applied: joined, left (gracefully), failed (declared dead), suspected, "
    "updated (metadata), tombstone_expired (dead or left members forgotten after their tombstone TTL) "
    "(members)"};
constexpr Family kYoungDead{"gossipgw_engine_young_declared_dead_total", "counter",
                            "Newcomers that failed a probe in a storm, or probationers that did, declared dead "
                            "without suspicion; also in member_changes{change=\"failed\"} (members)"};
constexpr Family kYoungLastPings{"gossipgw_engine_young_last_pings_total", "counter",
                                 "Newcomers in a storm whose failed probe no helper nacked, pinged once more before "
                                 "the verdict (datagrams)"};
constexpr Family kYoungLastAcks{"gossipgw_engine_young_last_acks_total", "counter",
                                "... that answered it (or pinged us) meanwhile: alive, no verdict (members)"};
constexpr Family kRefutations{"gossipgw_engine_refutations_total", "counter",
                              "Times we refuted a suspicion about ourselves (refutations)"};
constexpr Family kConfirmations{"gossipgw_engine_suspicion_confirmations_total", "counter",
                                "Independent confirmations of suspicions received (confirmations)"};
constexpr Family kSuspicionTells{
    "gossipgw_engine_suspicion_tells_total", "counter",
    "Datagrams telling our own suspicion along the probe ring instead of gossiping it: kind first (to the "
    "suspect and the members that probe it next), retell (to the suspect again each probe interval while the "
    "suspicion lasts) (datagrams)"};
constexpr Family kRetellsDropped{"gossipgw_engine_suspicion_retells_dropped_total", "counter",
                                 "Suspicions told once but never retold to the suspect: the retell list was full "
                                 "(max_members) (suspicions)"};
constexpr Family kProbesStarted{"gossipgw_engine_probes_started_total", "counter", "Probes started (probes)"};
constexpr Family kProbesNewcomer{"gossipgw_engine_probes_newcomer_total", "counter",
                                 "Probes sent to a newcomer out of round-robin order, in a storm; also in "
                                 "probes_started (probes)"};
constexpr Family kProbesHearsay{"gossipgw_engine_probes_hearsay_total", "counter",
                                "Probes of a member we suspected on others' word whose verdict (their Dead) never "
                                "reached us, sent out of round-robin order; also in probes_started (probes)"};
constexpr Family kProbeOutcomes{
    "gossipgw_engine_probe_outcomes_total", "counter",
    "Finished probes by outcome: ack_direct, ack_indirect (through helpers or the fallback ping), "
    "failed (no answer in time), "
    "abandoned_stall (deadline passed while we were stalled: no verdict, our health takes the blame), "
    "outdated (unanswered, but a newer incarnation of the target arrived meanwhile: no verdict) (probes)"};
constexpr Family kIndirectSent{"gossipgw_engine_indirect_requests_sent_total", "counter",
                               "Indirect probe requests sent to helpers (requests)"};
constexpr Family kFallbackPings{"gossipgw_engine_fallback_pings_sent_total", "counter",
                                "Second direct pings sent to a probe's target with the indirect requests; their "
                                "acks count as ack_indirect in probe_outcomes (pings)"};
constexpr Family kNacksReceived{"gossipgw_engine_nacks_received_total", "counter",
                                "Nacks received from indirect helpers (nacks)"};
constexpr Family kRelayRequests{
    "gossipgw_engine_relay_requests_total", "counter",
    "Indirect probe requests from others: started (we relay), refused_full (relay table full) (requests)"};
constexpr Family kRelayOutcomes{"gossipgw_engine_relay_outcomes_total", "counter",
                                "Relayed probes by outcome: ack_forwarded (back to the member that asked), "
                                "nack_sent (no ack came) (relays)"};
constexpr Family kSyncsStarted{"gossipgw_engine_syncs_started_total", "counter",
                               "Full-state syncs we started: periodic, reconnects and after-join follow-ups (syncs)"};
constexpr Family kSyncReconnects{"gossipgw_engine_sync_reconnects_total", "counter",
                                 "Syncs sent to members we consider failed, to heal partitions; also in "
                                 "syncs_started (syncs)"};
constexpr Family kReconnectGiveUps{"gossipgw_engine_reconnect_give_ups_total", "counter",
                                   "Failed members no longer contacted to heal a split, by reason: expired "
                                   "(reconnect_timeout after their death: a split that long is reported here), "
                                   "evicted (the reconnect list was full) (members)"};
constexpr Family kDeadTold{"gossipgw_engine_dead_told_total", "counter",
                           "Datagrams telling a member we hold failed that we do, so it refutes (a healed split) "
                           "(datagrams)"};
constexpr Family kRejoins{"gossipgw_engine_rejoins_total", "counter",
                          "Whole-view syncs with a member that held us failed: we were cut off (syncs)"};
constexpr Family kSyncRequests{
    "gossipgw_engine_sync_requests_total", "counter",
    "Sync requests received, by outcome: answered, refused_concurrency (concurrency cap), refused_rate "
    "(answer rate limit), refused_join_rate (join answer rate limit; the joiner retries), refused_source_busy "
    "(a multi-part request from a sender holding a sync slot already), refused_destination_rate (over the "
    "bytes a second one address may be sent in large answers); oversize requests are in messages_ignored "
    "(requests)"};
constexpr Family kCookies{
    "gossipgw_engine_sync_cookies_total", "counter",
    "No reflection: sync cookies by event: sent (a request from an address not proven answered with a cookie only, "
    "no larger than the request), invalid (a request with a cookie not its address's or expired), retried (our "
    "requests sent again with a responder's cookie), ignored (cookies for syncs of ours not awaited or retried "
    "already) (events)"};
constexpr Family kRoutesProven{
    "gossipgw_engine_return_routes_total", "counter",
    "Addresses shown to receive our datagrams, by event: proven_answer (a direct ack to our ping, or the answer "
    "to our sync, from where we sent it), "
    "proven_cookie (a valid cookie), proven_check (the ack to a route check from where we sent it), evicted "
    "(entries forgotten at the table's bound) (events)"};
constexpr Family kRouteChecks{
    "gossipgw_engine_route_checks_total", "counter",
    "Route checks sent: pings to an address not proven after news to it was held back by the no-reflection bound "
    "(datagrams)"};
constexpr Family kHeldNews{
    "gossipgw_engine_held_news_total", "counter",
    "News held back from an address not proven until it proves itself, by outcome: held, sent (once proven), "
    "dropped (the holding table or that address's datagram full), expired (not proven within a probe interval) "
    "(messages)"};
constexpr Family kUnprovenReplies{
    "gossipgw_engine_unproven_replies_total", "counter",
    "Replies to addresses not proven, held to the bytes of the datagram handled, by outcome: refused (not sent), "
    "trimmed (sent without their last messages), piggyback_cut (piggybacked news cut) (datagrams)"};
constexpr Family kJoinAnswered{"gossipgw_engine_join_requests_answered_total", "counter",
                               "Join syncs we answered; also in sync_requests{outcome=\"answered\"} (requests)"};
constexpr Family kJoinFollowups{"gossipgw_engine_join_followups_total", "counter",
                                "Whole-view syncs with other members right after joining; also in syncs_started "
                                "(syncs)"};
constexpr Family kDeadUnproven{
    "gossipgw_engine_dead_unproven_suspected_total", "counter",
    "Probation verdicts (a Dead marked unproven: its declarer held the member on probation and could not prove it "
    "alive) about members we hold established, taken as the declarer's suspicion instead (members)"};
constexpr Family kJoinView{
    "gossipgw_engine_join_view_members_total", "counter",
    "Never-seen members listed in whole-view answers (our join, its follow-ups, a rejoin), by outcome: "
    "corroborated (another member's answer listed it too: admitted at once), one_word (one member's word: "
    "through admission, as gossip), unnoted (one member's word not noted for corroboration: max_members are "
    "noted already) (members)"};
constexpr Family kJoinRetries{"gossipgw_engine_join_retries_total", "counter",
                              "Our join rounds that got no answer and were sent again (rounds)"};
constexpr Family kDigestEqual{"gossipgw_engine_sync_digest_equal_total", "counter",
                              "Periodic syncs answered with the digest alone: both views the same (syncs)"};
constexpr Family kDigestDiffer{"gossipgw_engine_sync_digest_differ_total", "counter",
                               "Our digest syncs whose views still differed after the answer: our window sent too "
                               "(syncs)"};
constexpr Family kBucketWindows{"gossipgw_engine_sync_bucket_windows_total", "counter",
                                "Sync windows that carried only the buckets in which two views differed (windows)"};
constexpr Family kWholeViews{"gossipgw_engine_sync_whole_views_total", "counter",
                             "Periodic syncs from a view far shorter than ours, answered with the whole view (syncs)"};
constexpr Family kIncompleteRetries{"gossipgw_engine_sync_incomplete_retries_total", "counter",
                                    "Our digest syncs whose answer timed out with parts missing, started again soon "
                                    "(syncs)"};
constexpr Family kSyncBytes{"gossipgw_engine_sync_sent_bytes_total", "counter",
                            "Estimated encoded bytes of sync parts sent (bytes)"};
constexpr Family kUserData{"gossipgw_engine_user_data_received_total", "counter",
                           "User data messages received (messages)"};
constexpr Family kGraveyardEvictions{"gossipgw_engine_graveyard_evictions_total", "counter",
                                     "Oldest graveyard traces forgotten at the graveyard bound (traces)"};
constexpr Family kGraveyardExpired{"gossipgw_engine_graveyard_expired_total", "counter",
                                   "Graveyard traces forgotten graveyard_ttl after they were laid (traces)"};
constexpr Family kStaleCorrections{"gossipgw_engine_stale_corrections_total", "counter",
                                   "Datagrams answering a sender's stale news: our Dead or Leave, our Suspect (a "
                                   "confirmation), or the newer Alive (datagrams)"};
constexpr Family kProbationStarted{"gossipgw_engine_probation_started_total", "counter",
                                   "Newcomers admitted on probation, outside the view, in a storm or an arrival "
                                   "surge (members)"};
constexpr Family kProbationEnded{
    "gossipgw_engine_probation_ended_total", "counter",
    "Probations ended, by outcome: promoted (proof of life: joined the view), died (declared dead, never in "
    "the view; also in member_changes{change=\"failed\"}), forgotten (never proved alive: no verdict) (members)"};
constexpr Family kProofPings{"gossipgw_engine_probation_proof_pings_total", "counter",
                             "Proof-of-life pings sent to probationers that had not answered us yet (datagrams)"};
constexpr Family kProofAcks{"gossipgw_engine_probation_proof_acks_total", "counter",
                            "Proof-of-life pings answered: the probationer is alive (datagrams)"};
constexpr Family kUnproven{"gossipgw_engine_probation_unproven_total", "counter",
                           "Probationers declared dead after their proof pings went unanswered (four, a probe "
                           "interval apart; more on a lossy network) (also in probation_ended{outcome=\"died\"}) "
                           "(members)"};
constexpr Family kDeathsTold{"gossipgw_engine_probation_deaths_told_total", "counter",
                             "Deaths on probation told first-hand to the member that told us of the newcomer "
                             "(datagrams)"};
constexpr Family kSurges{"gossipgw_engine_surges_total", "counter",
                         "Arrival surges recognised: never-seen members arriving faster than a running cluster grows "
                         "(surges)"};
constexpr Family kBudgetHeld{"gossipgw_engine_budget_held_total", "counter",
                             "What the engine held back to keep within membership.egress_bytes_per_sec: syncs not "
                             "started or answered, gossip rounds cut short, proof pings put off (events)"};
constexpr Family kGossipEager{"gossipgw_engine_gossip_eager_total", "counter",
                              "Gossip rounds brought forward for the death or departure of an established member "
                              "(rounds)"};
constexpr Family kReleasesDropped{
    "gossipgw_engine_releases_dropped_total", "counter",
    "What a member runs that could not be stored, by reason: build_too_long (a build over 64 bytes, in an Alive "
    "or a sync's release list), unlisted (a sync entry naming no release of its sync); the member itself is kept, "
    "its build or release unknown (entries)"};
constexpr Family kOwnStalls{"gossipgw_engine_own_stalls_total", "counter",
                            "Engine ticks that came over a probe interval late: the control lcore was stalled; "
                            "verdicts wait for the backlog (stalls)"};
}  // namespace engine_families

using EC = cp::engine::Counters;
namespace ef = engine_families;
// In the stats JSON's order (after msg_in, msg_out and broadcast_drop).
constexpr Field<EC> kEngineFields[] = {
    {"packets_in", &EC::packets_in, &ef::kDatagrams, R"(direction="in")"},
    {"packets_out", &EC::packets_out, &ef::kDatagrams, R"(direction="out")"},
    {"outbox_drop_full", &EC::outbox_drop_full, &ef::kOutboxDropped, ""},
    {"events_drop_full", &EC::events_drop_full, &ef::kEventsDropped, ""},
    {"broadcast_superseded", &EC::broadcast_superseded, &ef::kSuperseded, ""},
    {"admission_drop_rate", &EC::admission_drop_rate, &ef::kAdmissionRefused, R"(reason="rate")"},
    {"admission_drop_policy", &EC::admission_drop_policy, &ef::kAdmissionRefused, R"(reason="policy")"},
    {"admission_drop_table_full", &EC::admission_drop_table_full, &ef::kAdmissionRefused, R"(reason="table_full")"},
    {"alive_drop_tombstone", &EC::alive_drop_tombstone, &ef::kIgnored, R"(type="alive",reason="tombstone")"},
    {"update_drop_stale", &EC::update_drop_stale, &ef::kIgnored, R"(type="update",reason="stale")"},
    {"update_drop_unknown", &EC::update_drop_unknown, &ef::kIgnored, R"(type="update",reason="unknown")"},
    {"tags_drop_too_large", &EC::tags_drop_too_large, &ef::kIgnored, R"(type="alive",reason="tags_too_large")"},
    {"alive_drop_no_addr", &EC::alive_drop_no_addr, &ef::kIgnored, R"(type="alive",reason="no_addr")"},
    {"alive_drop_bad_name", &EC::alive_drop_bad_name, &ef::kIgnored, R"(type="alive",reason="bad_name")"},
    {"refutations", &EC::refutations, &ef::kRefutations, ""},
    {"suspicions", &EC::suspicions, &ef::kChanges, R"(change="suspected")"},
    {"suspicion_confirmations", &EC::suspicion_confirmations, &ef::kConfirmations, ""},
    {"suspicion_confirm_drop_unvouched", &EC::suspicion_confirm_drop_unvouched, &ef::kIgnored,
     R"(type="suspect",reason="confirmer_unvouched")"},
    {"suspicion_tells", &EC::suspicion_tells, &ef::kSuspicionTells, R"(kind="first")"},
    {"suspicion_retells", &EC::suspicion_retells, &ef::kSuspicionTells, R"(kind="retell")"},
    {"retell_drop_full", &EC::retell_drop_full, &ef::kRetellsDropped, ""},
    {"deaths", &EC::deaths, &ef::kChanges, R"(change="failed")"},
    {"leaves", &EC::leaves, &ef::kChanges, R"(change="left")"},
    {"joins", &EC::joins, &ef::kChanges, R"(change="joined")"},
    {"updates", &EC::updates, &ef::kChanges, R"(change="updated")"},
    {"tombstones_expired", &EC::tombstones_expired, &ef::kChanges, R"(change="tombstone_expired")"},
    {"probe_started", &EC::probe_started, &ef::kProbesStarted, ""},
    {"probe_ack_direct", &EC::probe_ack_direct, &ef::kProbeOutcomes, R"(outcome="ack_direct")"},
    {"probe_ack_indirect", &EC::probe_ack_indirect, &ef::kProbeOutcomes, R"(outcome="ack_indirect")"},
    {"probe_failed", &EC::probe_failed, &ef::kProbeOutcomes, R"(outcome="failed")"},
    {"probe_outdated", &EC::probe_outdated, &ef::kProbeOutcomes, R"(outcome="outdated")"},
    {"probe_indirect_sent", &EC::probe_indirect_sent, &ef::kIndirectSent, ""},
    {"probe_fallback_sent", &EC::probe_fallback_sent, &ef::kFallbackPings, ""},
    {"probe_nack_received", &EC::probe_nack_received, &ef::kNacksReceived, ""},
    {"ping_drop_misdirected", &EC::ping_drop_misdirected, &ef::kIgnored, R"(type="ping",reason="misdirected")"},
    {"relay_started", &EC::relay_started, &ef::kRelayRequests, R"(outcome="started")"},
    {"relay_drop_full", &EC::relay_drop_full, &ef::kRelayRequests, R"(outcome="refused_full")"},
    {"relay_ack_forwarded", &EC::relay_ack_forwarded, &ef::kRelayOutcomes, R"(outcome="ack_forwarded")"},
    {"relay_nack_sent", &EC::relay_nack_sent, &ef::kRelayOutcomes, R"(outcome="nack_sent")"},
    {"sync_started", &EC::sync_started, &ef::kSyncsStarted, ""},
    {"sync_reconnects", &EC::sync_reconnects, &ef::kSyncReconnects, ""},
    {"reconnect_expired", &EC::reconnect_expired, &ef::kReconnectGiveUps, R"(reason="expired")"},
    {"reconnect_evicted", &EC::reconnect_evicted, &ef::kReconnectGiveUps, R"(reason="evicted")"},
    {"dead_told", &EC::dead_told, &ef::kDeadTold, ""},
    {"sync_answered", &EC::sync_answered, &ef::kSyncRequests, R"(outcome="answered")"},
    {"sync_drop_concurrency", &EC::sync_drop_concurrency, &ef::kSyncRequests, R"(outcome="refused_concurrency")"},
    {"sync_drop_rate", &EC::sync_drop_rate, &ef::kSyncRequests, R"(outcome="refused_rate")"},
    {"sync_drop_source_busy", &EC::sync_drop_source_busy, &ef::kSyncRequests, R"(outcome="refused_source_busy")"},
    {"sync_drop_destination_rate", &EC::sync_drop_destination_rate, &ef::kSyncRequests,
     R"(outcome="refused_destination_rate")"},
    {"sync_cookies_sent", &EC::sync_cookies_sent, &ef::kCookies, R"(event="sent")"},
    {"sync_cookie_invalid", &EC::sync_cookie_invalid, &ef::kCookies, R"(event="invalid")"},
    {"sync_cookie_retries", &EC::sync_cookie_retries, &ef::kCookies, R"(event="retried")"},
    {"sync_cookie_ignored", &EC::sync_cookie_ignored, &ef::kCookies, R"(event="ignored")"},
    {"route_proven_answer", &EC::route_proven_answer, &ef::kRoutesProven, R"(event="proven_answer")"},
    {"route_proven_cookie", &EC::route_proven_cookie, &ef::kRoutesProven, R"(event="proven_cookie")"},
    {"route_evictions", &EC::route_evictions, &ef::kRoutesProven, R"(event="evicted")"},
    {"route_proven_check", &EC::route_proven_check, &ef::kRoutesProven, R"(event="proven_check")"},
    {"route_checks_sent", &EC::route_checks_sent, &ef::kRouteChecks, ""},
    {"route_held", &EC::route_held, &ef::kHeldNews, R"(outcome="held")"},
    {"route_held_sent", &EC::route_held_sent, &ef::kHeldNews, R"(outcome="sent")"},
    {"route_held_dropped", &EC::route_held_dropped, &ef::kHeldNews, R"(outcome="dropped")"},
    {"route_held_expired", &EC::route_held_expired, &ef::kHeldNews, R"(outcome="expired")"},
    {"reply_refused_unproven", &EC::reply_refused_unproven, &ef::kUnprovenReplies, R"(outcome="refused")"},
    {"reply_trimmed_unproven", &EC::reply_trimmed_unproven, &ef::kUnprovenReplies, R"(outcome="trimmed")"},
    {"reply_piggyback_cut_unproven", &EC::reply_piggyback_cut_unproven, &ef::kUnprovenReplies,
     R"(outcome="piggyback_cut")"},
    {"sync_drop_unsolicited", &EC::sync_drop_unsolicited, &ef::kIgnored,
     R"(type="sync_response",reason="unsolicited")"},
    {"sync_bytes_out", &EC::sync_bytes_out, &ef::kSyncBytes, ""},
    {"user_data_in", &EC::user_data_in, &ef::kUserData, ""},
    {"ack_drop_unsolicited", &EC::ack_drop_unsolicited, &ef::kIgnored, R"(type="ack",reason="unsolicited")"},
    {"nack_drop_unsolicited", &EC::nack_drop_unsolicited, &ef::kIgnored, R"(type="nack",reason="unsolicited")"},
    {"update_drop_far_future", &EC::update_drop_far_future, &ef::kIgnored, R"(type="update",reason="far_future")"},
    {"update_drop_beyond_clock", &EC::update_drop_beyond_clock, &ef::kIgnored,
     R"(type="update",reason="beyond_clock")"},
    {"msg_drop_martian_addr", &EC::msg_drop_martian_addr, &ef::kIgnored, R"(type="any",reason="martian_addr")"},
    {"sync_drop_oversize", &EC::sync_drop_oversize, &ef::kIgnored, R"(type="sync",reason="oversize")"},
    {"conflict_self_name", &EC::conflict_self_name, &ef::kConflicts, R"(claim="our_name")"},
    {"conflict_address", &EC::conflict_address, &ef::kConflicts, R"(claim="member_name")"},
    {"admission_deferred", &EC::admission_deferred, &ef::kAdmissionDeferred, ""},
    {"alive_drop_graveyard", &EC::alive_drop_graveyard, &ef::kIgnored, R"(type="alive",reason="graveyard")"},
    {"graveyard_evictions", &EC::graveyard_evictions, &ef::kGraveyardEvictions, ""},
    {"graveyard_expired", &EC::graveyard_expired, &ef::kGraveyardExpired, ""},
    {"join_answered", &EC::join_answered, &ef::kJoinAnswered, ""},
    {"join_drop_rate", &EC::join_drop_rate, &ef::kSyncRequests, R"(outcome="refused_join_rate")"},
    {"join_retries", &EC::join_retries, &ef::kJoinRetries, ""},
    {"rejoins", &EC::rejoins, &ef::kRejoins, ""},
    {"join_followups", &EC::join_followups, &ef::kJoinFollowups, ""},
    {"young_declared_dead", &EC::young_declared_dead, &ef::kYoungDead, ""},
    {"young_last_pings", &EC::young_last_pings, &ef::kYoungLastPings, ""},
    {"young_last_acks", &EC::young_last_acks, &ef::kYoungLastAcks, ""},
    {"stale_corrections", &EC::stale_corrections, &ef::kStaleCorrections, ""},
    {"probe_newcomer", &EC::probe_newcomer, &ef::kProbesNewcomer, ""},
    {"probe_hearsay", &EC::probe_hearsay, &ef::kProbesHearsay, ""},
    {"probation_started", &EC::probation_started, &ef::kProbationStarted, ""},
    {"probation_promoted", &EC::probation_promoted, &ef::kProbationEnded, R"(outcome="promoted")"},
    {"probation_died", &EC::probation_died, &ef::kProbationEnded, R"(outcome="died")"},
    {"probation_death_told", &EC::probation_death_told, &ef::kDeathsTold, ""},
    {"probation_proof_pings", &EC::probation_proof_pings, &ef::kProofPings, ""},
    {"probation_proof_acks", &EC::probation_proof_acks, &ef::kProofAcks, ""},
    {"probation_unproven", &EC::probation_unproven, &ef::kUnproven, ""},
    {"probation_forgotten", &EC::probation_forgotten, &ef::kProbationEnded, R"(outcome="forgotten")"},
    {"surges", &EC::surges, &ef::kSurges, ""},
    {"gossip_eager", &EC::gossip_eager, &ef::kGossipEager, ""},
    {"sync_drop_budget", &EC::sync_drop_budget, &ef::kBudgetHeld, R"(what="sync")"},
    {"gossip_budget_short", &EC::gossip_budget_short, &ef::kBudgetHeld, R"(what="gossip_round")"},
    {"probation_proof_deferred", &EC::probation_proof_deferred, &ef::kBudgetHeld, R"(what="proof_ping")"},
    {"sync_digest_equal", &EC::sync_digest_equal, &ef::kDigestEqual, ""},
    {"sync_digest_differ", &EC::sync_digest_differ, &ef::kDigestDiffer, ""},
    {"sync_bucket_windows", &EC::sync_bucket_windows, &ef::kBucketWindows, ""},
    {"sync_whole_views", &EC::sync_whole_views, &ef::kWholeViews, ""},
    {"sync_incomplete_retries", &EC::sync_incomplete_retries, &ef::kIncompleteRetries, ""},
    {"own_stalls", &EC::own_stalls, &ef::kOwnStalls, ""},
    {"probe_abandoned_stall", &EC::probe_abandoned_stall, &ef::kProbeOutcomes, R"(outcome="abandoned_stall")"},
    {"build_drop_too_long", &EC::build_drop_too_long, &ef::kReleasesDropped, R"(reason="build_too_long")"},
    {"release_drop_unlisted", &EC::release_drop_unlisted, &ef::kReleasesDropped, R"(reason="unlisted")"},
    {"dead_unproven_suspected", &EC::dead_unproven_suspected, &ef::kDeadUnproven, ""},
    {"join_view_corroborated", &EC::join_view_corroborated, &ef::kJoinView, R"(outcome="corroborated")"},
    {"join_view_one_word", &EC::join_view_one_word, &ef::kJoinView, R"(outcome="one_word")"},
    {"join_view_unnoted", &EC::join_view_unnoted, &ef::kJoinView, R"(outcome="unnoted")"},
};
// Every word of Counters is one counter: the arrays by message type and class
// plus the table's fields.
static_assert((2 * cp::engine::kMessageTypes + cp::engine::kPriorityClasses + std::size(kEngineFields)) *
                      sizeof(std::uint64_t) ==
                  sizeof(EC),
              "an engine Counters field is missing from kEngineFields");
// The stats JSON keys are the engine's own names (control/engine/counters.h):
// each entry's key names the field it reads.
constexpr bool engine_keys_match() {
  for (const Field<EC>& f : kEngineFields) {
    const std::size_t i = cp::engine::counter_index(f.key);
    if (i == cp::engine::kCounterInfo.size() || cp::engine::kCounterInfo[i].field != f.member) return false;
  }
  return true;
}
static_assert(engine_keys_match(), "a kEngineFields key is not the engine's name for its field");

// ---- the composition root's sections (GatewaySections) ----

namespace gf {
constexpr Family kControlApi{"gossipgw_control_api_total", "counter",
                             "Control API: connections, requests, bad_requests, failed, key_changes, "
                             "cluster_key_changes, rejected_too_large, rejected_read (incomplete within the "
                             "whole-request deadline), timed_out, evicted (closed to make room while still sending) "
                             "(requests)"};
constexpr Family kKeyCommands{
    "gossipgw_key_commands_total", "counter",
    "Cluster-wide key commands: sent, applied, refused, repeated, not_member, stale, unsigned (no valid "
    "operator signature), "
    "results_received, results_unsolicited (commands)"};
constexpr Family kEventHandler{"gossipgw_event_handler_total", "counter",
                               "Event handler: submitted, coalesced, dropped_queue_full, dropped_stopped, started, "
                               "succeeded, failed_exit, timed_out, spawn_errors (events or runs)"};
constexpr Family kTelemetry{"gossipgw_telemetry_total", "counter",
                            "DPDK telemetry: refused (series the telemetry library refused to add; stays 0) (series)"};
constexpr Family kKeyringState{"gossipgw_keyring_state_total", "counter",
                               "Keyring persisted to control.state_dir: writes, write_errors (writes)"};
constexpr Family kHostsFile{"gossipgw_hosts_file_total", "counter",
                            "Hosts file: writes, unchanged, deferred, write_errors, skipped_members (updates)"};
constexpr Family kSnapshotVersion{"gossipgw_snapshot_version", "gauge",
                                  "Version of the keys and known-members snapshot published to the workers"};
constexpr Family kSnapshotsRetained{"gossipgw_snapshots_retained", "gauge",
                                    "Snapshots kept until every worker has moved past them (snapshots)"};
// The process's own, under the names every Prometheus client library uses
// (no gossipgw_ prefix), so the usual dashboards and alerts work.
constexpr Family kStartTime{"process_start_time_seconds", "gauge",
                            "Start time of the process since the Unix epoch (seconds)"};
constexpr Family kCpu{"process_cpu_seconds_total", "counter", "User and system CPU time spent (seconds)"};
constexpr Family kResident{"process_resident_memory_bytes", "gauge", "Resident memory size (bytes)"};
constexpr Family kVirtual{"process_virtual_memory_bytes", "gauge", "Virtual memory size (bytes)"};
constexpr Family kOpenFds{"process_open_fds", "gauge", "Open file descriptors (descriptors)"};
constexpr Family kMaxFds{"process_max_fds", "gauge", "Maximum number of open file descriptors (descriptors)"};
constexpr Family kLinkUp{"gossipgw_port_link_up", "gauge",
                         "1 while the port's link is up; the workers do not poll it while 0"};
constexpr Family kLinkDown{"gossipgw_port_link_down_total", "counter",
                           "Times the port's link went down after being seen (a memif peer gone, a cable) (events)"};
constexpr Family kUnknownKeySenders{
    "gossipgw_unknown_key_senders", "gauge",
    "Distinct sources heard in the last 3 minutes under a key id this node's keyring lacks, by kind: member (of "
    "our view), seed (a configured or joined seed), other; not authenticated (sources)"};
// The NIC's: they count unlike things (a sum would be meaningless).
constexpr Family kNicRxPackets{"gossipgw_nic_rx_packets_total", "counter", "Packets the NIC received (packets)"};
constexpr Family kNicTxPackets{"gossipgw_nic_tx_packets_total", "counter", "Packets the NIC sent (packets)"};
constexpr Family kNicRxMissed{
    "gossipgw_nic_rx_missed_total", "counter",
    "Packets the NIC dropped because no rx descriptor was free: workers too slow (imissed) (packets)"};
constexpr Family kNicRxErrors{"gossipgw_nic_rx_errors_total", "counter",
                              "Erroneous packets the NIC received (ierrors) (packets)"};
constexpr Family kNicRxNombuf{"gossipgw_nic_rx_nombuf_total", "counter",
                              "Receive buffer allocation failures: mbuf pool exhausted (rx_nombuf) (events)"};
constexpr Family kNicTxErrors{"gossipgw_nic_tx_errors_total", "counter",
                              "Packets the NIC failed to send (oerrors) (packets)"};
}  // namespace gf

constexpr Field<SnapshotGauges> kSnapshotFields[] = {
    {"version", &SnapshotGauges::version, &gf::kSnapshotVersion, ""},
    {"retained", &SnapshotGauges::retained, &gf::kSnapshotsRetained, ""},
};
using EVC = cp::events::EventCounters;
constexpr Field<EVC> kEventHandlerFields[] = {
    {"submitted", &EVC::submitted, &gf::kEventHandler, R"(result="submitted")"},
    {"coalesced", &EVC::coalesced, &gf::kEventHandler, R"(result="coalesced")"},
    {"dropped_queue_full", &EVC::dropped_queue_full, &gf::kEventHandler, R"(result="dropped_queue_full")"},
    {"dropped_stopped", &EVC::dropped_stopped, &gf::kEventHandler, R"(result="dropped_stopped")"},
    {"started", &EVC::started, &gf::kEventHandler, R"(result="started")"},
    {"succeeded", &EVC::succeeded, &gf::kEventHandler, R"(result="succeeded")"},
    {"failed_exit", &EVC::failed_exit, &gf::kEventHandler, R"(result="failed_exit")"},
    {"timed_out", &EVC::timed_out, &gf::kEventHandler, R"(result="timed_out")"},
    {"spawn_errors", &EVC::spawn_errors, &gf::kEventHandler, R"(result="spawn_errors")"},
};
using HFC = cp::events::HostsFileCounters;
constexpr Field<HFC> kHostsFileFields[] = {
    {"writes", &HFC::writes, &gf::kHostsFile, R"(result="writes")"},
    {"unchanged", &HFC::unchanged, &gf::kHostsFile, R"(result="unchanged")"},
    {"deferred", &HFC::deferred, &gf::kHostsFile, R"(result="deferred")"},
    {"write_errors", &HFC::write_errors, &gf::kHostsFile, R"(result="write_errors")"},
    {"skipped_members", &HFC::skipped_members, &gf::kHostsFile, R"(result="skipped_members")"},
};
constexpr Field<TelemetryCounters> kTelemetryFields[] = {
    {"refused", &TelemetryCounters::refused, &gf::kTelemetry, R"(result="refused")"},
};
constexpr Field<ProcessGauges> kProcessFields[] = {
    {"start_time_unix", &ProcessGauges::start_time_unix, &gf::kStartTime, ""},
    {"cpu_us", &ProcessGauges::cpu_us, &gf::kCpu, "", 1e-6},
    {"resident_memory_bytes", &ProcessGauges::resident_memory_bytes, &gf::kResident, ""},
    {"virtual_memory_bytes", &ProcessGauges::virtual_memory_bytes, &gf::kVirtual, ""},
    {"open_fds", &ProcessGauges::open_fds, &gf::kOpenFds, ""},
    {"max_fds", &ProcessGauges::max_fds, &gf::kMaxFds, ""},
};
constexpr Field<PortGauges> kPortFields[] = {
    {"link_up", &PortGauges::link_up, &gf::kLinkUp, ""},
    {"link_down_events", &PortGauges::link_down_events, &gf::kLinkDown, ""},
};
constexpr Field<NicCounters> kNicFields[] = {
    {"rx_packets", &NicCounters::rx_packets, &gf::kNicRxPackets, ""},
    {"tx_packets", &NicCounters::tx_packets, &gf::kNicTxPackets, ""},
    {"rx_missed", &NicCounters::rx_missed, &gf::kNicRxMissed, ""},
    {"rx_errors", &NicCounters::rx_errors, &gf::kNicRxErrors, ""},
    {"rx_nombuf", &NicCounters::rx_nombuf, &gf::kNicRxNombuf, ""},
    {"tx_errors", &NicCounters::tx_errors, &gf::kNicTxErrors, ""},
};
using KPC = cp::KeyringPersister::Counters;
constexpr Field<KPC> kKeyringStateFields[] = {
    {"writes", &KPC::writes, &gf::kKeyringState, R"(result="writes")"},
    {"write_errors", &KPC::write_errors, &gf::kKeyringState, R"(result="write_errors")"},
};
using UKS = cp::UnknownKeyWatch::Senders;
constexpr Field<UKS> kUnknownKeySenderFields[] = {
    {"member", &UKS::member, &gf::kUnknownKeySenders, R"(kind="member")"},
    {"seed", &UKS::seed, &gf::kUnknownKeySenders, R"(kind="seed")"},
    {"other", &UKS::other, &gf::kUnknownKeySenders, R"(kind="other")"},
};
using KCC = cp::KeyCommandCounters;
constexpr Field<KCC> kKeyCommandFields[] = {
    {"sent", &KCC::key_commands_sent, &gf::kKeyCommands, R"(result="sent")"},
    {"applied", &KCC::key_commands_applied, &gf::kKeyCommands, R"(result="applied")"},
    {"refused", &KCC::key_commands_refused, &gf::kKeyCommands, R"(result="refused")"},
    {"repeated", &KCC::key_commands_repeated, &gf::kKeyCommands, R"(result="repeated")"},
    {"not_member", &KCC::key_commands_not_member, &gf::kKeyCommands, R"(result="not_member")"},
    {"stale", &KCC::key_commands_stale, &gf::kKeyCommands, R"(result="stale")"},
    {"unsigned", &KCC::key_commands_unsigned, &gf::kKeyCommands, R"(result="unsigned")"},
    {"results_received", &KCC::key_results_received, &gf::kKeyCommands, R"(result="results_received")"},
    {"results_unsolicited", &KCC::key_results_unsolicited, &gf::kKeyCommands, R"(result="results_unsolicited")"},
};
// The control API's section joins the server's counters and the commands'.
using SCV = cp::api::ServerCounterValues;
using CAC = ControlApiCounters;
constexpr Field<SCV> kApiServerFieldsBefore[] = {
    {"connections", &SCV::connections, &gf::kControlApi, R"(counter="connections")"},
};
constexpr Field<CAC> kControlApiFields[] = {
    {"requests", &CAC::requests, &gf::kControlApi, R"(counter="requests")"},
    {"bad_requests", &CAC::bad_requests, &gf::kControlApi, R"(counter="bad_requests")"},
    {"failed", &CAC::failed, &gf::kControlApi, R"(counter="failed")"},
    {"key_changes", &CAC::key_changes, &gf::kControlApi, R"(counter="key_changes")"},
    {"cluster_key_changes", &CAC::cluster_key_changes, &gf::kControlApi, R"(counter="cluster_key_changes")"},
};
// The server's `requests` (lines handed over) equals the commands' count: exported once.
constexpr Field<SCV> kApiServerFieldsAfter[] = {
    {"rejected_too_large", &SCV::rejected_too_large, &gf::kControlApi, R"(counter="rejected_too_large")"},
    {"rejected_read", &SCV::rejected_read, &gf::kControlApi, R"(counter="rejected_read")"},
    {"evicted", &SCV::evicted, &gf::kControlApi, R"(counter="evicted")"},
    {"timed_out", &SCV::timed_out, &gf::kControlApi, R"(counter="timed_out")"},
};
// Every word of each struct is one counter (the server's requests aside).
static_assert(std::size(kEventHandlerFields) * sizeof(std::uint64_t) == sizeof(EVC));
static_assert(std::size(kHostsFileFields) * sizeof(std::uint64_t) == sizeof(HFC));
static_assert(std::size(kNicFields) * sizeof(std::uint64_t) == sizeof(NicCounters));
static_assert(std::size(kProcessFields) * sizeof(std::uint64_t) == sizeof(ProcessGauges));
static_assert(std::size(kUnknownKeySenderFields) * sizeof(std::uint64_t) == sizeof(UKS));
static_assert(std::size(kKeyringStateFields) * sizeof(std::uint64_t) == sizeof(KPC));
static_assert(std::size(kKeyCommandFields) * sizeof(std::uint64_t) == sizeof(KCC));
static_assert(std::size(kControlApiFields) * sizeof(std::uint64_t) == sizeof(CAC));
static_assert((std::size(kApiServerFieldsBefore) + std::size(kApiServerFieldsAfter) + 1) * sizeof(std::uint64_t) ==
              sizeof(SCV));

std::string label(std::string_view name, std::string_view value) {
  std::string out(name);
  out += "=\"";
  for (const char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string join(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  std::string out(a);
  out += ',';
  out += b;
  return out;
}

class Walk {
 public:
  explicit Walk(CounterVisitor& v) : v_(v) {}

  // A counter in the JSON and in `family`, with the context's labels and `labels`.
  void counter(std::string_view key, std::uint64_t value, const Family& family, std::string_view ctx,
               std::string_view labels = {}, double scale = 1) {
    v_.counter(key, value, Series{&family, join(ctx, labels), static_cast<double>(value) * scale, {}});
  }

  template <class S, std::size_t N>
  void fields(const S& s, const Field<S> (&table)[N], std::string_view ctx, bool exported) {
    for (const Field<S>& f : table) {
      if (exported) {
        counter(f.key, s.*f.member, *f.family, ctx, f.labels, f.scale);
      } else {
        v_.number(f.key, s.*f.member);
      }
    }
  }

  template <std::size_t N>
  void by_class(std::string_view key, const std::array<std::uint64_t, N>& by, const Family* family,
                std::string_view ctx) {
    v_.open(key);
    for (std::size_t c = 0; c < dp::kClassNames.size(); ++c) {
      if (family != nullptr) {
        counter(dp::kClassNames[c], by[c], *family, ctx, label("class", dp::kClassNames[c]));
      } else {
        v_.number(dp::kClassNames[c], by[c]);
      }
    }
    v_.close();
  }

  // Worker counters: the verdicts and the guard tables' ageing and evictions
  // (not verdicts: no drop_ prefix).
  void worker_counters(const dp::WorkerCounters& c, std::string_view ctx, bool exported) {
    const auto put = [&](std::string_view key, std::uint64_t value, const Family& f, std::string_view labels) {
      if (exported) {
        counter(key, value, f, ctx, labels);
      } else {
        v_.number(key, value);
      }
    };
    put("rx_total", c.rx_total, kRxPackets, "");
    for (std::size_t i = 0; i < dp::kVerdictCount; ++i) {
      put(dp::kVerdictNames[i], c.verdicts[i], kVerdictPackets, label("verdict", dp::kVerdictNames[i]));
    }
    put(dp::kReplayExpiredName, c.replay_table_expired, kReplayExpired, "");
    put(dp::kRateEvictName, c.ratelimit_table_evict, kTableEvictions, label("table", "ratelimit"));
    put(dp::kReplayEvictName, c.replay_table_evict, kTableEvictions, label("table", "replay"));
    put(dp::kReplayRebasedName, c.replay_window_rebased, kReplayRebased, "");
  }

  // Unkeyed packets by what the classifier named them; these add up to
  // drop_unkeyed.
  void unkeyed(const dp::WorkerCounters& c, const std::vector<std::string>* rules, std::string_view ctx,
               bool exported) {
    const auto put = [&](std::string_view rule, std::uint64_t value) {
      if (exported) {
        counter(rule, value, kUnkeyedPackets, ctx, label("rule", rule));
      } else {
        v_.number(rule, value);
      }
    };
    v_.open("unkeyed");
    const std::size_t n = rules != nullptr ? std::min(rules->size(), dp::kUnkeyedRuleSlots) : 0;
    for (std::size_t i = 0; i < n; ++i) put((*rules)[i], c.unkeyed_by_rule[i]);
    put(dp::kUnkeyedUnmatchedName, c.unkeyed_by_rule[dp::kUnkeyedRuleSlots]);
    put(dp::kUnkeyedUnscannedName, c.unkeyed_unscanned);
    v_.close();
  }

  // Beside the verdicts: ARP frames stay drop_not_gossip (dataplane/arp.h).
  void arp(const dp::WorkerCounters& c, std::string_view ctx, bool exported) {
    v_.open("arp");
    if (exported) {
      counter("replies", c.arp_replies, kArp, ctx, label("result", "replies"));
      counter("hints", c.arp_hints, kArp, ctx, label("result", "hints"));
    } else {
      v_.number("replies", c.arp_replies);
      v_.number("hints", c.arp_hints);
    }
    v_.close();
  }

  // The control lcore's counters; class_drop_mismatch is the sum of
  // class_drop_mismatch_by_class (exported by class).
  void control_counters(const cp::ControlCounters& c, std::string_view ctx, bool exported) {
    const auto put = [&](std::string_view key, std::uint64_t value, const Family& f, std::string_view labels) {
      if (exported) {
        counter(key, value, f, ctx, labels);
      } else {
        v_.number(key, value);
      }
    };
    for (std::size_t t = 0; t < cp::kMsgTypeCount; ++t) {
      const char* type = cp::engine::message_type_name(static_cast<cp::MsgType>(t));
      put(std::string("msg_") + type, c.msgs[t], kMessages, label("type", type));
    }
    put("msg_decode_error", c.msg_decode_error, kDecodeErrors, "");
    put("msg_unknown", c.msg_unknown, kMessageUnknown, "");
    put("handoff_drop_replay", c.once_refused[static_cast<std::size_t>(dp::Once::kReplay)], kHandoffDropped,
        label("reason", "replay"));
    put("handoff_drop_replay_table_full", c.once_refused[static_cast<std::size_t>(dp::Once::kTableFull)],
        kHandoffDropped, label("reason", "replay_table_full"));
    std::uint64_t mismatch = 0;
    for (const std::uint64_t n : c.class_drop_mismatch) mismatch += n;
    v_.number("class_drop_mismatch", mismatch);
  }

  void membership(const MembershipSnapshot& m) {
    v_.open("membership");
    v_.text("node", m.node);
    counter("incarnation", m.incarnation, kIncarnation, "");
    counter("live_members", m.live_members, kLiveMembers, "");
    counter("health_score", m.health_score, kHealthScore, "");
    probe_rtt(m.probe_rtt);
    v_.open("members_by_state");
    for (std::size_t s = 0; s < cp::engine::kMemberStatusCount; ++s) {
      const char* state = cp::engine::status_name(static_cast<cp::engine::MemberStatus>(s));
      counter(state, m.by_state[s], kMembers, "", label("state", state));
    }
    v_.close();
    if (m.has_members) {
      v_.open_array("members");
      for (const MembershipSnapshot::Member& mm : m.members) {
        v_.open("");
        v_.text("name", mm.name);
        v_.text("address", mm.address);
        v_.number("port", mm.port);
        v_.text("status", cp::engine::status_name(mm.status));
        v_.number("incarnation", mm.incarnation);
        v_.open("tags");
        for (const auto& t : mm.tags) v_.text(t.key, t.value);
        v_.close();
        v_.close();
      }
      v_.close();
    }
    v_.open("events");
    for (std::size_t k = 0; k < 4; ++k) {
      const char* kind = cp::event_kind_name(static_cast<cp::engine::EventKind>(k));
      counter(kind, m.events[k], kMemberEvents, "", label("kind", kind));
    }
    v_.close();
    v_.open_array("recent_events");
    for (const auto& ev : m.recent_events) {
      v_.open("");
      v_.text("event", cp::event_kind_name(ev.kind));
      v_.text("node", ev.node);
      v_.number("incarnation", ev.incarnation);
      v_.close();
    }
    v_.close();
    engine_counters(m.engine);
    counter("sealed", m.host.sealed, kSealed, "");
    counter("drop_encode", m.host.drop_encode, kSealDropped, "", label("reason", "encode"));
    v_.open("shaper");
    for (std::size_t cls = 0; cls < crypto::kClassCount; ++cls) {
      v_.open(dp::kClassNames[cls]);
      fields(m.shaper[cls], kShaperFields, label("class", dp::kClassNames[cls]), true);
      v_.close();
    }
    v_.close();
    counter("drop_no_primary", m.host.drop_no_primary, kSealDropped, "", label("reason", "no_primary"));
    counter("sender_keys_reset", m.host.sender_keys_reset, kSenderKeysResets, "");
    v_.close();
  }

  // Cumulative, as Prometheus histograms are: le_us[B] = probes with RTT <= B;
  // Prometheus has it in seconds.
  void probe_rtt(const cp::ProbeRtt& rtt) {
    v_.open("probe_rtt");
    v_.open("le_us");
    std::uint64_t cum = 0;
    for (std::size_t i = 0; i < rtt.buckets.size(); ++i) {
      cum += rtt.buckets[i];
      const bool inf = i >= cp::ProbeRtt::kBoundsUs.size();
      char bound[32];
      if (inf) {
        std::snprintf(bound, sizeof bound, "+Inf");
      } else {
        std::snprintf(bound, sizeof bound, "%g", static_cast<double>(cp::ProbeRtt::kBoundsUs[i]) / 1e6);
      }
      const std::string key = inf ? "+Inf" : std::to_string(cp::ProbeRtt::kBoundsUs[i]);
      v_.counter(key, cum, Series{&kProbeRtt, label("le", bound), static_cast<double>(cum), "_bucket"});
    }
    v_.close();
    v_.counter("sum_us", rtt.sum_us, Series{&kProbeRtt, "", static_cast<double>(rtt.sum_us) / 1e6, "_sum"});
    v_.counter("count", rtt.count, Series{&kProbeRtt, "", static_cast<double>(rtt.count), "_count"});
    counter("unmatched", rtt.unmatched, kProbeUnmatched, "");
    v_.close();
  }

  void engine_counters(const cp::engine::Counters& c) {
    v_.open("engine_counters");
    for (std::size_t t = 0; t < c.msg_in.size(); ++t) {
      const char* type = cp::engine::message_type_name(t);
      counter(std::string("in_") + type, c.msg_in[t], ef::kMessages, "",
              join(label("direction", "in"), label("type", type)));
    }
    for (std::size_t t = 0; t < c.msg_out.size(); ++t) {
      const char* type = cp::engine::message_type_name(t);
      counter(std::string("out_") + type, c.msg_out[t], ef::kMessages, "",
              join(label("direction", "out"), label("type", type)));
    }
    for (std::size_t k = 0; k < c.broadcast_drop.size(); ++k) {
      counter(std::string("broadcast_drop_") + std::string(dp::kClassNames[k]), c.broadcast_drop[k],
              ef::kBroadcastsDropped, "", label("class", dp::kClassNames[k]));
    }
    fields(c, kEngineFields, "", true);
    v_.close();
  }

  template <class S, std::size_t N>
  void section(std::string_view key, const S& s, const Field<S> (&table)[N]) {
    v_.open(key);
    fields(s, table, "", true);
    v_.close();
  }

  void gateway(const GatewaySections& g, const MembershipSnapshot* membership) {
    section("snapshots", g.snapshots, kSnapshotFields);
    if (g.event_handler) section("event_handler", *g.event_handler, kEventHandlerFields);
    if (g.hosts_file) section("hosts_file", *g.hosts_file, kHostsFileFields);
    if (g.telemetry) section("telemetry", *g.telemetry, kTelemetryFields);
    section("process", g.process, kProcessFields);
    section("port", g.port, kPortFields);
    if (g.nic) section("nic", *g.nic, kNicFields);
    if (g.keyring_state) section("keyring_state", *g.keyring_state, kKeyringStateFields);
    section("unknown_key_senders", g.unknown_key_senders, kUnknownKeySenderFields);
    if (membership != nullptr) {
      section("key_commands", static_cast<const cp::KeyCommandCounters&>(membership->host), kKeyCommandFields);
    }
    if (g.control_api) {
      v_.open("control_api");
      fields(g.control_api->server, kApiServerFieldsBefore, "", true);
      fields(g.control_api->api, kControlApiFields, "", true);
      fields(g.control_api->server, kApiServerFieldsAfter, "", true);
      v_.close();
    }
  }

  void all(const CounterSnapshot& s) {
    dp::WorkerCounters sum;
    for (const WorkerStats& w : s.workers) {
      sum.rx_total += w.counters.rx_total;
      for (std::size_t v = 0; v < dp::kVerdictCount; ++v) sum.verdicts[v] += w.counters.verdicts[v];
      for (std::size_t c = 0; c < 4; ++c) sum.accepted_by_class[c] += w.counters.accepted_by_class[c];
      for (std::size_t i = 0; i < sum.unkeyed_by_rule.size(); ++i)
        sum.unkeyed_by_rule[i] += w.counters.unkeyed_by_rule[i];
      sum.unkeyed_unscanned += w.counters.unkeyed_unscanned;
      sum.replay_table_expired += w.counters.replay_table_expired;
      sum.ratelimit_table_evict += w.counters.ratelimit_table_evict;
      sum.replay_table_evict += w.counters.replay_table_evict;
      sum.replay_window_rebased += w.counters.replay_window_rebased;
      sum.arp_replies += w.counters.arp_replies;
      sum.arp_hints += w.counters.arp_hints;
    }
    // Every worker runs the same classifier.
    const std::vector<std::string>* rules = s.workers.empty() ? nullptr : s.workers.front().unkeyed_rules;

    // Sums of the per-lcore series: in the JSON only.
    v_.open("totals");
    worker_counters(sum, "", false);
    control_counters(s.control, "", false);
    v_.close();
    by_class("classes", sum.accepted_by_class, nullptr, "");
    unkeyed(sum, rules, "", false);
    arp(sum, "", false);

    v_.open_array("lcores");
    for (const WorkerStats& w : s.workers) {
      const std::string ctx = join(label("lcore", std::to_string(w.lcore)), label("queue", std::to_string(w.queue)));
      v_.open("");
      v_.number("lcore", w.lcore);
      v_.text("role", "worker");
      v_.number("queue", w.queue);
      v_.open("counters");
      worker_counters(w.counters, ctx, true);
      v_.close();
      by_class("accepted_by_class", w.counters.accepted_by_class, &kAcceptedPackets, ctx);
      unkeyed(w.counters, w.unkeyed_rules, ctx, true);
      v_.open("tx");
      fields(w.tx, kTxFields, ctx, true);
      v_.close();
      counter("rx_bursts", w.counters.rx_bursts, kRxBursts, ctx);
      counter("idle_polls", w.counters.idle_polls, kIdlePolls, ctx);
      arp(w.counters, ctx, true);
      v_.close();
    }
    const std::string ctx = label("lcore", std::to_string(s.control_lcore));
    v_.open("");
    v_.number("lcore", s.control_lcore);
    v_.text("role", "control");
    v_.open("counters");
    control_counters(s.control, ctx, true);
    v_.close();
    by_class("handoffs_by_class", s.control.handoffs_by_class, &kHandoffs, ctx);
    by_class("ring_depth_max", s.control.ring_depth_max, &kRingDepthMax, ctx);
    by_class("class_drop_mismatch_by_class", s.control.class_drop_mismatch, &kClassMismatch, ctx);
    v_.close();
    v_.close();

    v_.open("tx_queue");
    fields(s.tx_queue, kTxQueueFields, "", true);
    v_.close();
    if (s.membership) membership(*s.membership);
    if (s.gateway) gateway(*s.gateway, s.membership ? &*s.membership : nullptr);
  }

 private:
  CounterVisitor& v_;
};

}  // namespace

CounterSnapshot counter_snapshot(std::vector<WorkerStats> workers, unsigned control_lcore,
                                 const cp::ControlCounters& control, const dp::TxQueueCounters& tx_queue,
                                 const cp::EngineHost* host, bool include_members,
                                 std::optional<GatewaySections> gateway) {
  CounterSnapshot s;
  s.workers = std::move(workers);
  s.control_lcore = control_lcore;
  s.control = control;
  s.tx_queue = tx_queue;
  s.gateway = std::move(gateway);
  if (host == nullptr) return s;
  const auto& e = host->engine();
  MembershipSnapshot& m = s.membership.emplace();
  m.node = e.name();
  m.incarnation = e.incarnation();
  m.live_members = e.num_live();
  m.health_score = e.health_score();
  m.probe_rtt = host->probe_rtt();
  m.has_members = include_members;
  for (const auto& member : e.members()) {
    ++m.by_state[static_cast<std::size_t>(member.status) & 3];
    if (!include_members) continue;
    MembershipSnapshot::Member mm;
    mm.name = member.name.str();
    mm.address = base::ip_text(member.addr().ip);
    mm.port = member.addr().port;
    mm.status = member.status;
    mm.incarnation = member.incarnation;
    mm.tags = member.tags();
    m.members.push_back(std::move(mm));
  }
  m.events = host->event_counts();
  m.recent_events.assign(host->recent_events().begin(), host->recent_events().end());
  m.engine = e.counters();
  m.host = host->counters();
  m.shaper = host->shaper().counters();
  return s;
}

void walk_counters(const CounterSnapshot& s, CounterVisitor& v) { Walk(v).all(s); }

}  // namespace gw::cp
