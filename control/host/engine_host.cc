#include "control/host/engine_host.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <span>
#include <variant>

#include "control/codec.h"
#include "crypto/datagram.h"

namespace gw::cp {

engine::Address to_engine_address(const dp::Endpoint& e) {
  engine::Address a;
  a.ip.assign(e.ip.begin(), e.ip.begin() + e.ip_len);
  a.port = e.port;
  return a;
}

dp::Endpoint to_endpoint(const engine::Address& a) {
  dp::Endpoint e;
  const std::size_t n = a.ip.size() <= e.ip.size() ? a.ip.size() : 0;
  std::copy(a.ip.begin(), a.ip.begin() + static_cast<long>(n), e.ip.begin());
  e.ip_len = static_cast<std::uint8_t>(n);
  e.port = a.port;
  return e;
}

EngineHost::EngineHost(Options options, dp::DatagramSink& sink, std::uint64_t now_ns)
    : options_(std::move(options)),
      shaper_(options_.shaper, sink, now_ns),
      engine_(std::make_unique<engine::Engine>(options_.engine, options_.rng_seed, now_ns)),
      sealed_(crypto::kHeaderBytes + 0xFFFF) {
  // Request ids are Unix ns when issued (strictly increasing): they differ
  // across restarts, so a retry is never mistaken for a command from an
  // earlier run, and a receiver can tell a command older than itself.
  next_request_id_ = options_.started_unix_ns;
}

void EngineHost::start(std::uint64_t now_ns, std::uint32_t unix_s) {
  if (!options_.seeds.empty()) {
    engine_->join(options_.seeds, now_ns);
    spdlog::info("joining through {} seed(s)", options_.seeds.size());
  }
  flush(now_ns, unix_s);
}

void EngineHost::on_payload(const dp::Handoff& h, std::uint64_t now_ns, ControlCounters& counters) {
  const DecodeResult r = decode(std::span<const std::uint8_t>(h.data, h.len));
  if (!r.ok()) {
    // Authenticated but not understood: a peer's bug or a newer peer.
    if (r.error == DecodeError::kEmptyMessage) {
      ++counters.msg_unknown;
    } else {
      ++counters.msg_decode_error;
    }
    return;
  }
  // Class must match content (issue 17): a payload claiming a more urgent
  // class than its messages justify was served ahead of real urgent
  // traffic; drop it, counted, before it reaches the engine.
  if (!engine::class_fits(static_cast<engine::PriorityClass>(h.cls), r.messages)) {
    ++counters.class_drop_mismatch[static_cast<std::size_t>(h.cls)];
    return;
  }
  for (const engine::Message& m : r.messages) {
    ++counters.msgs[m.index()];
    // The ack of one of our direct pings: its round trip.
    if (const auto* ack = std::get_if<engine::Ack>(&m); ack != nullptr && !pings_in_flight_.empty()) {
      const auto it = std::find_if(pings_in_flight_.begin(), pings_in_flight_.end(),
                                   [&](const auto& p) { return p.first == ack->seq_no; });
      if (it != pings_in_flight_.end()) {
        probe_rtt_.add(now_ns > it->second ? (now_ns - it->second) / 1000 : 0);
        pings_in_flight_.erase(it);
      }
    }
  }
  engine::Address from = to_engine_address(h.from);
  note_sender_key(from, h.key_id);
  if (r.messages.empty()) {
    // No membership messages: a key command or result, or nothing we know.
    if (r.key_control) {
      on_key_control(*r.key_control, from, now_ns);
    } else {
      ++counters.msg_unknown;
    }
    return;
  }
  engine_->handle(from, r.messages, now_ns);
}

void EngineHost::poll(std::uint64_t now_ns, std::uint32_t unix_s) {
  if (now_ns >= engine_->next_deadline()) engine_->tick(now_ns);
  // A join round that no seed answered: say so (the engine retries for ever,
  // backing off to join_retry_max_ns, and counts join_retries).
  if (!engine_->joined() && engine_->join_attempts() > join_rounds_logged_) {
    join_rounds_logged_ = engine_->join_attempts();
    spdlog::warn("join: no answer from {} seed(s) after {} round(s); retrying with backoff",
                 options_.seeds.size(), join_rounds_logged_ - 1);
  }
  flush(now_ns, unix_s);
  if (!key_ops_.empty() || !key_results_out_.empty()) key_ops_tick(now_ns, unix_s);
  shaper_.release(now_ns);
  drain_events();
}

bool EngineHost::send_sealed(const engine::Address& to, crypto::PriorityClass cls,
                             std::span<const std::uint8_t> plain, std::uint64_t now_ns, std::uint32_t unix_s) {
  const crypto::Key* key = keyring().primary();
  if (key == nullptr) {
    ++counters_.drop_no_primary;
    return false;
  }
  // Bound to its receiver (issue 17): only `to` can open it.
  const crypto::SealParams params{options_.cluster_id, cls, unix_s, crypto::receiver_of(to.ip.data(), to.ip.size(), to.port)};
  const std::size_t n =
      crypto::seal_datagram(*key, params, nonces_, plain.data(), plain.size(), sealed_.data(), sealed_.size());
  if (n == 0) {
    ++counters_.drop_encode;
    return false;
  }
  ++counters_.sealed;
  return shaper_.submit(to_endpoint(to), cls, sealed_.data(), n, now_ns);
}

namespace {

std::string key_id_hex(const KeyChange& change) {
  char b[9];
  std::snprintf(b, sizeof b, "%08x",
                change.op == KeyChange::Op::kInstall ? crypto::derive_key_id(change.key) : change.id);
  return b;
}

}  // namespace

std::string EngineHost::start_cluster_key_change(const KeyChange& change, std::uint64_t now_ns, std::uint32_t unix_s,
                                                 KeyOpDone done) {
  if (options_.snapshots == nullptr) return "key changes are not available on this gateway";
  if (key_ops_.size() >= kMaxKeyOpsInFlight) return "too many cluster-wide key changes in flight; retry shortly";
  if (change.op == KeyChange::Op::kInstall && change.primary) {
    return "install and use are separate cluster-wide steps: install everywhere first, then use";
  }
  const std::string err = apply_key_change(*options_.snapshots, options_.suite, change, /*idempotent=*/true);
  if (!err.empty()) return err;

  KeyOp op;
  next_request_id_ = std::max<std::uint64_t>(next_request_id_ + 1, std::uint64_t{unix_s} * 1'000'000'000ULL);
  op.command.request_id = next_request_id_;
  op.command.change = change;
  op.command.origin = engine_->name();
  for (const engine::Member& m : engine_->members()) {
    if (m.is_tombstone() || m.name == engine_->name() || m.addr().empty()) continue;
    op.targets.emplace(m.name, KeyOpTarget{m.addr(), false});
  }
  op.outcome.request_id = op.command.request_id;
  op.outcome.targets = op.targets.size();
  op.next_send_ns = now_ns;
  op.deadline_ns = now_ns + kKeyOpTimeoutNs;
  op.done = std::move(done);
  spdlog::info("cluster-wide key {} of {} to {} member(s) (request {:016x})", key_op_name(change.op),
               key_id_hex(change), op.targets.size(), op.command.request_id);
  key_ops_.push_back(std::move(op));
  key_ops_tick(now_ns, unix_s);
  return {};
}

void EngineHost::on_key_control(const KeyControl& kc, const engine::Address& from, std::uint64_t now_ns) {
  (void)now_ns;
  if (kc.result) {
    ++counters_.key_results_received;
    const KeyResultMsg& r = *kc.result;
    for (KeyOp& op : key_ops_) {
      if (op.command.request_id != r.request_id) continue;
      const auto t = op.targets.find(r.node);
      if (t == op.targets.end() || t->second.answered) break;
      t->second.answered = true;
      if (r.ok) {
        op.outcome.ok.push_back(r.node);
        if (op.command.change.op == KeyChange::Op::kList) op.outcome.keyrings[r.node] = {r.key_ids, r.primary};
      } else {
        op.outcome.refused.emplace_back(r.node, r.error);
      }
      return;
    }
    ++counters_.key_results_unsolicited;
    return;
  }
  const KeyCommandMsg& c = *kc.command;
  if (c.origin == engine_->name()) {
    ++counters_.key_results_unsolicited;  // our own command, reflected back
    return;
  }
  // Only the live member that issued a command may send it: anyone else
  // holding a cluster key (or replaying a member's datagram from another
  // address) gets nothing applied and no answer.
  const engine::Member* origin = engine_->member(c.origin);
  if (origin == nullptr || origin->is_tombstone() || origin->addr() != from) {
    ++counters_.key_commands_not_member;
    spdlog::warn("key {} of {} claimed by '{}' from a sender that is not that live member: ignored",
                 key_op_name(c.change.op), key_id_hex(c.change), c.origin);
    return;
  }
  KeyResultMsg answer{c.request_id, engine_->name(), true, {}, {}, 0};
  // A list changes nothing: answer with our keyring, every time it is asked.
  if (c.change.op == KeyChange::Op::kList) {
    const crypto::Keyring& ring = keyring();
    answer.key_ids = ring.ids();
    answer.primary = ring.primary() != nullptr ? ring.primary()->id() : 0;
    key_results_out_.emplace_back(from, std::move(answer));
    return;
  }
  const auto seen = std::find_if(applied_commands_.begin(), applied_commands_.end(), [&](const AppliedCommand& a) {
    return a.origin == c.origin && a.request_id == c.request_id;
  });
  const auto newest = newest_command_.find(c.origin);
  // Issued before we started, or older than one already applied and not a
  // remembered retry: a replay. Refused (answered, so a real origin learns why).
  // Whole seconds: the origin stamps ids from the second its host clock
  // gives (a command issued in the second we started is not held against it).
  constexpr std::uint64_t kSecondNs = 1'000'000'000ULL;
  const bool before_start = c.request_id / kSecondNs < options_.started_unix_ns / kSecondNs;
  if (seen == applied_commands_.end() &&
      (before_start || (newest != newest_command_.end() && c.request_id <= newest->second))) {
    ++counters_.key_commands_stale;
    spdlog::warn("key {} of {} from member {} refused: issued before this node started or already superseded "
                 "(request {:016x})",
                 key_op_name(c.change.op), key_id_hex(c.change), c.origin, c.request_id);
    key_results_out_.emplace_back(from, KeyResultMsg{c.request_id, engine_->name(), false,
                                                     "stale command (issued before this node started, or replayed)", {}, 0});
    return;
  }
  if (seen != applied_commands_.end()) {
    ++counters_.key_commands_repeated;
    answer.ok = seen->ok;
    answer.error = seen->error;
  } else {
    answer.error = options_.snapshots == nullptr
                       ? std::string("key changes are not available on this gateway")
                       : apply_key_change(*options_.snapshots, options_.suite, c.change, /*idempotent=*/true);
    answer.ok = answer.error.empty();
    if (answer.ok) {
      ++counters_.key_commands_applied;
      spdlog::info("key {} of {} applied at the request of member {} (request {:016x})", key_op_name(c.change.op),
                   key_id_hex(c.change), c.origin, c.request_id);
    } else {
      ++counters_.key_commands_refused;
      spdlog::warn("key {} of {} requested by member {} refused: {}", key_op_name(c.change.op), key_id_hex(c.change),
                   c.origin, answer.error);
    }
    if (applied_commands_.size() == kRememberedCommands) applied_commands_.pop_front();
    applied_commands_.push_back({c.origin, c.request_id, answer.ok, answer.error});
    if (newest_command_.size() >= kMaxOrigins && newest == newest_command_.end()) newest_command_.clear();
    std::uint64_t& n = newest_command_[c.origin];
    n = std::max(n, c.request_id);
  }
  key_results_out_.emplace_back(from, std::move(answer));
}

void EngineHost::key_ops_tick(std::uint64_t now_ns, std::uint32_t unix_s) {
  for (const auto& [to, result] : key_results_out_) {
    (void)send_sealed(to, crypto::PriorityClass::kUrgent, encode_key_result(result), now_ns, unix_s);
  }
  key_results_out_.clear();
  for (auto it = key_ops_.begin(); it != key_ops_.end();) {
    KeyOp& op = *it;
    const bool all = op.outcome.ok.size() + op.outcome.refused.size() == op.targets.size();
    if (all || now_ns >= op.deadline_ns) {
      for (const auto& [name, t] : op.targets) {
        if (!t.answered) op.outcome.no_answer.push_back(name);
      }
      spdlog::info("cluster-wide key {}: {} ok, {} refused, {} no answer", key_op_name(op.command.change.op),
                   op.outcome.ok.size(), op.outcome.refused.size(), op.outcome.no_answer.size());
      if (op.done) op.done(op.outcome);
      it = key_ops_.erase(it);
      continue;
    }
    if (now_ns >= op.next_send_ns) {
      const std::vector<std::uint8_t> plain = encode_key_command(op.command);
      for (const auto& [name, t] : op.targets) {
        if (t.answered) continue;
        if (send_sealed(t.addr, crypto::PriorityClass::kUrgent, plain, now_ns, unix_s)) ++counters_.key_commands_sent;
      }
      op.next_send_ns = now_ns + kKeyOpRetryNs;
    }
    ++it;
  }
}

void EngineHost::note_sender_key(const engine::Address& from, std::uint32_t key_id) {
  const auto it = sender_keys_.find(from);
  if (it != sender_keys_.end()) {
    it->second = key_id;
    return;
  }
  // Bounded: authenticated senders only, but a cluster can have many; forget
  // all and relearn rather than grow without limit.
  if (sender_keys_.size() >= kMaxSenderKeys) {
    sender_keys_.clear();
    ++counters_.sender_keys_reset;
  }
  sender_keys_.emplace(from, key_id);
}

std::optional<std::uint32_t> EngineHost::sender_key(const engine::Address& a) const {
  const auto it = sender_keys_.find(a);
  if (it == sender_keys_.end()) return std::nullopt;
  return it->second;
}

const char* event_kind_name(engine::EventKind k) {
  switch (k) {
    case engine::EventKind::kJoin: return "join";
    case engine::EventKind::kLeave: return "leave";
    case engine::EventKind::kFailed: return "failed";
    case engine::EventKind::kUpdate: return "update";
  }
  return "unknown";
}

void EngineHost::drain_events() {
  for (engine::MemberEvent& e : engine_->take_events()) {
    ++event_counts_[static_cast<std::size_t>(e.kind)];
    const bool loud = e.kind != engine::EventKind::kUpdate;
    spdlog::log(loud ? spdlog::level::info : spdlog::level::debug, "member {} {} (incarnation {})", e.node,
                event_kind_name(e.kind), e.incarnation);
    if (event_listener_) event_listener_(e);
    if (recent_.size() == kRecentEvents) recent_.pop_front();
    recent_.push_back(std::move(e));
  }
}

void EngineHost::begin_leave(std::uint64_t now_ns, std::uint32_t unix_s) {
  engine_->leave(now_ns);
  flush(now_ns, unix_s);
}

void EngineHost::flush(std::uint64_t now_ns, std::uint32_t unix_s) {
  std::vector<engine::Outgoing> out = engine_->take_outbox();
  if (out.empty()) return;
  const crypto::Key* key = keyring().primary();
  for (const engine::Outgoing& o : out) {
    if (key == nullptr) {
      ++counters_.drop_no_primary;
      continue;
    }
    plain_.clear();
    if (encode_append(o.messages, plain_) == 0 || plain_.size() > crypto::kMaxPlaintextBytes) {
      ++counters_.drop_encode;
      continue;
    }
    const crypto::SealParams params{options_.cluster_id, static_cast<crypto::PriorityClass>(o.priority), unix_s,
                                    crypto::receiver_of(o.to.ip.data(), o.to.ip.size(), o.to.port)};
    const std::size_t n =
        crypto::seal_datagram(*key, params, nonces_, plain_.data(), plain_.size(), sealed_.data(), sealed_.size());
    if (n == 0) {
      ++counters_.drop_encode;
      continue;
    }
    ++counters_.sealed;
    for (const engine::Message& m : o.messages) {
      if (const auto* ping = std::get_if<engine::Ping>(&m)) {
        if (pings_in_flight_.size() >= kPingsInFlight) {
          pings_in_flight_.pop_front();
          ++probe_rtt_.unmatched;
        }
        pings_in_flight_.emplace_back(ping->seq_no, now_ns);
      }
    }
    // The shaper counts what it defers and drops, by class.
    (void)shaper_.submit(to_endpoint(o.to), params.cls, sealed_.data(), n, now_ns);
  }
}

}  // namespace gw::cp
