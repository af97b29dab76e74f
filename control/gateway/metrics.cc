#include "control/gateway/metrics.h"

#include <rte_telemetry.h>

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gw::dp {
namespace {

using Json = nlohmann::ordered_json;

class Builder {
 public:
  void add(const std::string& name, const char* type, const std::string& help, std::string labels, double value,
           std::string suffix = {}) {
    auto it = index_.find(name);
    if (it == index_.end()) {
      it = index_.emplace(name, families_.size()).first;
      families_.push_back({name, type, help, {}});
    }
    families_[it->second].samples.push_back({std::move(labels), value, std::move(suffix)});
  }
  std::vector<MetricFamily> take() { return std::move(families_); }

 private:
  std::vector<MetricFamily> families_;
  std::map<std::string, std::size_t> index_;
};

std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string labels(std::initializer_list<std::pair<const char*, std::string>> kv) {
  std::string out;
  for (const auto& [k, v] : kv) {
    if (!out.empty()) out += ',';
    out += k;
    out += "=\"" + label_value(v) + '"';
  }
  return out;
}

std::string join_labels(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "," + b;
}

// Metric names allow [a-zA-Z0-9_:].
std::string sanitize(std::string s) {
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  }
  return s;
}

std::string text_of(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  return j.dump();
}

// Numeric leaves nobody mapped yet still get exported, under their path.
void generic(Builder& b, const std::string& prefix, const Json& j, const std::string& lbl) {
  if (j.is_number()) {
    b.add(sanitize("gossipgw_" + prefix), "untyped", "gossipgw counter '" + prefix + "' (see docs/metrics.md)", lbl,
          j.get<double>());
    return;
  }
  if (!j.is_object()) return;
  for (const auto& [k, v] : j.items()) generic(b, prefix + "_" + k, v, lbl);
}

void by_class(Builder& b, const std::string& name, const char* type, const std::string& help, const Json& j,
              const std::string& lbl) {
  for (const auto& [cls, v] : j.items()) {
    if (v.is_number()) b.add(name, type, help, join_labels(lbl, labels({{"class", cls}})), v.get<double>());
  }
}

// The engine's own counters (control/engine/engine.h), as Prometheus
// families: one family per meaning and unit, the dimension that tells the
// counters of a family apart as a label, so that summing a family over its
// label gives a meaningful total (issue 18). A counter that is a subset of
// another (young_declared_dead of the failed changes, join_answered of the
// answered requests) has its own family, so no sum counts it twice. The stats
// JSON keeps the engine's flat names (`membership.engine_counters.KEY`);
// docs/metrics.md maps each key to its series.
struct EngineSeries {
  const char* family;
  const char* help;
  std::string labels;  // empty: an unlabelled family
};
const std::map<std::string, EngineSeries>& engine_series() {
  static const std::map<std::string, EngineSeries> kSeries = [] {
    std::map<std::string, EngineSeries> m;
    const auto add = [&m](const char* key, const char* family, const char* help, const char* label = nullptr,
                          const char* value = nullptr) {
      m.emplace(key, EngineSeries{family, help, label == nullptr ? std::string() : labels({{label, value}})});
    };
    constexpr const char* kDatagrams = "Datagrams the engine handled (in) or queued for sending (out) (datagrams)";
    add("packets_in", "gossipgw_engine_datagrams_total", kDatagrams, "direction", "in");
    add("packets_out", "gossipgw_engine_datagrams_total", kDatagrams, "direction", "out");
    add("outbox_drop_full", "gossipgw_engine_outbox_dropped_total",
        "Outgoing datagrams dropped because the engine's outbox was full (datagrams)");
    add("events_drop_full", "gossipgw_engine_events_dropped_total",
        "Member events dropped because nobody drained them in time (events)");
    add("broadcast_superseded", "gossipgw_engine_broadcasts_superseded_total",
        "Queued broadcasts replaced by newer news about the same member (broadcasts)");
    constexpr const char* kAdmission =
        "New members refused admission, by reason: rate (over the admission rate with the waiting list full), "
        "policy (name prefix or required tag), table_full (member table full) (members)";
    add("admission_drop_rate", "gossipgw_engine_admission_refused_total", kAdmission, "reason", "rate");
    add("admission_drop_policy", "gossipgw_engine_admission_refused_total", kAdmission, "reason", "policy");
    add("admission_drop_table_full", "gossipgw_engine_admission_refused_total", kAdmission, "reason", "table_full");
    add("admission_deferred", "gossipgw_engine_admission_deferred_total",
        "New members over the admission rate, waiting for a token (members)");
    // Messages the engine received and ignored: the type they were, and why.
    constexpr const char* kIgnored =
        "Received messages the engine ignored, by message type and reason (alive: tombstone, graveyard, no_addr, "
        "bad_name, tags_too_large; update (alive/suspect/dead/leave about a member): stale, unknown, far_future; "
        "ack and nack: unsolicited; ping: misdirected; sync_response: unsolicited; sync: oversize) (messages)";
    struct Ign {
      const char* key;
      const char* type;
      const char* reason;
    };
    static const Ign kIgn[] = {
        {"alive_drop_tombstone", "alive", "tombstone"},   {"alive_drop_graveyard", "alive", "graveyard"},
        {"alive_drop_no_addr", "alive", "no_addr"},       {"alive_drop_bad_name", "alive", "bad_name"},
        {"tags_drop_too_large", "alive", "tags_too_large"}, {"update_drop_stale", "update", "stale"},
        {"update_drop_unknown", "update", "unknown"},     {"update_drop_far_future", "update", "far_future"},
        {"ack_drop_unsolicited", "ack", "unsolicited"},   {"nack_drop_unsolicited", "nack", "unsolicited"},
        {"ping_drop_misdirected", "ping", "misdirected"}, {"sync_drop_unsolicited", "sync_response", "unsolicited"},
        {"sync_drop_oversize", "sync", "oversize"},
    };
    constexpr const char* kConflicts =
        "Alive messages claiming a name at another address: our_name (ours: we refute), member_name (a live "
        "member's, not newer: ignored) (messages)";
    add("conflict_self_name", "gossipgw_engine_name_conflicts_total", kConflicts, "claim", "our_name");
    add("conflict_address", "gossipgw_engine_name_conflicts_total", kConflicts, "claim", "member_name");
    constexpr const char* kChanges =
        "Membership changes the engine applied: joined, left (gracefully), failed (declared dead), suspected, "
        "updated (metadata), tombstone_expired (dead or left members forgotten after their tombstone TTL) "
        "(members)";
    add("joins", "gossipgw_engine_member_changes_total", kChanges, "change", "joined");
    add("leaves", "gossipgw_engine_member_changes_total", kChanges, "change", "left");
    add("deaths", "gossipgw_engine_member_changes_total", kChanges, "change", "failed");
    add("suspicions", "gossipgw_engine_member_changes_total", kChanges, "change", "suspected");
    add("updates", "gossipgw_engine_member_changes_total", kChanges, "change", "updated");
    add("tombstones_expired", "gossipgw_engine_member_changes_total", kChanges, "change", "tombstone_expired");
    add("young_declared_dead", "gossipgw_engine_young_declared_dead_total",
        "Newcomers that failed a probe in a storm, or probationers that did, declared dead without suspicion; "
        "also in member_changes{change=\"failed\"} (members)");
    add("young_last_pings", "gossipgw_engine_young_last_pings_total",
        "Newcomers in a storm whose failed probe no helper nacked, pinged once more before the verdict (datagrams)");
    add("young_last_acks", "gossipgw_engine_young_last_acks_total",
        "... that answered it (or pinged us) meanwhile: alive, no verdict (members)");
    add("refutations", "gossipgw_engine_refutations_total", "Times we refuted a suspicion about ourselves (refutations)");
    add("suspicion_confirmations", "gossipgw_engine_suspicion_confirmations_total",
        "Independent confirmations of suspicions received (confirmations)");
    add("probe_started", "gossipgw_engine_probes_started_total", "Probes started (probes)");
    add("probe_newcomer", "gossipgw_engine_probes_newcomer_total",
        "Probes sent to a newcomer out of round-robin order, in a storm; also in probes_started (probes)");
    add("probe_hearsay", "gossipgw_engine_probes_hearsay_total",
        "Probes of a member we suspected on others' word whose verdict (their Dead) never reached us, "
        "sent out of round-robin order; also in probes_started (probes)");
    constexpr const char* kProbeOutcomes =
        "Finished probes by outcome: ack_direct, ack_indirect (through helpers), failed (no answer in time), "
        "abandoned_stall (deadline passed while we were stalled: no verdict, our health takes the blame), "
        "outdated (unanswered, but a newer incarnation of the target arrived meanwhile: no verdict) (probes)";
    add("probe_ack_direct", "gossipgw_engine_probe_outcomes_total", kProbeOutcomes, "outcome", "ack_direct");
    add("probe_ack_indirect", "gossipgw_engine_probe_outcomes_total", kProbeOutcomes, "outcome", "ack_indirect");
    add("probe_failed", "gossipgw_engine_probe_outcomes_total", kProbeOutcomes, "outcome", "failed");
    add("probe_abandoned_stall", "gossipgw_engine_probe_outcomes_total", kProbeOutcomes, "outcome", "abandoned_stall");
    add("probe_outdated", "gossipgw_engine_probe_outcomes_total", kProbeOutcomes, "outcome", "outdated");
    add("probe_indirect_sent", "gossipgw_engine_indirect_requests_sent_total",
        "Indirect probe requests sent to helpers (requests)");
    add("probe_nack_received", "gossipgw_engine_nacks_received_total", "Nacks received from indirect helpers (nacks)");
    constexpr const char* kRelay =
        "Indirect probe requests from others: started (we relay), refused_full (relay table full) (requests)";
    add("relay_started", "gossipgw_engine_relay_requests_total", kRelay, "outcome", "started");
    add("relay_drop_full", "gossipgw_engine_relay_requests_total", kRelay, "outcome", "refused_full");
    constexpr const char* kRelayOut =
        "Relayed probes by outcome: ack_forwarded (back to the member that asked), nack_sent (no ack came) "
        "(relays)";
    add("relay_ack_forwarded", "gossipgw_engine_relay_outcomes_total", kRelayOut, "outcome", "ack_forwarded");
    add("relay_nack_sent", "gossipgw_engine_relay_outcomes_total", kRelayOut, "outcome", "nack_sent");
    add("sync_started", "gossipgw_engine_syncs_started_total",
        "Full-state syncs we started: periodic, reconnects and after-join follow-ups (syncs)");
    add("sync_reconnects", "gossipgw_engine_sync_reconnects_total",
        "Syncs sent to members we consider failed, to heal partitions; also in syncs_started (syncs)");
    constexpr const char* kSyncReq =
        "Sync requests received, by outcome: answered, refused_concurrency (concurrency cap), refused_rate "
        "(answer rate limit), refused_join_rate (join answer rate limit; the joiner retries); oversize requests "
        "are in messages_ignored (requests)";
    add("sync_answered", "gossipgw_engine_sync_requests_total", kSyncReq, "outcome", "answered");
    add("sync_drop_concurrency", "gossipgw_engine_sync_requests_total", kSyncReq, "outcome", "refused_concurrency");
    add("sync_drop_rate", "gossipgw_engine_sync_requests_total", kSyncReq, "outcome", "refused_rate");
    add("join_drop_rate", "gossipgw_engine_sync_requests_total", kSyncReq, "outcome", "refused_join_rate");
    add("join_answered", "gossipgw_engine_join_requests_answered_total",
        "Join syncs we answered; also in sync_requests{outcome=\"answered\"} (requests)");
    add("join_followups", "gossipgw_engine_join_followups_total",
        "Whole-view syncs with other members right after joining; also in syncs_started (syncs)");
    add("join_retries", "gossipgw_engine_join_retries_total",
        "Our join rounds that got no answer and were sent again (rounds)");
    add("sync_digest_equal", "gossipgw_engine_sync_digest_equal_total",
        "Periodic syncs answered with the digest alone: both views the same (syncs)");
    add("sync_digest_differ", "gossipgw_engine_sync_digest_differ_total",
        "Our digest syncs whose views still differed after the answer: our window sent too (syncs)");
    add("sync_bucket_windows", "gossipgw_engine_sync_bucket_windows_total",
        "Sync windows that carried only the buckets in which two views differed (windows)");
    add("sync_whole_views", "gossipgw_engine_sync_whole_views_total",
        "Periodic syncs from a view far shorter than ours, answered with the whole view (syncs)");
    add("sync_incomplete_retries", "gossipgw_engine_sync_incomplete_retries_total",
        "Our digest syncs whose answer timed out with parts missing, started again soon (syncs)");
    add("sync_bytes_out", "gossipgw_engine_sync_sent_bytes_total", "Estimated encoded bytes of sync parts sent (bytes)");
    add("user_data_in", "gossipgw_engine_user_data_received_total", "User data messages received (messages)");
    add("graveyard_evictions", "gossipgw_engine_graveyard_evictions_total",
        "Oldest graveyard traces forgotten at the graveyard bound (traces)");
    add("stale_corrections", "gossipgw_engine_stale_corrections_total",
        "Datagrams answering a sender's stale news: our Dead or Leave, our Suspect (a confirmation), or the newer Alive (datagrams)");
    add("probation_started", "gossipgw_engine_probation_started_total",
        "Newcomers admitted on probation, outside the view, in a storm or an arrival surge (members)");
    constexpr const char* kProbation =
        "Probations ended, by outcome: promoted (proof of life: joined the view), died (declared dead, never in "
        "the view; also in member_changes{change=\"failed\"}), forgotten (never proved alive: no verdict) (members)";
    add("probation_promoted", "gossipgw_engine_probation_ended_total", kProbation, "outcome", "promoted");
    add("probation_died", "gossipgw_engine_probation_ended_total", kProbation, "outcome", "died");
    add("probation_forgotten", "gossipgw_engine_probation_ended_total", kProbation, "outcome", "forgotten");
    add("probation_proof_pings", "gossipgw_engine_probation_proof_pings_total",
        "Proof-of-life pings sent to probationers that had not answered us yet (datagrams)");
    add("probation_proof_acks", "gossipgw_engine_probation_proof_acks_total",
        "Proof-of-life pings answered: the probationer is alive (datagrams)");
    add("probation_unproven", "gossipgw_engine_probation_unproven_total",
        "Probationers declared dead after four unanswered proof pings, a probe interval apart (also in probation_ended{outcome=\"died\"}) (members)");
    add("probation_death_told", "gossipgw_engine_probation_deaths_told_total",
        "Deaths on probation told first-hand to the member that told us of the newcomer (datagrams)");
    add("surges", "gossipgw_engine_surges_total",
        "Arrival surges recognised: never-seen members arriving faster than a running cluster grows (surges)");
    add("gossip_eager", "gossipgw_engine_gossip_eager_total",
        "Gossip rounds brought forward for the death or departure of an established member (rounds)");
    add("own_stalls", "gossipgw_engine_own_stalls_total",
        "Engine ticks that came over a probe interval late: the control lcore was stalled; verdicts wait for the "
        "backlog (stalls)");
    for (const Ign& i : kIgn) {
      m.emplace(i.key, EngineSeries{"gossipgw_engine_messages_ignored_total", kIgnored,
                                    labels({{"type", i.type}, {"reason", i.reason}})});
    }
    return m;
  }();
  return kSeries;
}

// Sections the composition root adds (stats_json ExtraSections): one family
// per section, its counters as a label.
struct Section {
  const char* name;
  const char* type;
  const char* label;
  const char* help;
};
const std::map<std::string, Section>& sections() {
  static const std::map<std::string, Section> kSections = {
      {"control_api", {"gossipgw_control_api_total", "counter", "counter",
                       "Control API: connections, requests, bad_requests, failed, key_changes, "
                       "cluster_key_changes, rejected_too_large, rejected_read (incomplete within the whole-request deadline), "
                       "timed_out, evicted (closed to make room while still sending) (requests)"}},
      {"key_commands", {"gossipgw_key_commands_total", "counter", "result",
                        "Cluster-wide key commands: sent, applied, refused, repeated, not_member, stale, "
                        "results_received, results_unsolicited (commands)"}},
      {"event_handler", {"gossipgw_event_handler_total", "counter", "result",
                         "Event handler: submitted, coalesced, dropped_queue_full, dropped_stopped, started, "
                         "succeeded, failed_exit, timed_out, spawn_errors (events or runs)"}},
      {"telemetry", {"gossipgw_telemetry_total", "counter", "result",
                     "DPDK telemetry: refused (series the telemetry library refused to add; stays 0) (series)"}},
      {"keyring_state", {"gossipgw_keyring_state_total", "counter", "result",
                         "Keyring persisted to control.state_dir: writes, write_errors (writes)"}},
      {"hosts_file", {"gossipgw_hosts_file_total", "counter", "result",
                      "Hosts file: writes, unchanged, deferred, write_errors, skipped_members (updates)"}},
  };
  return kSections;
}

void worker(Builder& b, const Json& l) {
  const std::string lbl = labels({{"lcore", text_of(l.value("lcore", Json(0)))}, {"queue", text_of(l.value("queue", Json(0)))}});
  for (const auto& [k, v] : l.items()) {
    if (k == "lcore" || k == "role" || k == "queue") continue;
    if (k == "counters") {
      for (const auto& [ck, cv] : v.items()) {
        if (ck == "rx_total") {
          b.add("gossipgw_rx_packets_total", "counter", "Packets received on the worker's rx queue (packets)", lbl,
                cv.get<double>());
        } else if (cv.is_number() && ck.size() > 6 && ck.compare(ck.size() - 6, 6, "_evict") == 0) {
          b.add("gossipgw_table_evictions_total", "counter",
                "Entries evicted from a worker's bounded per-sender table: replay windows or rate-limit buckets "
                "(entries)",
                join_labels(lbl, labels({{"table", ck.substr(0, ck.find('_'))}})), cv.get<double>());
        } else if (cv.is_number() && ck == "replay_table_expired") {
          b.add("gossipgw_replay_windows_expired_total", "counter",
                "Replay windows freed because their newest datagram was older than limits.replay_window_s "
                "(windows)",
                lbl, cv.get<double>());
        } else if (cv.is_number() && (ck == "accepted" || ck.rfind("drop_", 0) == 0)) {
          b.add("gossipgw_verdict_packets_total", "counter",
                "Received packets by check-ladder verdict: accepted or the drop reason (packets)",
                join_labels(lbl, labels({{"verdict", ck}})), cv.get<double>());
        } else {
          generic(b, "worker_" + ck, cv, lbl);
        }
      }
    } else if (k == "accepted_by_class") {
      by_class(b, "gossipgw_accepted_packets_total", "counter",
               "Accepted packets handed to the control lcore, by priority class (packets)", v, lbl);
    } else if (k == "tx") {
      for (const auto& [tk, tv] : v.items()) {
        static const std::map<std::string, std::pair<const char*, const char*>> kTx = {
            {"tx_packets", {"gossipgw_tx_packets_total", "Datagrams transmitted (packets)"}},
            {"tx_bytes", {"gossipgw_tx_bytes_total", "Bytes transmitted, Ethernet header included (bytes)"}},
            {"tx_drop_nic", {"gossipgw_tx_nic_dropped_total", "Datagrams the NIC's tx queue refused (packets)"}},
            {"tx_broadcast_unknown_mac",
             {"gossipgw_tx_broadcast_unknown_mac_total",
              "Datagrams sent to the broadcast MAC because the peer's MAC was not known yet (packets)"}},
        };
        const auto it = kTx.find(tk);
        if (it != kTx.end() && tv.is_number()) {
          b.add(it->second.first, "counter", it->second.second, lbl, tv.get<double>());
        } else {
          generic(b, "worker_tx_" + tk, tv, lbl);
        }
      }
    } else if (k == "arp") {
      for (const auto& [ak, av] : v.items()) {
        if (!av.is_number()) continue;
        b.add("gossipgw_arp_total", "counter",
              "ARP on the gateway's address: replies sent, peer MAC hints taken (only with dataplane.arp_hints: true) "
              "(packets)",
              join_labels(lbl, labels({{"result", ak}})), av.get<double>());
      }
    } else if (k == "guard") {
      for (const auto& [gk, gv] : v.items()) {
        if (gv.is_number() && gk.size() > 6 && gk.compare(gk.size() - 6, 6, "_evict") == 0) {
          b.add("gossipgw_table_evictions_total", "counter",
                "Entries evicted from a worker's bounded per-sender table: replay windows or rate-limit buckets "
                "(entries)",
                join_labels(lbl, labels({{"table", gk.substr(0, gk.find('_'))}})), gv.get<double>());
        } else {
          generic(b, "worker_guard_" + gk, gv, lbl);
        }
      }
    } else if (k == "unkeyed") {
      for (const auto& [rule, n] : v.items()) {
        if (!n.is_number()) continue;
        b.add("gossipgw_unkeyed_packets_total", "counter",
              "drop_unkeyed packets by the classifier rule that matched (built-in signatures, operator rules, "
              "unmatched, unscanned) (packets)",
              join_labels(lbl, labels({{"rule", rule}})), n.get<double>());
      }
    } else if (k == "rx_bursts") {
      b.add("gossipgw_rx_bursts_total", "counter", "Non-empty rx bursts (bursts)", lbl, v.get<double>());
    } else if (k == "idle_polls") {
      b.add("gossipgw_idle_polls_total", "counter", "rx polls that returned no packet (polls)", lbl, v.get<double>());
    } else {
      generic(b, "worker_" + k, v, lbl);
    }
  }
}

void control(Builder& b, const Json& l) {
  const std::string lbl = labels({{"lcore", text_of(l.value("lcore", Json(0)))}});
  for (const auto& [k, v] : l.items()) {
    if (k == "lcore" || k == "role") continue;
    if (k == "counters") {
      for (const auto& [ck, cv] : v.items()) {
        if (!cv.is_number()) continue;
        if (ck == "msg_decode_error") {
          b.add("gossipgw_message_decode_errors_total", "counter",
                "Authenticated payloads that did not decode as a gossip Compound (payloads)", lbl, cv.get<double>());
        } else if (ck == "msg_unknown") {
          b.add("gossipgw_message_unknown_total", "counter",
                "Authenticated payloads with no message this version knows (payloads)", lbl, cv.get<double>());
        } else if (ck == "class_drop_mismatch") {
          continue;  // exported by class from class_drop_mismatch_by_class
        } else if (ck.rfind("handoff_drop_", 0) == 0) {
          b.add("gossipgw_handoff_dropped_total", "counter",
                "Accepted payloads the control lcore's once-only check refused: reason replay (already accepted "
                "through another worker) or replay_table_full (payloads)",
                join_labels(lbl, labels({{"reason", ck.substr(13)}})), cv.get<double>());
        } else if (ck.rfind("msg_", 0) == 0) {
          b.add("gossipgw_messages_total", "counter", "Gossip messages received, by type (messages)",
                join_labels(lbl, labels({{"type", ck.substr(4)}})), cv.get<double>());
        } else {
          generic(b, "control_" + ck, cv, lbl);
        }
      }
    } else if (k == "handoffs_by_class") {
      by_class(b, "gossipgw_handoffs_total", "counter",
               "Payloads the control lcore took from the workers' rings, by class (payloads)", v, lbl);
    } else if (k == "class_drop_mismatch_by_class") {
      by_class(b, "gossipgw_class_mismatch_dropped_total", "counter",
               "Decoded payloads dropped because their header class was more urgent than their messages "
               "justify, by header class (payloads)",
               v, lbl);
    } else if (k == "ring_depth_max") {
      by_class(b, "gossipgw_ring_depth_max", "gauge",
               "Deepest a worker-to-control ring of the class was seen (payloads)", v, lbl);
    } else {
      generic(b, "control_" + k, v, lbl);
    }
  }
}

void membership(Builder& b, const Json& m) {
  for (const auto& [k, v] : m.items()) {
    if (k == "node" || k == "members" || k == "recent_events") continue;
    if (k == "incarnation") {
      b.add("gossipgw_incarnation", "gauge", "This member's incarnation number", "", v.get<double>());
    } else if (k == "live_members") {
      b.add("gossipgw_live_members", "gauge", "Alive or suspect members in our view, ourselves included (members)",
            "", v.get<double>());
    } else if (k == "health_score") {
      b.add("gossipgw_health_score", "gauge", "Lifeguard local health multiplier score (0 = healthy)", "",
            v.get<double>());
    } else if (k == "probe_rtt" && v.is_object()) {
      // A Prometheus histogram in seconds from the cumulative le_us buckets.
      const std::string name = "gossipgw_probe_rtt_seconds";
      const std::string help = "Round trip of our direct probes, ping sent to ack received (seconds)";
      if (v.contains("le_us") && v["le_us"].is_object()) {
        for (const auto& [le, n] : v["le_us"].items()) {
          if (!n.is_number()) continue;
          char bound[32];
          if (le == "+Inf") {
            std::snprintf(bound, sizeof bound, "+Inf");
          } else {
            std::snprintf(bound, sizeof bound, "%g", std::strtod(le.c_str(), nullptr) / 1e6);
          }
          b.add(name, "histogram", help, labels({{"le", bound}}), n.get<double>(), "_bucket");
        }
      }
      if (v.contains("sum_us") && v["sum_us"].is_number()) {
        b.add(name, "histogram", help, "", v["sum_us"].get<double>() / 1e6, "_sum");
      }
      if (v.contains("count") && v["count"].is_number()) {
        b.add(name, "histogram", help, "", v["count"].get<double>(), "_count");
      }
      if (v.contains("unmatched") && v["unmatched"].is_number()) {
        b.add("gossipgw_probe_unmatched_total", "counter",
              "Probes forgotten before their ack came (more than 1,024 in flight) (probes)", "",
              v["unmatched"].get<double>());
      }
    } else if (k == "members_by_state") {
      for (const auto& [s, n] : v.items()) {
        b.add("gossipgw_members", "gauge", "Members in our view by state, tombstones included (members)",
              labels({{"state", s}}), n.get<double>());
      }
    } else if (k == "events") {
      for (const auto& [s, n] : v.items()) {
        b.add("gossipgw_member_events_total", "counter", "Member events by kind (events)", labels({{"kind", s}}),
              n.get<double>());
      }
    } else if (k == "engine_counters") {
      for (const auto& [ek, ev] : v.items()) {
        if (!ev.is_number()) continue;
        if (ek.rfind("in_", 0) == 0 || ek.rfind("out_", 0) == 0) {
          const bool in = ek[0] == 'i';
          b.add("gossipgw_engine_messages_total", "counter",
                "Messages the engine handled (in) or sent (out), by type (messages)",
                labels({{"direction", in ? "in" : "out"}, {"type", ek.substr(in ? 3 : 4)}}), ev.get<double>());
        } else if (ek.rfind("broadcast_drop_", 0) == 0) {
          b.add("gossipgw_engine_broadcasts_dropped_total", "counter",
                "Broadcasts dropped from the full queue, by class (broadcasts)",
                labels({{"class", ek.substr(15)}}), ev.get<double>());
        } else if (const auto s = engine_series().find(ek); s != engine_series().end()) {
          b.add(s->second.family, "counter", s->second.help, s->second.labels, ev.get<double>());
        } else {
          // A counter the engine gained without a mapping: still exported.
          b.add(sanitize("gossipgw_engine_" + ek + "_total"), "untyped", "Membership engine counter " + ek, "",
                ev.get<double>());
        }
      }
    } else if (k == "sealed") {
      b.add("gossipgw_sealed_datagrams_total", "counter", "Datagrams sealed for transmit (datagrams)", "",
            v.get<double>());
    } else if (k == "sender_keys_reset") {
      b.add("gossipgw_sender_keys_resets_total", "counter",
            "Times the table of which key each sender uses filled up and was cleared (resets)", "", v.get<double>());
    } else if (k == "drop_encode" || k == "drop_no_primary") {
      b.add("gossipgw_seal_dropped_total", "counter", "Outgoing datagrams dropped before sealing, by reason (datagrams)",
            labels({{"reason", k.substr(5)}}), v.get<double>());
    } else if (k == "shaper") {
      for (const auto& [cls, sc] : v.items()) {
        static const std::map<std::string, std::pair<const char*, const char*>> kShaper = {
            {"sent", {"gossipgw_egress_sent_datagrams_total", "Datagrams the egress shaper let out (datagrams)"}},
            {"sent_bytes", {"gossipgw_egress_sent_bytes_total", "Bytes the egress shaper let out (bytes)"}},
            {"deferred", {"gossipgw_egress_deferred_total", "Datagrams that waited for budget (datagrams)"}},
            {"dropped", {"gossipgw_egress_dropped_total", "Datagrams dropped from the full egress queue (datagrams)"}},
            {"refused", {"gossipgw_egress_refused_total", "Datagrams the transmit path refused (datagrams)"}},
            {"depth", {"gossipgw_egress_queue_depth", "Datagrams waiting in the egress queue now (datagrams)"}},
            {"depth_max", {"gossipgw_egress_queue_depth_max", "Most datagrams ever waiting in the egress queue"}},
        };
        for (const auto& [sk, sv] : sc.items()) {
          const auto it = kShaper.find(sk);
          const std::string lbl = labels({{"class", cls}});
          if (it != kShaper.end() && sv.is_number()) {
            const bool gauge = sk == "depth" || sk == "depth_max";
            b.add(it->second.first, gauge ? "gauge" : "counter", it->second.second, lbl, sv.get<double>());
          } else {
            generic(b, "egress_" + sk, sv, lbl);
          }
        }
      }
    } else {
      generic(b, "membership_" + k, v, "");
    }
  }
}

}  // namespace

std::vector<MetricFamily> metric_families(std::string_view text) {
  const Json doc = Json::parse(text.begin(), text.end(), nullptr, false);
  Builder b;
  if (!doc.is_object()) return b.take();
  for (const auto& [k, v] : doc.items()) {
    if (k == "totals" || k == "classes" || k == "unkeyed" || k == "arp") continue;  // sums of the per-lcore series
    if (k == "lcores") {
      for (const Json& l : v) {
        if (l.value("role", "") == "worker") {
          worker(b, l);
        } else {
          control(b, l);
        }
      }
    } else if (k == "tx_queue") {
      for (const auto& [tk, tv] : v.items()) {
        b.add("gossipgw_tx_queue_datagrams_total", "counter",
              "Datagrams the control lcore queued for transmit, or dropped before the ring (datagrams)",
              labels({{"result", tk}}), tv.get<double>());
      }
    } else if (k == "membership") {
      membership(b, v);
    } else if (k == "snapshots") {
      if (v.contains("version") && v["version"].is_number()) {
        b.add("gossipgw_snapshot_version", "gauge",
              "Version of the keys and known-members snapshot published to the workers", "", v["version"].get<double>());
      }
      if (v.contains("retained") && v["retained"].is_number()) {
        b.add("gossipgw_snapshots_retained", "gauge",
              "Snapshots kept until every worker has moved past them (snapshots)", "", v["retained"].get<double>());
      }
    } else if (k == "process" && v.is_object()) {
      if (v.contains("start_time_unix") && v["start_time_unix"].is_number()) {
        b.add("gossipgw_process_start_time_seconds", "gauge", "When the gateway process started (Unix seconds)", "",
              v["start_time_unix"].get<double>());
      }
    } else if (k == "port" && v.is_object()) {
      if (v.contains("link_up") && v["link_up"].is_number()) {
        b.add("gossipgw_port_link_up", "gauge", "1 while the port's link is up; the workers do not poll it while 0",
              "", v["link_up"].get<double>());
      }
      if (v.contains("link_down_events") && v["link_down_events"].is_number()) {
        b.add("gossipgw_port_link_down_total", "counter",
              "Times the port's link went down after being seen (a memif peer gone, a cable) (events)", "",
              v["link_down_events"].get<double>());
      }
    } else if (k == "nic" && v.is_object()) {
      // One family per counter: they count unlike things (a sum is meaningless).
      static const std::map<std::string, std::pair<const char*, const char*>> kNic = {
          {"rx_packets", {"gossipgw_nic_rx_packets_total", "Packets the NIC received (packets)"}},
          {"tx_packets", {"gossipgw_nic_tx_packets_total", "Packets the NIC sent (packets)"}},
          {"rx_missed", {"gossipgw_nic_rx_missed_total",
                         "Packets the NIC dropped because no rx descriptor was free: workers too slow (imissed) "
                         "(packets)"}},
          {"rx_errors", {"gossipgw_nic_rx_errors_total", "Erroneous packets the NIC received (ierrors) (packets)"}},
          {"rx_nombuf", {"gossipgw_nic_rx_nombuf_total",
                         "Receive buffer allocation failures: mbuf pool exhausted (rx_nombuf) (events)"}},
          {"tx_errors", {"gossipgw_nic_tx_errors_total", "Packets the NIC failed to send (oerrors) (packets)"}},
      };
      for (const auto& [nk, nv] : v.items()) {
        const auto it = kNic.find(nk);
        if (it != kNic.end() && nv.is_number()) {
          b.add(it->second.first, "counter", it->second.second, "", nv.get<double>());
        } else {
          generic(b, "nic_" + nk, nv, "");
        }
      }
    } else if (const auto s = sections().find(k); s != sections().end() && v.is_object()) {
      for (const auto& [ck, cv] : v.items()) {
        if (cv.is_number()) {
          b.add(s->second.name, s->second.type, s->second.help, labels({{s->second.label, ck}}), cv.get<double>());
        }
      }
    } else {
      generic(b, k, v, "");
    }
  }
  return b.take();
}

std::string prometheus_text(const std::vector<MetricFamily>& families) {
  std::string out;
  char num[64];
  for (const MetricFamily& f : families) {
    out += "# HELP " + f.name + " " + f.help + "\n";
    out += "# TYPE " + f.name + " " + f.type + "\n";
    for (const MetricSample& s : f.samples) {
      out += f.name + s.suffix;
      if (!s.labels.empty()) out += "{" + s.labels + "}";
      if (std::floor(s.value) == s.value && std::fabs(s.value) < 1e18) {
        std::snprintf(num, sizeof num, " %.0f\n", s.value);
      } else {
        std::snprintf(num, sizeof num, " %.17g\n", s.value);
      }
      out += num;
    }
  }
  return out;
}

void MetricsPublisher::set_build_info(const std::string& version, const std::string& commit) {
  std::lock_guard<std::mutex> lock(mu_);
  build_info_ = MetricFamily{"gossipgw_build_info", "gauge", "Always 1: the version and git commit of the binary",
                             {{"version=\"" + version + "\",commit=\"" + commit + "\"", 1, ""}}};
  for (char& c : build_info_.samples[0].labels) {
    if (c == '\\' || c == '\n') c = '_';  // keep the exposition format valid whatever git says
  }
}

void MetricsPublisher::publish(std::string_view stats_json_text, std::uint64_t unix_ms) {
  std::vector<MetricFamily> built = metric_families(stats_json_text);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!build_info_.name.empty()) built.push_back(build_info_);
  }
  auto fams = std::make_shared<const std::vector<MetricFamily>>(std::move(built));
  auto text = std::make_shared<const std::string>(prometheus_text(*fams));
  std::lock_guard<std::mutex> lock(mu_);
  view_.families = std::move(fams);
  view_.text = std::move(text);
  view_.published_unix_ms = unix_ms;
  ++view_.publications;
}

MetricsPublisher::View MetricsPublisher::latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return view_;
}

PrometheusServer::PrometheusServer(const MetricsPublisher& publisher, const std::string& address,
                                   std::uint16_t port)
    : server_(std::make_unique<httplib::Server>()) {
  server_->Get("/metrics", [&publisher](const httplib::Request&, httplib::Response& res) {
    const MetricsPublisher::View v = publisher.latest();
    if (!v.text) {
      res.status = 503;
      res.set_content("no counters published yet\n", "text/plain");
      return;
    }
    res.set_content(*v.text, "text/plain; version=0.0.4; charset=utf-8");
  });
  server_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("gossipgw: counters at /metrics\n", "text/plain");
  });
  const int bound = port == 0 ? server_->bind_to_any_port(address) : (server_->bind_to_port(address, port) ? port : -1);
  if (bound <= 0) {
    throw std::runtime_error("metrics.prometheus_port: cannot listen on " + address + ":" + std::to_string(port));
  }
  port_ = static_cast<std::uint16_t>(bound);
}

void PrometheusServer::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    finished_.store(true, std::memory_order_release);
  });
  // httplib's stop() does nothing until the accept loop runs, and a stop
  // that does nothing leaves the thread in accept() for ever (issue 18):
  // return only once stop() would take effect.
  while (!server_->is_running() && !finished_.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

PrometheusServer::~PrometheusServer() {
  if (!thread_.joinable()) return;  // never started: nothing listens, nothing to join
  while (!server_->is_running() && !finished_.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!finished_.load(std::memory_order_acquire)) server_->stop();
  thread_.join();
}

namespace {

const MetricsPublisher* g_publisher = nullptr;  // set once, before EAL serves telemetry
std::string g_node;

constexpr int kPageEntries = RTE_TEL_MAX_DICT_ENTRIES;

std::atomic<std::uint64_t> g_refused{0};

bool tel_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '/';
}

// One value under `name`: whole non-negative numbers as u64 (every counter
// and gauge today), anything else as its decimal text. The library's return
// value is checked (it refuses bad names with -EINVAL and truncates with E2BIG).
bool tel_add(rte_tel_data* d, const std::string& name, double value) {
  int rc = 0;
  if (value >= 0 && std::floor(value) == value && value < 1.8e19) {
    rc = rte_tel_data_add_dict_u64(d, name.c_str(), static_cast<std::uint64_t>(value));
  } else {
    char num[64];
    std::snprintf(num, sizeof num, "%.17g", value);
    rc = rte_tel_data_add_dict_string(d, name.c_str(), num);
  }
  if (rc != 0) g_refused.fetch_add(1, std::memory_order_relaxed);
  return rc == 0;
}

int tel_metrics(const char*, const char* params, rte_tel_data* d) {
  const MetricsPublisher::View v = g_publisher->latest();
  rte_tel_data_start_dict(d);
  if (!v.families) return 0;
  long page = 0;
  if (params != nullptr && *params != '\0') {
    char* end = nullptr;
    page = std::strtol(params, &end, 10);
    if (end == params || *end != '\0' || page < 0) return -EINVAL;
  }
  // Two entries of every page are ours: _pages and _publication.
  constexpr long kPerPage = kPageEntries - 2;
  long index = 0;
  const long first = page * kPerPage;
  long total = 0;
  for (const MetricFamily& f : *v.families) total += static_cast<long>(f.samples.size());
  for (const MetricFamily& f : *v.families) {
    for (const MetricSample& s : f.samples) {
      const long at = index++;
      if (at < first || at >= first + kPerPage) continue;
      const std::string name = telemetry_name(f, s);
      if (name.empty()) {
        g_refused.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      (void)tel_add(d, name, s.value);
    }
  }
  const long pages = (total + kPerPage - 1) / kPerPage;
  rte_tel_data_add_dict_u64(d, "_pages", static_cast<std::uint64_t>(pages));
  // Which publication this page is from: a reader paging through compares it.
  rte_tel_data_add_dict_u64(d, "_publication", v.publications);
  return 0;
}

int tel_totals(const char*, const char*, rte_tel_data* d) {
  const MetricsPublisher::View v = g_publisher->latest();
  rte_tel_data_start_dict(d);
  if (!v.families) return 0;
  // One number per family: the sum over its series (per-lcore counters add up).
  int added = 0;
  for (const MetricFamily& f : *v.families) {
    if (added >= kPageEntries) break;
    double sum = 0;
    for (const MetricSample& s : f.samples) {
      // A histogram's total is its count; its buckets and sum do not add up.
      if (f.type == "histogram") {
        if (s.suffix == "_count") sum = s.value;
      } else {
        sum += s.value;
      }
    }
    if (tel_add(d, f.name, sum)) ++added;
  }
  return 0;
}

int tel_info(const char*, const char*, rte_tel_data* d) {
  const MetricsPublisher::View v = g_publisher->latest();
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "node", g_node.c_str());
  rte_tel_data_add_dict_u64(d, "published_unix_ms", v.published_unix_ms);
  rte_tel_data_add_dict_u64(d, "publications", v.publications);
  rte_tel_data_add_dict_u64(d, "series_refused", telemetry_refused());
  return 0;
}

}  // namespace

std::string telemetry_name(const MetricFamily& family, const MetricSample& sample) {
  std::string name = family.name + sample.suffix;
  // labels: a="x",b="y" (values never hold quotes: see the header).
  const std::string& l = sample.labels;
  std::size_t pos = 0;
  while (pos < l.size()) {
    const std::size_t eq = l.find('=', pos);
    if (eq == std::string::npos) break;
    const std::size_t open = eq + 1;
    const std::size_t close = l.find('"', open + 1);
    if (open >= l.size() || l[open] != '"' || close == std::string::npos) break;
    name += "/" + l.substr(pos, eq - pos) + "/" + l.substr(open + 1, close - open - 1);
    pos = close + 1;
    if (pos < l.size() && l[pos] == ',') ++pos;
  }
  for (char& c : name) {
    if (!tel_name_char(c)) c = '_';
  }
  if (name.size() >= RTE_TEL_MAX_STRING_LEN) return {};
  return name;
}

std::uint64_t telemetry_refused() { return g_refused.load(std::memory_order_relaxed); }

bool register_telemetry(const MetricsPublisher* publisher, std::string node_name) {
  g_publisher = publisher;
  g_node = std::move(node_name);
  int rc = rte_telemetry_register_cmd("/gossipgw/metrics", tel_metrics,
                                      "Every gossipgw series, one entry each, named family/label/value/...; param: page (0.._pages-1)");
  rc |= rte_telemetry_register_cmd("/gossipgw/totals", tel_totals,
                                   "Every gossipgw metric family summed over its series (lcores, classes, ...)");
  rc |= rte_telemetry_register_cmd("/gossipgw/info", tel_info, "Node name and when counters were last published");
  return rc == 0;
}

}  // namespace gw::dp
