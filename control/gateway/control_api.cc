#include "control/gateway/control_api.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <variant>

#include "base/endpoint.h"
#include "control/api/request.h"
#include "control/host/key_ops.h"

namespace gw::cp {
namespace {

using Json = nlohmann::ordered_json;

const char* suite_name(crypto::Suite s) { return s == crypto::Suite::kAes256Gcm ? "aes-256-gcm" : "chacha20-poly1305"; }

std::string ok_reply(Json j) {
  Json out;
  out["ok"] = true;
  for (auto& [k, v] : j.items()) out[k] = std::move(v);
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

bool has_tag(const engine::Member& m, const std::pair<std::string, std::string>& tag) {
  return std::any_of(m.tags().begin(), m.tags().end(),
                     [&](const engine::Tag& t) { return t.key == tag.first && t.value == tag.second; });
}

}  // namespace

std::unique_ptr<dp::DataplaneSnapshot> snapshot_with_members(const dp::DataplaneSnapshot& current,
                                                             const engine::Engine& eng) {
  auto next = std::make_unique<dp::DataplaneSnapshot>();
  next->keys = current.keys;
  next->key_material = current.key_material;
  for (const engine::Member& m : eng.members()) {
    if (m.is_tombstone() || m.name == eng.name()) continue;
    if (m.addr().ip.size() != 4 && m.addr().ip.size() != 16) continue;
    dp::SourceAddress a;
    std::copy(m.addr().ip.begin(), m.addr().ip.end(), a.ip.begin());
    a.ip_len = static_cast<std::uint8_t>(m.addr().ip.size());
    next->known_members.push_back(a);
  }
  std::sort(next->known_members.begin(), next->known_members.end());
  next->known_members.erase(std::unique(next->known_members.begin(), next->known_members.end()),
                            next->known_members.end());
  return next;
}

void ControlApi::handle(std::string_view line, std::uint64_t now_ns, std::uint32_t unix_s, const Reply& reply) {
  const api::ParseResult parsed = api::parse_request(line);
  std::optional<cp::KeyChange> cluster_change;
  cp::ClusterKeyChange::Authorisation cluster_auth;  // the operator's signature (install, use, remove)
  if (parsed.request) {
    std::visit(
        [&](const auto& req) {
          using T = std::decay_t<decltype(req)>;
          if constexpr (std::is_same_v<T, api::KeysInstallRequest>) {
            if (req.scope == api::Scope::kCluster) {
              cp::KeyChange c;
              c.op = cp::KeyChange::Op::kInstall;
              std::copy(req.key.begin(), req.key.end(), c.key.begin());
              c.primary = req.primary;
              cluster_change = c;
              cluster_auth = {req.auth.issued_unix_ns, req.auth.signature};
            }
          } else if constexpr (std::is_same_v<T, api::KeysListRequest>) {
            if (req.scope == api::Scope::kCluster) {
              cp::KeyChange c;
              c.op = cp::KeyChange::Op::kList;
              cluster_change = c;
            }
          } else if constexpr (std::is_same_v<T, api::KeysUseRequest> || std::is_same_v<T, api::KeysRemoveRequest>) {
            if (req.scope == api::Scope::kCluster) {
              cp::KeyChange c;
              c.op = std::is_same_v<T, api::KeysUseRequest> ? cp::KeyChange::Op::kUse : cp::KeyChange::Op::kRemove;
              c.id = req.id;
              cluster_change = c;
              cluster_auth = {req.auth.issued_unix_ns, req.auth.signature};
            }
          }
        },
        *parsed.request);
  }
  if (parsed.request && std::holds_alternative<api::JoinRequest>(*parsed.request)) {
    start_join(std::get<api::JoinRequest>(*parsed.request), now_ns, reply);
    return;
  }
  // Like Consul's "graceful leave complete": the answer waits for the leave.
  if (parsed.request && std::holds_alternative<api::LeaveRequest>(*parsed.request) && ctx_.stop_phase) {
    ++counters_.requests;
    if (leaves_.empty()) spdlog::info("leave requested through the control API");
    ctx_.request_stop();
    leaves_.push_back({now_ns, reply});
    return;
  }
  if (!cluster_change) {
    reply(handle_now(line, now_ns));
    return;
  }
  ++counters_.requests;
  if (ctx_.host == nullptr) {
    ++counters_.failed;
    reply(api::error_reply("membership is disabled on this gateway: there is no cluster to tell"));
    return;
  }
  const std::string err = ctx_.host->start_cluster_key_change(
      *cluster_change, cluster_auth, now_ns, unix_s,
      [this, reply, list = cluster_change->op == cp::KeyChange::Op::kList](const cp::EngineHost::KeyOpOutcome& o) {
        Json j;
        j["scope"] = "cluster";
        if (list) {
          // Per key id: how many live members hold it and on how many it is
          // primary, out of N (us and every member that answered), and who
          // lacks it. Members that did not answer are listed apart.
          auto rings = o.keyrings;
          const crypto::Keyring& ours = ctx_.snapshots->current().keys;
          rings[ctx_.host->engine().name()] = {ours.ids(), ours.primary() != nullptr ? ours.primary()->id() : 0};
          std::map<std::uint32_t, std::pair<std::vector<std::string>, std::size_t>> by_key;  // holders, primary on
          for (const auto& [node, ring] : rings) {
            for (std::uint32_t id : ring.first) {
              by_key[id].first.push_back(node);
              if (id == ring.second) ++by_key[id].second;
            }
          }
          Json keys = Json::array();
          for (const auto& [id, v] : by_key) {
            Json lacking = Json::array();
            for (const auto& [node, ring] : rings) {
              if (std::find(ring.first.begin(), ring.first.end(), id) == ring.first.end()) lacking.push_back(node);
            }
            keys.push_back(Json{{"id", crypto::key_id_text(id)},
                                {"held_by", v.first.size()},
                                {"primary_on", v.second},
                                {"members", rings.size()},
                                {"lacking", std::move(lacking)}});
          }
          j["keys"] = std::move(keys);
          j["members"] = rings.size();
          j["no_answer"] = o.no_answer;
          j["complete"] = o.ok.size() == o.targets;
          if (o.ok.size() == o.targets) {
            reply(ok_reply(std::move(j)));
            return;
          }
          Json out;
          out["ok"] = false;
          out["error"] = "not every live member answered (see no_answer)";
          out["status"] = api::kStatusFailed;
          for (auto& [k, v] : j.items()) out[k] = std::move(v);
          reply(out.dump(-1, ' ', false, Json::error_handler_t::replace));
          return;
        }
        j["request"] = o.request_id;
        j["targets"] = o.targets;
        j["complete"] = o.ok.size() == o.targets;
        j["applied"] = o.ok;
        Json refused = Json::array();
        for (const auto& [node, why] : o.refused) refused.push_back(Json{{"member", node}, {"error", why}});
        j["refused"] = std::move(refused);
        j["no_answer"] = o.no_answer;
        // "ok" is gossipctl's exit status: only a change every member applied is ok.
        if (o.ok.size() == o.targets) {
          reply(ok_reply(std::move(j)));
          return;
        }
        Json out;
        out["ok"] = false;
        out["error"] = "not every member applied the change (see refused and no_answer); re-run it";
        out["status"] = api::kStatusFailed;
        for (auto& [k, v] : j.items()) out[k] = std::move(v);
        reply(out.dump(-1, ' ', false, Json::error_handler_t::replace));
      });
  if (!err.empty()) {
    ++counters_.failed;
    reply(api::error_reply(err));
    return;
  }
  ++counters_.cluster_key_changes;
}

void ControlApi::start_join(const api::JoinRequest& req, std::uint64_t now_ns, const Reply& reply) {
  ++counters_.requests;
  const std::string shown =
      (req.ip.find(':') != std::string::npos ? "[" + req.ip + "]" : req.ip) + ":" + std::to_string(req.port);
  if (ctx_.host == nullptr) {
    ++counters_.failed;
    reply(api::error_reply("membership is disabled on this gateway (membership.enabled: false)"));
    return;
  }
  const std::optional<base::IpBytes> ip = base::parse_ip(req.ip);
  if (!ip) {
    ++counters_.bad_requests;
    reply(api::error_reply("address " + shown + " is not an IP literal", api::kStatusBadInput));
    return;
  }
  engine::Engine& eng = ctx_.host->engine();
  // Datagrams go out in our own family only: one for the other family would
  // be dropped as drop_bad_endpoint, and the join could never be answered.
  const bool ipv6 = ip->size() == 16;
  const bool we_are_ipv6 = eng.config().addr.ip.size() == 16;
  if (ipv6 != we_are_ipv6) {
    ++counters_.bad_requests;
    reply(api::error_reply("address " + shown + " is " + (ipv6 ? "IPv6" : "IPv4") + ", but this node gossips over " +
                               (we_are_ipv6 ? "IPv6" : "IPv4") + " (node.address)",
                           api::kStatusBadInput));
    return;
  }
  const engine::Address a{*ip, req.port};
  if (a == eng.config().addr) {
    ++counters_.bad_requests;
    reply(api::error_reply("address " + shown + " is this node's own address", api::kStatusBadInput));
    return;
  }
  // Added to the configured seeds, never in their place: if this address
  // does not answer, the engine keeps retrying the seeds as well.
  ctx_.host->join(a, now_ns);
  spdlog::info("joining through {} (control API), {} seed(s) in all", shown, ctx_.host->seeds().size());
  joins_.push_back({a, shown, now_ns + kJoinTimeoutNs, reply});
}

void ControlApi::poll_leaves(std::uint64_t now_ns) {
  const cp::StopPhase phase = ctx_.stop_phase();
  std::erase_if(leaves_, [&](const PendingLeave& pl) {
    const std::uint64_t took_ms = now_ns > pl.asked_ns ? (now_ns - pl.asked_ns) / 1'000'000ULL : 0;
    if (phase == cp::StopPhase::kLeft) {
      Json j;
      j["left"] = true;
      j["took_ms"] = took_ms;
      pl.reply(ok_reply(std::move(j)));
      return true;
    }
    std::string why;
    if (phase == cp::StopPhase::kLeaveTimedOut) {
      why = "the leave did not go out within membership.leave_timeout_ms (" + std::to_string(ctx_.leave_timeout_ms) +
            " ms): peers may see this node fail rather than leave; the gateway stops anyway";
    } else if (now_ns - pl.asked_ns >= kLeaveAnswerNs) {
      why = "the leave is still going out after " + std::to_string(kLeaveAnswerNs / 1'000'000'000ULL) +
            " s (membership.leave_timeout_ms " + std::to_string(ctx_.leave_timeout_ms) +
            " ms); the gateway stops once it is done";
    } else {
      return false;
    }
    ++counters_.failed;
    Json j;
    j["ok"] = false;
    j["error"] = why;
    j["status"] = api::kStatusFailed;
    j["left"] = false;
    j["took_ms"] = took_ms;
    pl.reply(j.dump(-1, ' ', true, Json::error_handler_t::replace));
    return true;
  });
}

void ControlApi::poll(std::uint64_t now_ns) {
  if (!leaves_.empty()) poll_leaves(now_ns);
  if (joins_.empty() || ctx_.host == nullptr) return;
  const engine::Engine& eng = ctx_.host->engine();
  std::erase_if(joins_, [&](const PendingJoin& pj) {
    // Answered: the engine took a whole join answer, and the member at the
    // address is in the view (a late answer to an older round alone is not
    // this join's answer).
    std::size_t answered = 0;
    if (eng.joined()) {
      for (const engine::Member& m : eng.members()) {
        if (m.addr() == pj.addr && !m.is_tombstone() && m.name != eng.name()) ++answered;
      }
    }
    if (answered > 0) {
      spdlog::info("joined through {}: {} live member(s)", pj.shown, eng.num_live());
      Json j;
      j["joined"] = pj.shown;
      j["answered"] = answered;
      j["live_members"] = eng.num_live();
      pj.reply(ok_reply(std::move(j)));
      return true;
    }
    if (now_ns < pj.deadline_ns) return false;
    ++counters_.failed;
    spdlog::warn("join through {}: no answer within {} ms; the engine keeps retrying with backoff", pj.shown,
                 kJoinTimeoutNs / 1'000'000ULL);
    Json j;
    j["ok"] = false;
    j["error"] = "no member answered at " + pj.shown + " within " + std::to_string(kJoinTimeoutNs / 1'000'000ULL) +
                 (eng.joined() ? " ms (this node is joined through another seed)"
                               : " ms (still retrying in the background, with the configured seeds)");
    j["answered"] = 0;
    pj.reply(j.dump(-1, ' ', true, Json::error_handler_t::replace));
    return true;
  });
}

std::string ControlApi::handle_now(std::string_view line, std::uint64_t now_ns) {
  ++counters_.requests;
  const api::ParseResult parsed = api::parse_request(line);
  if (!parsed.request) {
    ++counters_.bad_requests;
    return api::error_reply(parsed.error, api::kStatusBadInput);
  }
  auto refuse = [this](const std::string& why) {
    ++counters_.failed;
    return api::error_reply(why);
  };
  auto need_engine = [this]() { return ctx_.host != nullptr; };

  // Key changes: a new snapshot with the changed keyring (key_ops.h).
  auto change_keys = [&](const cp::KeyChange& change) -> std::string {
    // Idempotent, node by node as cluster-wide: re-running a step that is
    // already done (installing a key present, removing one gone) succeeds.
    const std::string err =
        cp::apply_key_change(*ctx_.snapshots, ctx_.suite, change, /*idempotent=*/true, ctx_.keyring_saver);
    if (!err.empty()) return refuse(err);
    const std::uint64_t version = ctx_.snapshots->current().version;
    ++counters_.key_changes;
    spdlog::info(
        "key {} of {} through the control API", cp::key_op_name(change.op),
        crypto::key_id_text(change.op == cp::KeyChange::Op::kInstall ? crypto::derive_key_id(change.key) : change.id));
    Json j;
    j["snapshot"] = version;
    Json ids = Json::array();
    for (std::uint32_t id : ctx_.snapshots->current().keys.ids()) ids.push_back(crypto::key_id_text(id));
    j["keys"] = std::move(ids);
    j["primary"] = crypto::key_id_text(ctx_.snapshots->current().keys.primary()->id());
    return ok_reply(std::move(j));
  };

  return std::visit(
      [&](const auto& req) -> std::string {
        using T = std::decay_t<decltype(req)>;
        if constexpr (std::is_same_v<T, api::MembersRequest>) {
          if (!need_engine()) return refuse("membership is disabled on this gateway (membership.enabled: false)");
          const engine::Engine& eng = ctx_.host->engine();
          Json members = Json::array();
          for (const engine::Member& m : eng.members()) {
            if (req.state && *req.state != engine::status_name(m.status)) continue;
            if (req.tag && !has_tag(m, *req.tag)) continue;
            Json mj;
            mj["name"] = m.name;
            mj["address"] = base::ip_text(m.addr().ip);
            mj["port"] = m.addr().port;
            mj["state"] = engine::status_name(m.status);
            mj["incarnation"] = m.incarnation;
            mj["protocol_version"] = m.protocol_version();
            // What it runs ("" until it says: a member heard of only from
            // a peer before builds were announced).
            mj["build"] = m.build();
            mj["state_age_s"] = now_ns > m.state_change_ns ? (now_ns - m.state_change_ns) / 1'000'000'000ULL : 0;
            if (m.heard_ns != 0 && now_ns > m.heard_ns) mj["heard_s_ago"] = (now_ns - m.heard_ns) / 1'000'000'000ULL;
            if (m.probation) mj["probation"] = true;
            Json tags = Json::object();
            for (const auto& t : m.tags()) tags[t.key] = t.value;
            mj["tags"] = std::move(tags);
            if (m.name == eng.name()) {
              mj["self"] = true;
            } else if (const auto k = ctx_.host->sender_key(m.addr())) {
              mj["key_id"] = crypto::key_id_text(*k);
            }
            members.push_back(std::move(mj));
          }
          Json j;
          j["node"] = eng.name();
          j["incarnation"] = eng.incarnation();
          j["live_members"] = eng.num_live();
          j["health_score"] = eng.health_score();
          j["members"] = std::move(members);
          return ok_reply(std::move(j));
        } else if constexpr (std::is_same_v<T, api::StatsRequest>) {
          return "{\"ok\":true,\"stats\":" + ctx_.stats_json() + "}";
        } else if constexpr (std::is_same_v<T, api::KeysListRequest>) {
          const crypto::Keyring& ring = ctx_.snapshots->current().keys;
          const crypto::Key* primary = ring.primary();
          std::map<std::uint32_t, std::uint64_t> using_key;
          std::uint64_t live = 0;
          std::uint64_t unknown = 0;
          if (ctx_.host != nullptr) {
            const engine::Engine& eng = ctx_.host->engine();
            for (const engine::Member& m : eng.members()) {
              if (m.is_tombstone()) continue;
              ++live;
              if (m.name == eng.name()) {
                if (primary != nullptr) ++using_key[primary->id()];
              } else if (const auto k = ctx_.host->sender_key(m.addr())) {
                ++using_key[*k];
              } else {
                ++unknown;
              }
            }
          }
          Json keys = Json::array();
          for (std::uint32_t id : ring.ids()) {
            Json kj;
            kj["id"] = crypto::key_id_text(id);
            kj["primary"] = primary != nullptr && primary->id() == id;
            kj["suite"] = suite_name(ring.find(id)->suite());
            kj["members_using"] = using_key[id];
            keys.push_back(std::move(kj));
          }
          Json j;
          j["keys"] = std::move(keys);
          j["live_members"] = live;
          // Live members we have not heard from since the start (or since
          // the sender table was reset): their key is not known yet.
          j["members_key_unknown"] = unknown;
          return ok_reply(std::move(j));
        } else if constexpr (std::is_same_v<T, api::KeysInstallRequest>) {
          cp::KeyChange c;
          c.op = cp::KeyChange::Op::kInstall;
          std::copy(req.key.begin(), req.key.end(), c.key.begin());
          c.primary = req.primary;
          return change_keys(c);
        } else if constexpr (std::is_same_v<T, api::KeysUseRequest>) {
          cp::KeyChange c;
          c.op = cp::KeyChange::Op::kUse;
          c.id = req.id;
          return change_keys(c);
        } else if constexpr (std::is_same_v<T, api::KeysRemoveRequest>) {
          cp::KeyChange c;
          c.op = cp::KeyChange::Op::kRemove;
          c.id = req.id;
          return change_keys(c);
        } else if constexpr (std::is_same_v<T, api::JoinRequest>) {
          return refuse("join is answered by start_join");  // handle() never gets here
        } else if constexpr (std::is_same_v<T, api::LeaveRequest>) {
          spdlog::info("leave requested through the control API");
          ctx_.request_stop();
          Json j;
          j["leaving"] = true;
          return ok_reply(std::move(j));
        } else if constexpr (std::is_same_v<T, api::TagsSetRequest> || std::is_same_v<T, api::TagsUnsetRequest>) {
          if (!need_engine()) return refuse("membership is disabled on this gateway (membership.enabled: false)");
          engine::Engine& eng = ctx_.host->engine();
          std::vector<engine::Tag> tags;
          if (const engine::Member* self = eng.member(eng.name())) tags = self->tags();
          if constexpr (std::is_same_v<T, api::TagsSetRequest>) {
            for (const auto& kv : req.tags) {
              const std::string& k = kv.first;
              const std::string& v = kv.second;
              auto it = std::find_if(tags.begin(), tags.end(), [&k](const engine::Tag& t) { return t.key == k; });
              if (it != tags.end()) {
                it->value = v;
              } else {
                tags.push_back({k, v});
              }
            }
          } else {
            for (const std::string& k : req.keys) {
              std::erase_if(tags, [&](const engine::Tag& t) { return t.key == k; });
            }
          }
          std::size_t bytes = 0;
          for (const engine::Tag& t : tags) bytes += t.key.size() + t.value.size();
          if (bytes > eng.config().max_tag_bytes) {
            return refuse("tags exceed " + std::to_string(eng.config().max_tag_bytes) + " bytes in all");
          }
          // Saved first (control.state_dir): tags a restart would lose are
          // refused, as key changes are.
          if (ctx_.save_tags) {
            if (const std::string err = ctx_.save_tags(tags); !err.empty()) {
              return refuse("tags not changed: they could not be saved: " + err);
            }
          }
          if (!eng.set_tags(tags, now_ns)) {
            return refuse("tags exceed " + std::to_string(eng.config().max_tag_bytes) + " bytes in all");
          }
          spdlog::info("tags changed through the control API; now incarnation {}", eng.incarnation());
          Json tj = Json::object();
          for (const auto& t : tags) tj[t.key] = t.value;
          Json j;
          j["tags"] = std::move(tj);
          j["incarnation"] = eng.incarnation();
          return ok_reply(std::move(j));
        } else if constexpr (std::is_same_v<T, api::InfoRequest>) {
          Json j = ctx_.info_json ? Json::parse(ctx_.info_json(), nullptr, false) : Json::object();
          if (!j.is_object()) j = Json::object();
          return ok_reply(std::move(j));
        } else if constexpr (std::is_same_v<T, api::ForceLeaveRequest>) {
          if (!need_engine()) return refuse("membership is disabled on this gateway (membership.enabled: false)");
          engine::Engine& eng = ctx_.host->engine();
          const engine::Member* m = eng.member(req.node);
          if (m == nullptr) return refuse("no member named '" + req.node + "' (gossipctl members)");
          if (req.node == eng.name()) return refuse("this is our own name: use 'gossipctl leave'");
          if (m->status == engine::MemberStatus::kLeft) {
            Json j;
            j["node"] = req.node;
            j["state"] = "left";
            j["changed"] = false;
            return ok_reply(std::move(j));  // already left: done
          }
          if (m->status != engine::MemberStatus::kDead) {
            return refuse("member '" + req.node + "' is " + engine::status_name(m->status) +
                          ": only a failed member can be force-left (a live one would refute it)");
          }
          // Its leave, at the incarnation it died with, as if it had said
          // so itself: the engine marks it left and gossips the Leave; left
          // tombstones travel in syncs, so a sync cannot bring it back, and
          // only a restart of the member (a newer incarnation) can.
          const std::uint64_t incarnation = m->incarnation;
          eng.handle(eng.config().addr, engine::Compound{engine::Leave{incarnation, req.node}}, now_ns);
          const engine::Member* after = eng.member(req.node);
          if (after == nullptr || after->status != engine::MemberStatus::kLeft) {
            return refuse("member '" + req.node + "' could not be marked left");
          }
          spdlog::info("force-leave of {} (incarnation {}) through the control API", req.node, incarnation);
          Json j;
          j["node"] = req.node;
          j["state"] = "left";
          j["changed"] = true;
          return ok_reply(std::move(j));
        } else if constexpr (std::is_same_v<T, api::MonitorRequest>) {
          if (ctx_.logs == nullptr) return refuse("no log buffer on this gateway");
          constexpr std::size_t kMaxLines = 256;
          std::uint64_t next = 0;
          const auto lines = ctx_.logs->since(req.since, spdlog::level::from_str(req.level), kMaxLines, &next);
          Json arr = Json::array();
          for (const auto& l : lines) {
            arr.push_back(Json{{"seq", l.seq},
                               {"level", std::string(spdlog::level::to_string_view(l.level).data(),
                                                     spdlog::level::to_string_view(l.level).size())},
                               {"text", l.text}});
          }
          Json j;
          j["next"] = next;
          j["lines"] = std::move(arr);
          return ok_reply(std::move(j));
        } else if constexpr (std::is_same_v<T, api::LogLevelRequest>) {
          spdlog::set_level(spdlog::level::from_str(req.level));
          spdlog::info("log level set to {} through the control API", req.level);
          Json j;
          j["level"] = req.level;
          return ok_reply(std::move(j));
        }
      },
      *parsed.request);
}

}  // namespace gw::cp
