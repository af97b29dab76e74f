#include "control/host/engine_host.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>
#include <span>
#include <variant>

#include "control/codec.h"
#include "crypto/datagram.h"

namespace gw::cp {

EngineHost::EngineHost(Options options, dp::DatagramSink& sink, std::uint64_t now_ns)
    : options_(std::move(options)),
      sink_(sink),
      shaper_(options_.shaper, sink_, now_ns),
      engine_(std::make_unique<engine::Engine>(options_.engine, options_.rng_seed, now_ns)),
      key_change_(
          {options_.snapshots, options_.keys, options_.suite, options_.started_unix_ns, now_ns, options_.operator_key,
           options_.cluster_id, options_.keyring_saver},
          *engine_,
          [this](const engine::Address& to, std::span<const std::uint8_t> plain, std::uint64_t now,
                 std::uint32_t unix_s) {
            return seal_and_submit(to, crypto::PriorityClass::kUrgent, plain, now, unix_s) == Sent::kQueued;
          },
          counters_) {
  // Our sync cookies' secret (no reflection, docs/membership.md): random,
  // not derived from the seed (which the engine would do), since a seed
  // made of clocks may be guessed and a cookie then forged.
  std::random_device rd;
  const auto word = [&rd] { return (std::uint64_t{rd()} << 32) ^ rd(); };
  engine_->set_cookie_key(word(), word());
}

void EngineHost::start(std::uint64_t now_ns, std::uint32_t unix_s) {
  seeds_ = options_.seeds;
  // Also without seeds: the engine then counts itself joined (the first
  // member has nobody to ask), which `info` and the stats report.
  engine_->join(seeds_, now_ns);
  if (!seeds_.empty()) spdlog::info("joining through {} seed(s)", seeds_.size());
  flush(now_ns, unix_s);
}

void EngineHost::join(const engine::Address& through, std::uint64_t now_ns) {
  const bool configured = std::find(options_.seeds.begin(), options_.seeds.end(), through) != options_.seeds.end();
  if (!configured && std::find(manual_seeds_.begin(), manual_seeds_.end(), through) == manual_seeds_.end()) {
    if (manual_seeds_.size() >= kMaxManualSeeds) manual_seeds_.erase(manual_seeds_.begin());
    manual_seeds_.push_back(through);
  }
  // The engine asks at most kMaxSeeds: the manual ones always, the
  // configured ones in their order as far as room is left.
  const std::size_t room = engine::Engine::kMaxSeeds - manual_seeds_.size();
  seeds_.assign(options_.seeds.begin(),
                options_.seeds.begin() + static_cast<std::ptrdiff_t>(std::min(room, options_.seeds.size())));
  seeds_.insert(seeds_.end(), manual_seeds_.begin(), manual_seeds_.end());
  engine_->join(seeds_, now_ns);
  join_rounds_logged_ = 1;  // a new first round
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
  if (!engine::class_fits(h.cls, r.messages)) {
    ++counters.class_drop_mismatch[static_cast<std::size_t>(h.cls)];
    return;
  }
  for (const engine::Message& m : r.messages) {
    ++counters.msgs[m.index()];
    if (const auto* ack = std::get_if<engine::Ack>(&m)) note_ack(*ack, now_ns);
  }
  engine::Address from = to_engine_address(h.from);
  if (sender_keys_.note(from, h.key_id)) ++counters_.sender_keys_reset;
  if (r.messages.empty()) {
    // No membership messages: a key command or result, or nothing we know.
    if (r.key_control) {
      key_change_.on_key_control(*r.key_control, from);
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
    spdlog::warn("join: no answer from {} seed(s) after {} round(s); retrying with backoff", seeds_.size(),
                 join_rounds_logged_ - 1);
  }
  // Failed members given up after reconnect_timeout: a split that long does
  // not heal by itself (the operator joins the sides again).
  if (const std::uint64_t expired = engine_->counters().reconnect_expired; expired > reconnects_expired_logged_) {
    spdlog::warn("membership: gave up reconnecting to {} failed member(s) after membership.reconnect_timeout_s "
                 "({} in all): a partition that long does not heal by itself; join the sides with gossipctl join",
                 expired - reconnects_expired_logged_, expired);
    reconnects_expired_logged_ = expired;
  }
  flush(now_ns, unix_s);
  key_change_.note_time(unix_s, now_ns);
  if (!key_change_.idle()) key_change_.tick(now_ns, unix_s);
  shaper_.release(now_ns);
  engine_->take_events(drained_events_);
  for (engine::MemberEvent& e : drained_events_) events_.record(std::move(e));
}

void EngineHost::note_ack(const engine::Ack& ack, std::uint64_t now_ns) {
  // The ack of one of our direct pings: its round trip.
  if (pings_in_flight_.empty()) return;
  const auto it = std::find_if(pings_in_flight_.begin(), pings_in_flight_.end(),
                               [&](const auto& p) { return p.first == ack.seq_no; });
  if (it == pings_in_flight_.end()) return;
  probe_rtt_.add(now_ns > it->second ? (now_ns - it->second) / 1000 : 0);
  pings_in_flight_.erase(it);
}

EngineHost::Sent EngineHost::seal_and_submit(const engine::Address& to, crypto::PriorityClass cls,
                                             std::span<const std::uint8_t> plain, std::uint64_t now_ns,
                                             std::uint32_t unix_s) {
  const crypto::Key* key = keyring().primary();
  if (key == nullptr) {
    ++counters_.drop_no_primary;
    return Sent::kNotSealed;
  }
  // Bound to its receiver (issue 17): only `to` can open it.
  const crypto::SealParams params{options_.cluster_id, cls, unix_s,
                                  crypto::receiver_of(to.ip.data(), to.ip.size(), to.port)};
  // Sealed straight into the buffer the shaper will queue.
  SealedBytes buffer = sink_.take(crypto::kHeaderBytes + plain.size() + crypto::kTagBytes);
  const std::size_t n =
      crypto::seal_datagram(*key, params, nonces_, plain.data(), plain.size(), buffer.data(), buffer.size());
  if (n == 0) {
    ++counters_.drop_encode;
    sink_.recycle(buffer);
    return Sent::kNotSealed;
  }
  ++counters_.sealed;
  // The shaper counts what it defers and drops, by class.
  if (shaper_.submit(to_endpoint(to), cls, std::move(buffer), n, now_ns)) return Sent::kQueued;
  sink_.recycle(buffer);  // refused: still ours
  return Sent::kDropped;
}

void EngineHost::begin_leave(std::uint64_t now_ns, std::uint32_t unix_s) {
  engine_->leave(now_ns);
  flush(now_ns, unix_s);
}

void EngineHost::flush(std::uint64_t now_ns, std::uint32_t unix_s) {
  engine_->take_outbox(outbox_);
  const std::vector<engine::Outgoing>& out = outbox_;
  if (out.empty()) return;
  // No key to seal with: every datagram is dropped, counted, before it is
  // encoded.
  if (keyring().primary() == nullptr) {
    counters_.drop_no_primary += out.size();
    return;
  }
  for (const engine::Outgoing& o : out) {
    plain_.clear();
    if (encode_append(o.messages, plain_) == 0 || plain_.size() > crypto::kMaxPlaintextBytes) {
      ++counters_.drop_encode;
      continue;
    }
    if (seal_and_submit(o.to, o.priority, plain_, now_ns, unix_s) == Sent::kNotSealed) {
      continue;
    }
    // Our direct pings, sealed: their round trips are timed from now.
    for (const engine::Message& m : o.messages) {
      if (const auto* ping = std::get_if<engine::Ping>(&m)) {
        if (pings_in_flight_.size() >= kPingsInFlight) {
          pings_in_flight_.pop_front();
          ++probe_rtt_.unmatched;
        }
        pings_in_flight_.emplace_back(ping->seq_no, now_ns);
      }
    }
  }
}

}  // namespace gw::cp
