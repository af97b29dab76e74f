#include "control/gateway/stats_json.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "control/host/engine_host.h"

namespace gw::dp {
namespace {

using Json = nlohmann::ordered_json;

Json worker_counters(const WorkerCounters& c) {
  Json j;
  j["rx_total"] = c.rx_total;
  for (std::size_t v = 0; v < kVerdictCount; ++v) j[std::string(kVerdictNames[v])] = c.verdicts[v];
  // Not verdicts (no drop_ prefix): the guard tables' ageing and evictions.
  j[std::string(kReplayExpiredName)] = c.replay_table_expired;
  j[std::string(kRateEvictName)] = c.ratelimit_table_evict;
  return j;
}

// Unkeyed packets by what the classifier named them; these add up to
// drop_unkeyed.
Json unkeyed_counts(const WorkerCounters& c, const std::vector<std::string>* rules) {
  Json j = Json::object();
  const std::size_t n = rules != nullptr ? std::min(rules->size(), kUnkeyedRuleSlots) : 0;
  for (std::size_t i = 0; i < n; ++i) j[(*rules)[i]] = c.unkeyed_by_rule[i];
  j[std::string(kUnkeyedUnmatchedName)] = c.unkeyed_by_rule[kUnkeyedRuleSlots];
  j[std::string(kUnkeyedUnscannedName)] = c.unkeyed_unscanned;
  return j;
}

// Beside the verdicts: ARP frames stay drop_not_gossip (dataplane/arp.h).
Json arp_counts(const WorkerCounters& c) {
  Json j;
  j["replies"] = c.arp_replies;
  j["hints"] = c.arp_hints;
  return j;
}

Json class_counts(const std::array<std::uint64_t, 4>& by_class) {
  Json j;
  for (std::size_t c = 0; c < kClassNames.size(); ++c) j[std::string(kClassNames[c])] = by_class[c];
  return j;
}

Json control_counters(const cp::ControlCounters& c) {
  Json j;
  for (std::size_t t = 0; t < cp::kMsgTypeCount; ++t) j[std::string(cp::kMsgCounterNames[t])] = c.msgs[t];
  j["msg_decode_error"] = c.msg_decode_error;
  j["msg_unknown"] = c.msg_unknown;
  j["handoff_drop_replay"] = c.once_refused[static_cast<std::size_t>(Once::kReplay)];
  j["handoff_drop_replay_table_full"] = c.once_refused[static_cast<std::size_t>(Once::kTableFull)];
  std::uint64_t mismatch = 0;
  for (const std::uint64_t n : c.class_drop_mismatch) mismatch += n;
  j["class_drop_mismatch"] = mismatch;
  return j;
}

Json tx_counters(const TxCounters& t) {
  Json j;
  j["tx_packets"] = t.tx_packets;
  j["tx_bytes"] = t.tx_bytes;
  j["tx_drop_nic"] = t.tx_drop_nic;
  j["tx_broadcast_unknown_mac"] = t.tx_broadcast_unknown;
  return j;
}

constexpr const char* kStatusNames[] = {"alive", "suspect", "dead", "left"};

}  // namespace

std::string engine_counters_json(const cp::engine::Counters& c) {
  Json ec;
  for (std::size_t t = 0; t < c.msg_in.size(); ++t) ec[std::string("in_") + cp::engine::message_type_name(t)] = c.msg_in[t];
  for (std::size_t t = 0; t < c.msg_out.size(); ++t) ec[std::string("out_") + cp::engine::message_type_name(t)] = c.msg_out[t];
  for (std::size_t k = 0; k < c.broadcast_drop.size(); ++k) ec[std::string("broadcast_drop_") + std::string(kClassNames[k])] = c.broadcast_drop[k];
#define GW_ENGINE_COUNTER(name) ec[#name] = c.name
  GW_ENGINE_COUNTER(packets_in); GW_ENGINE_COUNTER(packets_out); GW_ENGINE_COUNTER(outbox_drop_full);
  GW_ENGINE_COUNTER(events_drop_full); GW_ENGINE_COUNTER(broadcast_superseded);
  GW_ENGINE_COUNTER(admission_drop_rate); GW_ENGINE_COUNTER(admission_drop_policy);
  GW_ENGINE_COUNTER(admission_drop_table_full); GW_ENGINE_COUNTER(alive_drop_tombstone);
  GW_ENGINE_COUNTER(update_drop_stale); GW_ENGINE_COUNTER(update_drop_unknown);
  GW_ENGINE_COUNTER(tags_drop_too_large); GW_ENGINE_COUNTER(alive_drop_no_addr); GW_ENGINE_COUNTER(alive_drop_bad_name);
  GW_ENGINE_COUNTER(refutations); GW_ENGINE_COUNTER(suspicions); GW_ENGINE_COUNTER(suspicion_confirmations);
  GW_ENGINE_COUNTER(deaths); GW_ENGINE_COUNTER(leaves); GW_ENGINE_COUNTER(joins); GW_ENGINE_COUNTER(updates);
  GW_ENGINE_COUNTER(tombstones_expired); GW_ENGINE_COUNTER(probe_started); GW_ENGINE_COUNTER(probe_ack_direct);
  GW_ENGINE_COUNTER(probe_ack_indirect); GW_ENGINE_COUNTER(probe_failed); GW_ENGINE_COUNTER(probe_outdated); GW_ENGINE_COUNTER(probe_indirect_sent);
  GW_ENGINE_COUNTER(probe_nack_received); GW_ENGINE_COUNTER(ping_drop_misdirected); GW_ENGINE_COUNTER(relay_started);
  GW_ENGINE_COUNTER(relay_drop_full); GW_ENGINE_COUNTER(relay_ack_forwarded); GW_ENGINE_COUNTER(relay_nack_sent);
  GW_ENGINE_COUNTER(sync_started); GW_ENGINE_COUNTER(sync_reconnects); GW_ENGINE_COUNTER(sync_answered);
  GW_ENGINE_COUNTER(sync_drop_concurrency); GW_ENGINE_COUNTER(sync_drop_rate); GW_ENGINE_COUNTER(sync_drop_unsolicited);
  GW_ENGINE_COUNTER(sync_bytes_out); GW_ENGINE_COUNTER(user_data_in);
  GW_ENGINE_COUNTER(ack_drop_unsolicited); GW_ENGINE_COUNTER(nack_drop_unsolicited);
  GW_ENGINE_COUNTER(update_drop_far_future); GW_ENGINE_COUNTER(sync_drop_oversize);
  GW_ENGINE_COUNTER(conflict_self_name); GW_ENGINE_COUNTER(conflict_address);
  GW_ENGINE_COUNTER(admission_deferred); GW_ENGINE_COUNTER(alive_drop_graveyard); GW_ENGINE_COUNTER(graveyard_evictions);
  GW_ENGINE_COUNTER(join_answered); GW_ENGINE_COUNTER(join_drop_rate); GW_ENGINE_COUNTER(join_retries); GW_ENGINE_COUNTER(join_followups);
  GW_ENGINE_COUNTER(young_declared_dead); GW_ENGINE_COUNTER(young_last_pings); GW_ENGINE_COUNTER(young_last_acks); GW_ENGINE_COUNTER(stale_corrections); GW_ENGINE_COUNTER(probe_newcomer);
  GW_ENGINE_COUNTER(probe_hearsay);
  GW_ENGINE_COUNTER(probation_started); GW_ENGINE_COUNTER(probation_promoted); GW_ENGINE_COUNTER(probation_died); GW_ENGINE_COUNTER(probation_death_told); GW_ENGINE_COUNTER(probation_proof_pings); GW_ENGINE_COUNTER(probation_proof_acks); GW_ENGINE_COUNTER(probation_unproven); GW_ENGINE_COUNTER(probation_forgotten);
  GW_ENGINE_COUNTER(surges); GW_ENGINE_COUNTER(gossip_eager);
  GW_ENGINE_COUNTER(sync_digest_equal); GW_ENGINE_COUNTER(sync_digest_differ);
  GW_ENGINE_COUNTER(sync_bucket_windows); GW_ENGINE_COUNTER(sync_whole_views);
  GW_ENGINE_COUNTER(sync_incomplete_retries);
  GW_ENGINE_COUNTER(own_stalls); GW_ENGINE_COUNTER(probe_abandoned_stall);
#undef GW_ENGINE_COUNTER
  return ec.dump();
}

namespace {

Json membership(const cp::EngineHost& host, bool include_members) {
  const auto& e = host.engine();
  Json j;
  j["node"] = e.name();
  j["incarnation"] = e.incarnation();
  j["live_members"] = e.num_live();
  j["health_score"] = e.health_score();
  {
    // Cumulative, as Prometheus histograms are: le_us[B] = probes with RTT <= B.
    const cp::ProbeRtt& rtt = host.probe_rtt();
    Json le = Json::object();
    std::uint64_t cum = 0;
    for (std::size_t i = 0; i < rtt.buckets.size(); ++i) {
      cum += rtt.buckets[i];
      le[i < cp::ProbeRtt::kBoundsUs.size() ? std::to_string(cp::ProbeRtt::kBoundsUs[i]) : "+Inf"] = cum;
    }
    j["probe_rtt"] = {{"le_us", std::move(le)}, {"sum_us", rtt.sum_us}, {"count", rtt.count},
                      {"unmatched", rtt.unmatched}};
  }
  Json members = Json::array();
  std::array<std::uint64_t, 4> by_state{};
  for (const auto& m : e.members()) {
    ++by_state[static_cast<std::size_t>(m.status) & 3];
    if (!include_members) continue;
    Json mj;
    mj["name"] = m.name;
    mj["address"] = ip_text(m.addr().ip);
    mj["port"] = m.addr().port;
    mj["status"] = kStatusNames[static_cast<std::size_t>(m.status) & 3];
    mj["incarnation"] = m.incarnation;
    Json tags = Json::object();
    for (const auto& t : m.tags()) tags[t.key] = t.value;
    mj["tags"] = std::move(tags);
    members.push_back(std::move(mj));
  }
  Json states;
  for (std::size_t s = 0; s < 4; ++s) states[kStatusNames[s]] = by_state[s];
  j["members_by_state"] = std::move(states);
  if (include_members) j["members"] = std::move(members);
  Json events;
  for (std::size_t k = 0; k < 4; ++k) {
    events[cp::event_kind_name(static_cast<cp::engine::EventKind>(k))] = host.event_counts()[k];
  }
  Json recent = Json::array();
  for (const auto& ev : host.recent_events()) {
    Json ej;
    ej["event"] = cp::event_kind_name(ev.kind);
    ej["node"] = ev.node;
    ej["incarnation"] = ev.incarnation;
    recent.push_back(std::move(ej));
  }
  j["events"] = std::move(events);
  j["recent_events"] = std::move(recent);
  j["engine_counters"] = Json::parse(engine_counters_json(e.counters()));
  const auto& hc = host.counters();
  j["sealed"] = hc.sealed;
  j["drop_encode"] = hc.drop_encode;
  Json shaper;
  for (std::size_t cls = 0; cls < 4; ++cls) {
    const auto& k = host.shaper().counters()[cls];
    Json sc;
    sc["sent"] = k.sent;
    sc["sent_bytes"] = k.sent_bytes;
    sc["deferred"] = k.deferred;
    sc["dropped"] = k.dropped;
    sc["refused"] = k.refused;
    sc["depth"] = k.depth;
    sc["depth_max"] = k.depth_max;
    shaper[std::string(kClassNames[cls])] = std::move(sc);
  }
  j["shaper"] = std::move(shaper);
  j["drop_no_primary"] = hc.drop_no_primary;
  j["sender_keys_reset"] = hc.sender_keys_reset;
  return j;
}

}  // namespace

std::string stats_json(const std::vector<WorkerStats>& workers, unsigned control_lcore,
                       const cp::ControlCounters& control, const TxQueueCounters& tx_queue,
                       const cp::EngineHost* host, bool compact, bool include_members,
                       const ExtraSections& extra) {
  WorkerCounters sum;
  for (const WorkerStats& w : workers) {
    sum.rx_total += w.counters.rx_total;
    for (std::size_t v = 0; v < kVerdictCount; ++v) sum.verdicts[v] += w.counters.verdicts[v];
    for (std::size_t c = 0; c < 4; ++c) sum.accepted_by_class[c] += w.counters.accepted_by_class[c];
    for (std::size_t i = 0; i < sum.unkeyed_by_rule.size(); ++i) sum.unkeyed_by_rule[i] += w.counters.unkeyed_by_rule[i];
    sum.unkeyed_unscanned += w.counters.unkeyed_unscanned;
    sum.replay_table_expired += w.counters.replay_table_expired;
    sum.ratelimit_table_evict += w.counters.ratelimit_table_evict;
    sum.arp_replies += w.counters.arp_replies;
    sum.arp_hints += w.counters.arp_hints;
  }
  // Every worker runs the same classifier.
  const std::vector<std::string>* unkeyed_rules = workers.empty() ? nullptr : workers.front().unkeyed_rules;

  Json totals = worker_counters(sum);
  const Json control_json = control_counters(control);
  for (const std::string_view name : cp::kMsgCounterNames) totals[std::string(name)] = control_json[std::string(name)];
  totals["msg_decode_error"] = control.msg_decode_error;
  totals["msg_unknown"] = control.msg_unknown;
  totals["handoff_drop_replay"] = control_json["handoff_drop_replay"];
  totals["handoff_drop_replay_table_full"] = control_json["handoff_drop_replay_table_full"];
  totals["class_drop_mismatch"] = control_json["class_drop_mismatch"];

  Json lcores = Json::array();
  for (const WorkerStats& w : workers) {
    Json l;
    l["lcore"] = w.lcore;
    l["role"] = "worker";
    l["queue"] = w.queue;
    l["counters"] = worker_counters(w.counters);
    l["accepted_by_class"] = class_counts(w.counters.accepted_by_class);
    l["unkeyed"] = unkeyed_counts(w.counters, w.unkeyed_rules);
    l["tx"] = tx_counters(w.tx);
    l["rx_bursts"] = w.counters.rx_bursts;
    l["idle_polls"] = w.counters.idle_polls;
    l["arp"] = arp_counts(w.counters);
    lcores.push_back(std::move(l));
  }
  Json ctl;
  ctl["lcore"] = control_lcore;
  ctl["role"] = "control";
  ctl["counters"] = control_counters(control);
  ctl["handoffs_by_class"] = class_counts(control.handoffs_by_class);
  ctl["ring_depth_max"] = class_counts(control.ring_depth_max);
  ctl["class_drop_mismatch_by_class"] = class_counts(control.class_drop_mismatch);
  lcores.push_back(std::move(ctl));

  Json doc;
  doc["totals"] = std::move(totals);
  doc["classes"] = class_counts(sum.accepted_by_class);
  doc["unkeyed"] = unkeyed_counts(sum, unkeyed_rules);
  doc["arp"] = arp_counts(sum);
  doc["lcores"] = std::move(lcores);
  Json txq;
  txq["queued"] = tx_queue.queued;
  txq["drop_no_buffer"] = tx_queue.drop_no_buffer;
  txq["drop_ring_full"] = tx_queue.drop_ring_full;
  txq["drop_too_large"] = tx_queue.drop_too_large;
  txq["drop_bad_endpoint"] = tx_queue.drop_bad_endpoint;
  doc["tx_queue"] = std::move(txq);
  if (host != nullptr) doc["membership"] = membership(*host, include_members);
  for (const auto& [section, counters] : extra) {
    Json s = Json::object();
    for (const auto& [name, value] : counters) s[name] = value;
    doc[section] = std::move(s);
  }
  return compact ? doc.dump() : doc.dump(2) + "\n";
}

std::string ip_text(std::span<const std::uint8_t> ip) {
  char buf[64] = "";
  if (ip.size() == 4) {
    std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", ip[0], ip[1], ip[2], ip[3]);
    return buf;
  }
  std::string s;
  for (std::size_t i = 0; i + 1 < ip.size(); i += 2) {
    std::snprintf(buf, sizeof buf, "%s%x", i == 0 ? "" : ":", (ip[i] << 8) | ip[i + 1]);
    s += buf;
  }
  return s;
}

bool write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out << text;
    out.flush();
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace gw::dp
