#include "control/host/key_change.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

#include "control/codec.h"
#include "control/host/key_ops.h"

namespace gw::cp {

namespace {

std::string key_id_hex(const KeyChange& change) {
  return crypto::key_id_text(change.op == KeyChange::Op::kInstall ? crypto::derive_key_id(change.key) : change.id);
}

}  // namespace

ClusterKeyChange::ClusterKeyChange(Options options, const engine::Engine& engine, Send send,
                                   KeyCommandCounters& counters)
    : options_(options), engine_(engine), send_(std::move(send)), counters_(counters) {
  // Request ids are Unix ns when issued (strictly increasing): they differ
  // across restarts, so a retry is never mistaken for a command from an
  // earlier run, and a receiver can tell a command older than itself.
  next_request_id_ = options_.started_unix_ns;
  start_unix_ns_ = options_.started_unix_ns;
}

void ClusterKeyChange::note_time(std::uint32_t unix_s, std::uint64_t now_ns) noexcept {
  last_unix_s_ = unix_s;
  if (options_.started_mono_ns == 0 || now_ns < options_.started_mono_ns) return;
  // Where the start instant lies on the wall clock now: a step of the clock
  // (two seconds or more: finer is the reading's rounding) moves it.
  const auto expected_s =
      static_cast<std::int64_t>((options_.started_unix_ns + (now_ns - options_.started_mono_ns)) / 1'000'000'000ULL);
  const std::int64_t step_s = static_cast<std::int64_t>(unix_s) - expected_s;
  if (step_s > -2 && step_s < 2) {
    start_unix_ns_ = options_.started_unix_ns;
    return;
  }
  const std::int64_t moved = static_cast<std::int64_t>(options_.started_unix_ns) + step_s * 1'000'000'000LL;
  start_unix_ns_ = moved > 0 ? static_cast<std::uint64_t>(moved) : 0;
}

std::string ClusterKeyChange::check_signature(const KeyChange& change, const Authorisation& auth) const {
  if (!options_.operator_key) {
    return "cluster-wide key changes need the operator signing key: set cluster.operator_public_key on every member "
           "(gossipctl operator-keygen) and sign the change (gossipctl keys ... --cluster --operator-key FILE)";
  }
  if (auth.signature == crypto::Signature{}) {
    return "not signed: cluster-wide key changes need the operator's signature (gossipctl keys ... --cluster "
           "--operator-key FILE)";
  }
  const std::vector<std::uint8_t> statement = key_command_statement(options_.cluster_id, change, auth.issued_unix_ns);
  if (!crypto::verify_operator_signature(*options_.operator_key, statement, auth.signature)) {
    return "the operator signature does not verify: not signed with the key cluster.operator_public_key names, or "
           "signed for another change or cluster";
  }
  return {};
}

std::string ClusterKeyChange::check_fresh(std::uint64_t issued) const {
  constexpr std::uint64_t kSecondNs = 1'000'000'000ULL;
  // Whole seconds: the operator stamps from its own clock.
  if (issued / kSecondNs < start_unix_ns_ / kSecondNs) {
    return "stale command (issued before this node started)";
  }
  if (last_unix_s_ != 0 && last_unix_s_ * kSecondNs > issued && last_unix_s_ * kSecondNs - issued > kMaxAgeNs) {
    return "stale command (issued more than " + std::to_string(kMaxAgeNs / kSecondNs) + " s ago; sign it again)";
  }
  if (issued <= newest_signed_ns_) return "stale command (not newer than the last signed key change applied)";
  return {};
}

std::string ClusterKeyChange::start(const KeyChange& change, const Authorisation& auth, std::uint64_t now_ns,
                                    std::uint32_t unix_s, Done done) {
  if (options_.snapshots == nullptr) return "key changes are not available on this gateway";
  if (ops_.size() >= kMaxInFlight) return "too many cluster-wide key changes in flight; retry shortly";
  if (change.op == KeyChange::Op::kInstall && change.primary) {
    return "install and use are separate cluster-wide steps: install everywhere first, then use";
  }
  last_unix_s_ = unix_s;
  if (change.op != KeyChange::Op::kList) {
    if (std::string why = check_signature(change, auth); !why.empty()) {
      ++counters_.key_commands_unsigned;
      return why;
    }
    if (std::string why = check_fresh(auth.issued_unix_ns); !why.empty()) {
      ++counters_.key_commands_stale;
      return why;
    }
  }
  const std::string err =
      apply_key_change(*options_.snapshots, options_.suite, change, /*idempotent=*/true, options_.saver);
  if (!err.empty()) return err;
  if (change.op != KeyChange::Op::kList) newest_signed_ns_ = auth.issued_unix_ns;

  Op op;
  next_request_id_ = std::max<std::uint64_t>(next_request_id_ + 1, std::uint64_t{unix_s} * 1'000'000'000ULL);
  op.command.request_id = next_request_id_;
  op.command.change = change;
  op.command.origin = engine_.name();
  if (change.op != KeyChange::Op::kList) {
    op.command.issued_unix_ns = auth.issued_unix_ns;
    op.command.signature = auth.signature;
  }
  for (const engine::Member& m : engine_.members()) {
    if (m.is_tombstone() || m.name == engine_.name() || m.addr().empty()) continue;
    op.targets.emplace(m.name, Target{m.addr(), false});
  }
  op.outcome.request_id = op.command.request_id;
  op.outcome.targets = op.targets.size();
  op.next_send_ns = now_ns;
  op.deadline_ns = now_ns + kTimeoutNs;
  op.done = std::move(done);
  spdlog::info("cluster-wide key {} of {} to {} member(s) (request {:016x})", key_op_name(change.op),
               key_id_hex(change), op.targets.size(), op.command.request_id);
  ops_.push_back(std::move(op));
  tick(now_ns, unix_s);
  return {};
}

void ClusterKeyChange::on_key_control(const KeyControl& kc, const engine::Address& from) {
  if (kc.result) {
    on_result(*kc.result);
  } else if (kc.command) {
    on_command(*kc.command, from);
  }
}

void ClusterKeyChange::on_result(const KeyResultMsg& r) {
  ++counters_.key_results_received;
  for (Op& op : ops_) {
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
}

void ClusterKeyChange::on_command(const KeyCommandMsg& c, const engine::Address& from) {
  if (c.origin == engine_.name()) {
    ++counters_.key_results_unsolicited;  // our own command, reflected back
    return;
  }
  // Only the live member that relays a command may send it: anyone else
  // (or a replay of a member's datagram from another address) gets nothing
  // applied and no answer. This decides only whom we answer: what a change
  // may do is the operator's signature's to decide, below.
  const engine::Member* origin = engine_.member(c.origin);
  if (origin == nullptr || origin->is_tombstone() || origin->addr() != from) {
    ++counters_.key_commands_not_member;
    spdlog::warn("key {} of {} claimed by '{}' from a sender that is not that live member: ignored",
                 key_op_name(c.change.op), key_id_hex(c.change), c.origin);
    return;
  }
  KeyResultMsg answer{c.request_id, engine_.name(), true, {}, {}, 0};
  // A list changes nothing: answer with our keyring, every time it is asked.
  if (c.change.op == KeyChange::Op::kList) {
    const crypto::Keyring& ring = keyring();
    answer.key_ids = ring.ids();
    answer.primary = ring.primary() != nullptr ? ring.primary()->id() : 0;
    results_out_.emplace_back(from, std::move(answer));
    return;
  }
  const auto refuse = [&](std::uint64_t& counter, const std::string& why) {
    ++counter;
    spdlog::warn("key {} of {} relayed by member {} refused: {} (request {:016x})", key_op_name(c.change.op),
                 key_id_hex(c.change), c.origin, why, c.request_id);
    results_out_.emplace_back(from, KeyResultMsg{c.request_id, engine_.name(), false, why, {}, 0});
  };
  // The operator's signature, before anything else about the change: the
  // cluster key alone (which the relaying member, or whoever spoofs it, has)
  // authorises nothing.
  const Authorisation auth{c.issued_unix_ns, c.signature};
  if (std::string why = check_signature(c.change, auth); !why.empty()) {
    refuse(counters_.key_commands_unsigned, why);
    return;
  }
  const auto seen = std::find_if(applied_commands_.begin(), applied_commands_.end(), [&](const AppliedCommand& a) {
    return a.origin == c.origin && a.request_id == c.request_id;
  });
  if (seen != applied_commands_.end()) {
    ++counters_.key_commands_repeated;
    answer.ok = seen->ok;
    answer.error = seen->error;
    results_out_.emplace_back(from, std::move(answer));
    return;
  }
  // Issued before we started, long ago, or not after the newest signed
  // change applied, and not a remembered retry: a replay. Refused (answered,
  // so a real origin learns why).
  if (std::string why = check_fresh(c.issued_unix_ns); !why.empty()) {
    refuse(counters_.key_commands_stale, why);
    return;
  }
  answer.error = options_.snapshots == nullptr ? std::string("key changes are not available on this gateway")
                                               : apply_key_change(*options_.snapshots, options_.suite, c.change,
                                                                  /*idempotent=*/true, options_.saver);
  answer.ok = answer.error.empty();
  if (answer.ok) {
    ++counters_.key_commands_applied;
    newest_signed_ns_ = std::max(newest_signed_ns_, c.issued_unix_ns);
    spdlog::info(
        "key {} of {} applied: signed by the operator key (issued {} ns), relayed by member {} (request {:016x})",
        key_op_name(c.change.op), key_id_hex(c.change), c.issued_unix_ns, c.origin, c.request_id);
  } else {
    ++counters_.key_commands_refused;
    spdlog::warn("key {} of {} relayed by member {} refused: {}", key_op_name(c.change.op), key_id_hex(c.change),
                 c.origin, answer.error);
  }
  if (applied_commands_.size() == kRememberedCommands) applied_commands_.pop_front();
  applied_commands_.push_back({c.origin, c.request_id, answer.ok, answer.error});
  results_out_.emplace_back(from, std::move(answer));
}

void ClusterKeyChange::tick(std::uint64_t now_ns, std::uint32_t unix_s) {
  last_unix_s_ = unix_s;
  for (const auto& [to, result] : results_out_) (void)send_(to, encode_key_result(result), now_ns, unix_s);
  results_out_.clear();
  for (auto it = ops_.begin(); it != ops_.end();) {
    Op& op = *it;
    const bool all = op.outcome.ok.size() + op.outcome.refused.size() == op.targets.size();
    if (all || now_ns >= op.deadline_ns) {
      for (const auto& [name, t] : op.targets) {
        if (!t.answered) op.outcome.no_answer.push_back(name);
      }
      spdlog::info("cluster-wide key {}: {} ok, {} refused, {} no answer", key_op_name(op.command.change.op),
                   op.outcome.ok.size(), op.outcome.refused.size(), op.outcome.no_answer.size());
      if (op.done) op.done(op.outcome);
      it = ops_.erase(it);
      continue;
    }
    if (now_ns >= op.next_send_ns) {
      const std::vector<std::uint8_t> plain = encode_key_command(op.command);
      for (const auto& [name, t] : op.targets) {
        if (t.answered) continue;
        if (send_(t.addr, plain, now_ns, unix_s)) ++counters_.key_commands_sent;
      }
      op.next_send_ns = now_ns + kRetryNs;
    }
    ++it;
  }
}

}  // namespace gw::cp
