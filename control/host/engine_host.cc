#include "control/host/engine_host.h"

#include <spdlog/spdlog.h>

#include <span>

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
      sealed_(crypto::kHeaderBytes + 0xFFFF) {}

void EngineHost::start(std::uint64_t now_ns, std::uint32_t unix_s) {
  if (!options_.seeds.empty()) engine_->join(options_.seeds, now_ns);
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
  for (const engine::Message& m : r.messages) ++counters.msgs[m.index()];
  engine_->handle(to_engine_address(h.from), r.messages, now_ns);
}

void EngineHost::poll(std::uint64_t now_ns, std::uint32_t unix_s) {
  if (now_ns >= engine_->next_deadline()) engine_->tick(now_ns);
  flush(now_ns, unix_s);
  shaper_.release(now_ns);
  drain_events();
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
    const bool loud = e.kind == engine::EventKind::kFailed || e.kind == engine::EventKind::kLeave;
    spdlog::log(loud ? spdlog::level::info : spdlog::level::debug, "member {} {} (incarnation {})", e.node,
                event_kind_name(e.kind), e.incarnation);
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
  const crypto::Key* key = options_.keys->primary();
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
    const crypto::SealParams params{options_.cluster_id, static_cast<crypto::PriorityClass>(o.priority), unix_s};
    const std::size_t n =
        crypto::seal_datagram(*key, params, nonces_, plain_.data(), plain_.size(), sealed_.data(), sealed_.size());
    if (n == 0) {
      ++counters_.drop_encode;
      continue;
    }
    ++counters_.sealed;
    // The shaper counts what it defers and drops, by class.
    (void)shaper_.submit(to_endpoint(o.to), params.cls, sealed_.data(), n, now_ns);
  }
}

}  // namespace gw::cp
