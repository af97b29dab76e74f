// Hosts the membership engine on the control lcore: decodes what the workers
// opened, feeds the engine, ticks its timers, and seals what it sends.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "control/engine/engine.h"
#include "control/host/egress_shaper.h"
#include "control/host/message_stats.h"
#include "crypto/keys.h"
#include "crypto/nonce.h"
#include "dataplane/api/handoff.h"

namespace gw::cp {

struct EngineHostCounters {
  std::uint64_t sealed = 0;            // datagrams sealed and queued for transmit
  std::uint64_t drop_encode = 0;       // an outbox entry that would not encode
  std::uint64_t drop_no_primary = 0;   // no primary key to seal with
};

class EngineHost {
 public:
  struct Options {
    engine::EngineConfig engine;
    std::vector<engine::Address> seeds;
    std::uint64_t cluster_id = 0;
    const crypto::Keyring* keys = nullptr;
    std::uint64_t rng_seed = 0;
    ShaperConfig shaper;
  };

  // `sink` must outlive the host. Times: monotonic ns for the engine's timers,
  // Unix seconds for the header timestamp.
  EngineHost(Options options, dp::DatagramSink& sink, std::uint64_t now_ns);

  // Control lcore only. Joins through the seeds (if any).
  void start(std::uint64_t now_ns, std::uint32_t unix_s);
  // Control lcore only. One opened payload from a worker.
  void on_payload(const dp::Handoff& h, std::uint64_t now_ns, ControlCounters& counters);
  // Control lcore only. Runs due timers and sends what the engine queued.
  void poll(std::uint64_t now_ns, std::uint32_t unix_s);
  // Control lcore only. Starts a graceful leave.
  void begin_leave(std::uint64_t now_ns, std::uint32_t unix_s);
  // The engine has sent its leave enough times and the shaper has let every
  // urgent datagram out.
  bool leave_done() const { return engine_->leave_done() && shaper_.queued(crypto::PriorityClass::kUrgent) == 0; }

  const engine::Engine& engine() const { return *engine_; }
  const EngineHostCounters& counters() const noexcept { return counters_; }
  const EgressShaper& shaper() const noexcept { return shaper_; }

  // Member events for local consumers: each is logged (failed and left at
  // info, join and update at debug) and the most recent kRecentEvents kept.
  static constexpr std::size_t kRecentEvents = 256;
  const std::deque<engine::MemberEvent>& recent_events() const noexcept { return recent_; }
  // Events by kind: join, leave, failed, update.
  const std::array<std::uint64_t, 4>& event_counts() const noexcept { return event_counts_; }

 private:
  void flush(std::uint64_t now_ns, std::uint32_t unix_s);
  void drain_events();

  Options options_;
  EgressShaper shaper_;
  std::unique_ptr<engine::Engine> engine_;
  crypto::NonceSource nonces_;
  std::vector<std::uint8_t> plain_;
  std::vector<std::uint8_t> sealed_;
  EngineHostCounters counters_;
  std::deque<engine::MemberEvent> recent_;
  std::array<std::uint64_t, 4> event_counts_{};
};

const char* event_kind_name(engine::EventKind k);

// Engine address <-> dataplane endpoint.
engine::Address to_engine_address(const dp::Endpoint& e);
dp::Endpoint to_endpoint(const engine::Address& a);

}  // namespace gw::cp
