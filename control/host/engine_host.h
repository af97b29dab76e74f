// Hosts the membership engine on the control lcore: decodes what the workers
// opened, feeds the engine, ticks its timers, and seals and shapes what it
// sends. Key commands and results go to the cluster key-change protocol
// (key_change.h), which sends through the same sealing path.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "control/codec.h"
#include "control/engine/engine.h"
#include "control/host/egress_shaper.h"
#include "control/host/key_change.h"
#include "control/host/key_ops.h"
#include "control/host/member_event_log.h"
#include "control/host/message_stats.h"
#include "control/host/sender_keys.h"
#include "crypto/keys.h"
#include "crypto/nonce.h"
#include "dataplane/api/handoff.h"
#include "dataplane/api/snapshot.h"

namespace gw::cp {

// The key command counters are the cluster key-change protocol's
// (ClusterKeyChange counts into them); the stats report them with the rest.
struct EngineHostCounters : KeyCommandCounters {
  std::uint64_t sealed = 0;             // datagrams sealed and queued for transmit
  std::uint64_t drop_encode = 0;        // an outbox entry that would not encode
  std::uint64_t drop_no_primary = 0;    // no primary key to seal with
  std::uint64_t sender_keys_reset = 0;  // the sender -> key table filled up and was cleared
};

// Round trips of our direct probes (ping sent to its ack received), as seen
// by the control lcore: egress shaping and ring queueing included.
struct ProbeRtt {
  // Upper bounds of the histogram's buckets, in microseconds; one more
  // bucket (+Inf) after the last.
  static constexpr std::array<std::uint64_t, 11> kBoundsUs = {500,   1000,   2000,   5000,   10000,  20000,
                                                              50000, 100000, 200000, 500000, 1000000};
  std::array<std::uint64_t, kBoundsUs.size() + 1> buckets{};  // per bucket (not cumulative)
  std::uint64_t sum_us = 0;
  std::uint64_t count = 0;
  std::uint64_t unmatched = 0;  // pings forgotten before an ack came (bounded table)

  void add(std::uint64_t rtt_us) {
    std::size_t i = 0;
    while (i < kBoundsUs.size() && rtt_us > kBoundsUs[i]) ++i;
    ++buckets[i];
    sum_us += rtt_us;
    ++count;
  }
};

// A sealed datagram's bytes, as the shaper queues them (the first `bytes`
// the shaper was told are the datagram; a reused buffer may be longer).
using SealedBytes = std::vector<std::uint8_t>;
using HostShaper = EgressShaper<SealedBytes>;

// The host's shaper sink: sealed bytes out to the transmit path, and every
// buffer back into a small pool, so that sealing writes straight into the
// buffer the shaper queues (no copy into the shaper) and, once the pool has
// grown, nothing is allocated per datagram.
class SealedSink final : public ShaperSink<SealedBytes> {
 public:
  static constexpr std::size_t kSpareBuffers = 64;
  explicit SealedSink(dp::DatagramSink& out) : out_(out) { spare_.reserve(kSpareBuffers); }
  bool send(const dp::Endpoint& to, crypto::PriorityClass cls, SealedBytes& b, std::size_t bytes) noexcept override {
    const bool ok = out_.send(to, cls, b.data(), bytes);
    recycle(b);
    return ok;
  }
  void evicted(crypto::PriorityClass, SealedBytes& b) noexcept override { recycle(b); }
  // Control lcore only. A buffer of at least `bytes` for the next datagram.
  SealedBytes take(std::size_t bytes) {
    SealedBytes b;
    if (!spare_.empty()) {
      b = std::move(spare_.back());
      spare_.pop_back();
    }
    // Never shrunk: a reused buffer is zeroed only where it grows.
    if (b.size() < bytes) b.resize(bytes);
    return b;
  }
  // Control lcore only. Keeps `b` for reuse (up to kSpareBuffers; the rest are freed).
  void recycle(SealedBytes& b) noexcept {
    if (spare_.size() < kSpareBuffers) spare_.push_back(std::move(b));  // reserved: never allocates
  }

 private:
  dp::DatagramSink& out_;
  std::vector<SealedBytes> spare_;
};

class EngineHost {
 public:
  struct Options {
    engine::EngineConfig engine;
    std::vector<engine::Address> seeds;
    std::uint64_t cluster_id = 0;
    // The keys to seal with: the published snapshot's when `snapshots` is set
    // (so a rotation takes effect on both paths at once), else `keys`.
    // Cluster-wide key commands change it (apply_key_change); they are
    // refused when it is null.
    dp::SnapshotExchange* snapshots = nullptr;
    const crypto::Keyring* keys = nullptr;
    crypto::Suite suite = crypto::Suite::kChaCha20Poly1305;
    std::uint64_t rng_seed = 0;
    ShaperConfig shaper;
    // Unix time this process started, in ns. Key command ids are the
    // origin's Unix time in ns when it issued them: a command issued before
    // we started (a replay of one we may have applied in an earlier run) is
    // refused, so each is applied at most once, also across restarts.
    std::uint64_t started_unix_ns = 0;
    // The operator signing key (cluster.operator_public_key): cluster-wide
    // key changes are applied only when it signed them. None: refused.
    std::optional<crypto::OperatorPublicKey> operator_key;
    // Saves the keyring a cluster-wide key change leads to before it takes
    // effect here (control.state_dir); empty: nothing is saved.
    KeyringSaver keyring_saver;
  };

  // `sink` must outlive the host. Times: monotonic ns for the engine's timers,
  // Unix seconds for the header timestamp.
  EngineHost(Options options, dp::DatagramSink& sink, std::uint64_t now_ns);

  // Control lcore only. Joins through the seeds; with none (the first
  // member of a cluster) it is joined at once.
  void start(std::uint64_t now_ns, std::uint32_t unix_s);
  // Control lcore only. A manual join (`gossipctl join`): `through` is added
  // to the seeds the engine retries, never put in their place, so a join
  // through an address that does not answer leaves the configured seeds
  // working. At most kMaxManualSeeds are kept (the oldest goes first).
  void join(const engine::Address& through, std::uint64_t now_ns);
  static constexpr std::size_t kMaxManualSeeds = 4;
  // What the engine's join rounds ask: the configured seeds (as many as fit
  // beside the manual ones in the engine's kMaxSeeds), then the manual ones.
  const std::vector<engine::Address>& seeds() const noexcept { return seeds_; }
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
  engine::Engine& engine() { return *engine_; }
  const crypto::Keyring& keyring() const noexcept {
    return options_.snapshots != nullptr ? options_.snapshots->current().keys : *options_.keys;
  }
  const EngineHostCounters& counters() const noexcept { return counters_; }
  const ProbeRtt& probe_rtt() const noexcept { return probe_rtt_; }
  const HostShaper& shaper() const noexcept { return shaper_; }

  // Member events for local consumers (MemberEventLog): each is logged,
  // counted and the most recent kRecentEvents kept.
  static constexpr std::size_t kRecentEvents = MemberEventLog::kRecent;
  const std::deque<engine::MemberEvent>& recent_events() const noexcept { return events_.recent(); }
  // Events by kind: join, leave, failed, update.
  const std::array<std::uint64_t, 4>& event_counts() const noexcept { return events_.counts(); }
  // ---- cluster-wide key changes (ClusterKeyChange) ----
  using KeyOpOutcome = ClusterKeyChange::Outcome;
  using KeyOpDone = ClusterKeyChange::Done;
  // Control lcore only. Applies `change` here, then sends it to every live
  // member and calls `done` once all answered or the deadline passed.
  // Returns an empty string if it started, else why not (nothing changed).
  // `auth` is the operator's signature (install, use, remove).
  std::string start_cluster_key_change(const KeyChange& change, const ClusterKeyChange::Authorisation& auth,
                                       std::uint64_t now_ns, std::uint32_t unix_s, KeyOpDone done) {
    return key_change_.start(change, auth, now_ns, unix_s, std::move(done));
  }

  // Called on the control lcore for every member event, after it is logged
  // (event handlers, hosts file). Must not block.
  void set_event_listener(std::function<void(const engine::MemberEvent&)> f) { events_.set_listener(std::move(f)); }
  // Changes whenever a member event happened (for consumers that poll).
  std::uint64_t membership_version() const noexcept { return events_.version(); }

  // The key id that opened the last payload from `a` (how many members still
  // use a key, during a rotation).
  static constexpr std::size_t kMaxSenderKeys = SenderKeys::kMax;
  std::optional<std::uint32_t> sender_key(const engine::Address& a) const { return sender_keys_.find(a); }

  EngineHost(const EngineHost&) = delete;
  EngineHost& operator=(const EngineHost&) = delete;

 private:
  // What seal_and_submit did with a datagram.
  enum class Sent : std::uint8_t {
    kNotSealed,  // no primary key, or it would not seal (counted here)
    kQueued,     // sealed and taken by the shaper
    kDropped,    // sealed, but the shaper had no room (counted there)
  };

  void flush(std::uint64_t now_ns, std::uint32_t unix_s);
  void note_ack(const engine::Ack& ack, std::uint64_t now_ns);
  // The one sealing path (engine datagrams, key commands and results): seals
  // `plain` for `to` with the primary key and hands it to the shaper.
  Sent seal_and_submit(const engine::Address& to, crypto::PriorityClass cls, std::span<const std::uint8_t> plain,
                       std::uint64_t now_ns, std::uint32_t unix_s);

  std::uint32_t join_rounds_logged_ = 1;  // the first round is logged by start()
  std::uint64_t reconnects_expired_logged_ = 0;  // reconnect_expired already logged
  Options options_;
  std::vector<engine::Address> manual_seeds_;  // gossipctl join, oldest first
  std::vector<engine::Address> seeds_;         // see seeds()
  SealedSink sink_;
  HostShaper shaper_;
  std::unique_ptr<engine::Engine> engine_;
  crypto::NonceSource nonces_;
  std::vector<std::uint8_t> plain_;
  // What flush() and poll() drain the engine into: storage traded with the
  // engine (Engine::take_outbox), so the control lcore allocates none for it
  // per pass once both have grown.
  std::vector<engine::Outgoing> outbox_;
  std::vector<engine::MemberEvent> drained_events_;
  EngineHostCounters counters_;
  ClusterKeyChange key_change_;
  // Pings sent, by sequence number, until their ack (oldest forgotten first).
  static constexpr std::size_t kPingsInFlight = 1024;
  std::deque<std::pair<std::uint32_t, std::uint64_t>> pings_in_flight_;
  ProbeRtt probe_rtt_;
  MemberEventLog events_;
  SenderKeys sender_keys_;
};

}  // namespace gw::cp
