#include "control/gateway/gateway.h"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <sodium.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "config/keys.h"
#include "config/loader.h"
#include "control/api/server.h"
#include "control/gateway/adapters.h"
#include "control/gateway/control_api.h"
#include "control/gateway/counter_table.h"
#include "control/gateway/housekeeping.h"
#include "control/gateway/info.h"
#include "control/gateway/stats_json.h"
#include "control/host/control_loop.h"
#include "control/host/engine_host.h"
#include "control/host/events/hosts_file.h"
#include "control/host/unknown_keys.h"
#include "crypto/aes_gcm.h"
#include "dataplane/guard.h"
#include "dataplane/handoff_rings.h"
#include "dataplane/port.h"
#include "dataplane/setup.h"
#include "dataplane/start.h"
#include "dataplane/tx_path.h"
#include "dataplane/worker.h"

namespace gw::cp {
namespace {

constexpr unsigned kTxRingSize = 4096;
// Known members reach the workers' rate limits through a snapshot,
// republished at most every 100 ms after the membership changed.
constexpr std::uint64_t kMembersRepublishNs = 100'000'000ULL;
// The workers' unknown-key samples are taken this often.
constexpr std::uint64_t kUnknownKeysTakeNs = 100'000'000ULL;

// SHA-256 of a file's bytes, hex (the config as read: gossipctl info shows it,
// so an operator can tell which config a running gateway started with).
std::string file_sha256_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : digest) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

// The config's lcores against the ones EAL was given.
void check_lcores(const config::Config& cfg) {
  const unsigned main_lcore = rte_get_main_lcore();
  if (cfg.lcores.control != main_lcore) {
    throw StartError(kExitUsage, "lcores.control: " + std::to_string(cfg.lcores.control) +
                                     " is not the EAL main lcore " + std::to_string(main_lcore) +
                                     " (set it with --main-lcore or the first lcore in -l)");
  }
  for (unsigned lc : cfg.lcores.workers) {
    if (!rte_lcore_is_enabled(lc) || lc == main_lcore) {
      throw StartError(kExitUsage, "lcores.workers: lcore " + std::to_string(lc) +
                                       " is not an enabled worker lcore in EAL (-l/--lcores)");
    }
  }
}

// The control API and the Prometheus listener bind before the port is set
// up, so a socket in use or a port taken is reported before anything starts;
// neither serves (no thread runs) until start().
struct Listeners {
  Listeners(const config::Config& cfg, MetricsPublisher& metrics) {
    try {
      if (!cfg.control.socket.empty()) api = std::make_unique<api::ApiServer>(cfg.control.socket);
      if (cfg.metrics.prometheus_port != 0) {
        prometheus =
            std::make_unique<PrometheusServer>(metrics, cfg.metrics.prometheus_address, cfg.metrics.prometheus_port);
      }
    } catch (const std::exception& e) {
      throw StartError(kExitUsage, e.what());
    }
  }
  std::unique_ptr<api::ApiServer> api;
  std::unique_ptr<PrometheusServer> prometheus;
};

// The packet path's resources: the port, the handoff rings and the transmit
// ring, released in reverse on every way out.
struct Dataplane {
  explicit Dataplane(const config::Config& cfg) {
    try {
      port = dp::start_port(dp::port_plan(cfg));
      rings = std::make_unique<dp::HandoffRings>(
          cfg.lcores.workers.size(), cfg.rings.size,
          cfg.limits.max_payload_bytes - static_cast<std::uint32_t>(crypto::kTagBytes));
      tx_ring = rte_ring_create("gw_tx", kTxRingSize, static_cast<int>(rte_socket_id()),
                                RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
      if (tx_ring == nullptr) {
        throw dp::SetupError(std::string("cannot create the transmit ring: ") + rte_strerror(rte_errno));
      }
    } catch (const dp::SetupError& e) {
      // A port that does not exist, cannot take the config's queues or
      // descriptors, or memory EAL was not given: restarting cannot fix it.
      release();
      throw StartError(kExitUsage, e.what());
    }
  }
  ~Dataplane() { release(); }
  Dataplane(const Dataplane&) = delete;
  Dataplane& operator=(const Dataplane&) = delete;

  void release() noexcept {
    rings.reset();
    if (tx_ring != nullptr) {
      void* obj = nullptr;
      while (rte_ring_sc_dequeue(tx_ring, &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
      rte_ring_free(tx_ring);
      tx_ring = nullptr;
    }
    if (!port.pools.empty()) dp::stop_port(port);
  }

  dp::PortState port;
  std::unique_ptr<dp::HandoffRings> rings;
  rte_ring* tx_ring = nullptr;
};

// Everything that runs once the port is up, on the control lcore.
class Gateway {
 public:
  Gateway(Startup& s, const RunOptions& o, const Services& svc)
      : s_(s),
        o_(o),
        svc_(svc),
        cfg_(s.cfg),
        listeners_(cfg_, *svc.metrics),
        dp_(cfg_),
        link_watch_(dp_.port.port_id, link_down_),
        snapshots_(cfg_.lcores.workers.size(), first_snapshot(s)),
        tx_queue_(dp_.port.tx_pool, dp_.tx_ring, s.ladder.local.ipv6) {
    start_workers();
    if (!cfg_.control.state_dir.empty())
      keyring_persister_ = std::make_unique<KeyringPersister>(cfg_.control.state_dir);
    if (cfg_.membership.enabled) {
      EngineHost::Options plan = engine_plan(cfg_, s.engine, s.ladder, snapshots_);
      plan.keyring_saver = keyring_saver();
      host_ = std::make_unique<EngineHost>(std::move(plan), tx_queue_, base::monotonic_ns());
    }
    loop_ = std::make_unique<ControlLoop>(*dp_.rings, loop_plan(cfg_, o.defer_control), host_.get());
    wire_member_events();
    api_ = std::make_unique<ControlApi>(api_context());
    loop_->set_housekeeping([this](std::uint64_t now) { housekeeping(now); });
  }

  int run() {
    launch();
    StopControl stop;
    stop.requested = svc_.stop_requested;
    stop.workers_stop = &workers_stop_;
    stop.inputs_idle = [this] { return inputs_idle(); };
    loop_->run(stop);  // returns once the leave went out, the workers stopped and the rings drained
    systemd_.stopping();
    rte_eal_mp_wait_lcore();
    if (listeners_.api != nullptr) listeners_.api->stop();
    if (host_ != nullptr) host_->set_event_listener({});
    if (svc_.event_runner != nullptr) svc_.event_runner->stop();  // waits for handlers, bounded by their timeout

    int status = 0;
    const std::string json = stats_json(counters(true), false);  // with the member list
    if (!o_.stats_json.empty() && !write_file_atomically(o_.stats_json, json)) {
      std::fprintf(stderr, "gossipgw: --stats-json: cannot write '%s': %s\n", o_.stats_json.c_str(),
                   std::strerror(errno));
      status = kExitRuntime;
    }
    spdlog::info("stopped ({})", svc_.stop_requested->load() ? "signal" : "input idle");
    return status;
  }

 private:
  static std::unique_ptr<dp::DataplaneSnapshot> first_snapshot(const Startup& s) {
    auto first = std::make_unique<dp::DataplaneSnapshot>();
    first->keys = s.keyring;
    first->key_material = s.key_material;
    return first;
  }

  void start_workers() {
    dp::WorkerWiring wiring;
    wiring.port = &dp_.port;
    wiring.ladder = s_.ladder;
    wiring.snapshots = &snapshots_;
    wiring.rings = dp_.rings.get();
    wiring.tx_ring = dp_.tx_ring;
    wiring.classifier = s_.classifier.get();
    wiring.stop = &workers_stop_;
    wiring.link_down = &link_down_;
    wiring.idle_exit_tsc = rte_get_tsc_hz() / 1000 * o_.idle_exit_ms;
    wiring.freeze_clock_s = o_.freeze_clock_s;
    if (o_.freeze_clock_s == 0) {
      wall_clock_.start(rte_get_tsc_hz(), rte_rdtsc(), base::unix_time_ns());
      wiring.wall_clock = &wall_clock_;
    }
    std::vector<const std::atomic<bool>*> done_flags;
    for (std::size_t q = 0; q < cfg_.lcores.workers.size(); ++q) {
      try {
        workers_.push_back(dp::make_worker(cfg_, q, wiring));
      } catch (const dp::SetupError& e) {
        throw StartError(kExitUsage, e.what());  // nothing runs yet: the way out is clean
      }
      done_flags.push_back(&workers_.back()->done);
    }
    dp_.rings->watch(done_flags);
    // The once-only check over all workers (issue 17): a copy of a datagram
    // that reached two workers is served once.
    try {
      dp_.rings->check_once(cfg_.limits.replay_senders, cfg_.limits.replay_window_s, dp::random_table_seed(),
                            cfg_.limits.replay_senders_per_source);
    } catch (const std::exception& e) {
      throw StartError(kExitRuntime, std::string("cannot allocate the control lcore's replay table: ") + e.what());
    }
  }

  // Member events: the configured handler, and the hosts file.
  void wire_member_events() {
    if (host_ == nullptr) return;
    if (!cfg_.events.hosts_file.path.empty()) {
      hosts_file_ = std::make_unique<events::HostsFileWriter>(cfg_.events.hosts_file, cfg_.node.name,
                                                              cfg_.events.hosts_min_interval_ms, cfg_.cluster.name);
      hosts_dirty_ = true;  // written once at start (ourselves)
    }
    if (svc_.event_runner == nullptr && hosts_file_ == nullptr) return;
    host_->set_event_listener([this](const engine::MemberEvent& e) {
      hosts_dirty_ = true;
      if (svc_.event_runner == nullptr) return;
      if (const engine::Member* m = host_->engine().member(e.node)) {
        (void)svc_.event_runner->submit(e, std::span<const engine::Member>(m, 1));
      } else {
        (void)svc_.event_runner->submit(e);
      }
    });
  }

  // Key changes are saved (control.state_dir) before they take effect.
  KeyringSaver keyring_saver() {
    if (keyring_persister_ == nullptr) return {};
    return [this](const crypto::Keyring& ring, const KeyMaterial& material) {
      return keyring_persister_->save_now(ring, material);
    };
  }

  ControlApi::Context api_context() {
    ControlApi::Context ctx;
    ctx.host = host_.get();
    ctx.snapshots = &snapshots_;
    ctx.suite = config::resolve_suite(cfg_);
    ctx.stats_json = [this] { return stats_json(counters(false), true); };
    ctx.request_stop = [this] { svc_.stop_requested->store(true, std::memory_order_relaxed); };
    ctx.logs = svc_.logs;
    ctx.stop_phase = [this] { return loop_->stop_phase(); };
    ctx.leave_timeout_ms = cfg_.membership.leave_timeout_ms;
    ctx.keyring_saver = keyring_saver();
    if (!cfg_.control.state_dir.empty()) {
      ctx.save_tags = [dir = cfg_.control.state_dir](const std::vector<engine::Tag>& tags) -> std::string {
        std::vector<std::pair<std::string, std::string>> kv;
        for (const engine::Tag& t : tags) kv.emplace_back(t.key, t.value);
        try {
          save_tags_state(dir, kv);
        } catch (const std::exception& e) {
          spdlog::error("{}", e.what());
          return e.what();
        }
        return {};
      };
    }
    info_.cfg = &cfg_;
    info_.config_path = s_.config_path;
    info_.config_sha256 = s_.config_sha256;
    info_.started_unix_s = s_.started_unix_s;
    info_.driver = dp_.port.driver;
    info_.workers = workers_.size();
    info_.keyring_source = s_.keyring_source;
    info_.host = host_.get();
    info_.snapshots = &snapshots_;
    info_.rings = dp_.rings.get();
    info_.tx_ring = dp_.tx_ring;
    ctx.info_json = [this] { return info_json(info_); };
    return ctx;
  }

  void launch() {
    spdlog::info("cluster '{}' node '{}' on {} port {} ({}), {} worker(s), {} key(s)", cfg_.cluster.name,
                 cfg_.node.name, dp_.port.driver, dp_.port.port_id,
                 cfg_.node.address + ":" + std::to_string(cfg_.node.port), workers_.size(), s_.keyring.size());
    // Which code does the AEAD (issue 19): ipsec-mb's AES-256-GCM picks its
    // instruction set from the CPU flags; libsodium runs ChaCha20-Poly1305.
    spdlog::info("suite {}; aes256gcm: {}; chacha20poly1305: {}", suite_text(config::resolve_suite(cfg_)),
                 crypto::aes256gcm_impl_name(), crypto::chacha20poly1305_impl_name());
    if (!s_.tags_source.empty()) {
      spdlog::info("tags from {}; membership.tags in the config is not used while it exists", s_.tags_source);
    }
    if (s_.keyring_source != "cluster.keys") {
      spdlog::info("keyring from {} ({} key(s), primary {}); cluster.keys in the config is not used while it exists",
                   s_.keyring_source, s_.keyring.size(), crypto::key_id_text(s_.keyring.primary()->id()));
    }
    for (auto& w : workers_) rte_eal_remote_launch(dp::run_worker, w.get(), w->lcore);
    if (listeners_.api != nullptr) {
      listeners_.api->start();
      spdlog::info("control API on {}", listeners_.api->path());
    }
    if (listeners_.prometheus != nullptr) {
      listeners_.prometheus->start();
      spdlog::info("Prometheus metrics on http://{}:{}/metrics", cfg_.metrics.prometheus_address,
                   listeners_.prometheus->port());
    }
  }

  bool inputs_idle() const {
    if (o_.idle_exit_ms == 0) return false;
    for (const auto& w : workers_) {
      if (!w->idle.load(std::memory_order_relaxed)) return false;
    }
    return true;
  }

  // Every counter at this moment. Worker counters are read live: each is one
  // aligned 64-bit word, so a reader sees an old or a new value, never a torn one.
  CounterSnapshot counters(bool include_members) const {
    std::vector<WorkerStats> live;
    for (const auto& w : workers_) {
      live.push_back(
          {w->lcore, w->queue, w->counters, w->tx.counters, s_.classifier ? &s_.classifier->rule_names() : nullptr});
    }
    return counter_snapshot(std::move(live), rte_get_main_lcore(), loop_->counters(), tx_queue_.counters(), host_.get(),
                            include_members, sections());
  }

  // The sections of the parts wired here (counter_table.h, GatewaySections).
  GatewaySections sections() const {
    GatewaySections g;
    g.snapshots = {snapshots_.current().version, snapshots_.retained()};
    if (svc_.event_runner != nullptr) g.event_handler = svc_.event_runner->counters();
    if (hosts_file_ != nullptr) g.hosts_file = hosts_file_->counters();
    if (cfg_.metrics.telemetry) g.telemetry = TelemetryCounters{telemetry_refused()};
    g.process.start_time_unix = s_.started_unix_s;
    (void)read_process_gauges(g.process);
    g.port = {link_watch_.up() ? 1u : 0u, link_watch_.down_events()};
    rte_eth_stats es{};
    if (rte_eth_stats_get(dp_.port.port_id, &es) == 0) {
      g.nic = NicCounters{es.ipackets, es.opackets, es.imissed, es.ierrors, es.rx_nombuf, es.oerrors};
    }
    if (keyring_persister_ != nullptr) g.keyring_state = keyring_persister_->counters();
    g.unknown_key_senders = unknown_keys_.senders(base::monotonic_ns());
    if (listeners_.api != nullptr)
      g.control_api = ControlApiSection{api::load(listeners_.api->counters()), api_->counters()};
    return g;
  }

  // What an address that sends under a key we lack is to us.
  UnknownKeyWatch::Who who_is(const dp::Endpoint& e) const {
    UnknownKeyWatch::Who who;
    if (host_ == nullptr) return who;
    const engine::Engine& eng = host_->engine();
    const engine::Address a = to_engine_address(e);
    for (const engine::Member& m : eng.members()) {
      if (m.addr() == a && m.name != eng.name()) {
        who.kind = UnknownKeyWatch::Kind::kMember;
        who.name = m.name.str();
        who.state = engine::status_name(m.status);
        return who;
      }
    }
    const std::vector<engine::Address>& seeds = host_->seeds();
    if (std::find(seeds.begin(), seeds.end(), a) != seeds.end()) who.kind = UnknownKeyWatch::Kind::kSeed;
    return who;
  }

  // The workers' samples of unknown-key senders, every 100 ms; said in the
  // log at most once a minute (control/host/unknown_keys.h).
  void watch_unknown_keys(std::uint64_t now) {
    if (now < next_unknown_keys_ns_) return;
    next_unknown_keys_ns_ = now + kUnknownKeysTakeNs;
    const UnknownKeyWatch::Resolve who = [this](const dp::Endpoint& e) { return who_is(e); };
    std::array<dp::UnknownKeySighting, dp::UnknownKeySample::kSlots> got;
    std::uint64_t drops = 0;
    for (auto& w : workers_) {
      const std::size_t n = w->unknown_keys.take(got);
      for (std::size_t i = 0; i < n; ++i) unknown_keys_.add(got[i], now, who);
      drops += w->counters.get(dp::Verdict::kUnknownKey);
    }
    const bool alone = host_ != nullptr && host_->engine().num_live() <= 1;
    for (const std::string& line : unknown_keys_.report(now, who, snapshots_.current().keys.ids(), drops, alone)) {
      spdlog::warn("{}", line);
    }
  }

  void housekeeping(std::uint64_t now) {
    if (now >= next_clock_poll_ns_) {
      // The workers follow the wall clock's steps (dataplane/guard.h).
      next_clock_poll_ns_ = now + kClockPollNs;
      const std::int64_t change = wall_clock_.poll(rte_rdtsc(), base::unix_time_ns());
      if (change >= 1'000'000'000LL || change <= -1'000'000'000LL) {
        spdlog::warn("the wall clock was stepped by {:+.3f} s: the workers follow it (now {:+.3f} s from start)",
                     static_cast<double>(change) / 1e9, static_cast<double>(wall_clock_.step_ns()) / 1e9);
        // So does the engine's incarnation ceiling (Unix time now + slack):
        // a gateway started with its clock far behind would otherwise refuse
        // every peer's incarnation as beyond belief.
        if (host_ != nullptr) host_->engine().set_unix_clock_offset(base::unix_time_ns() - base::monotonic_ns());
      }
    }
    {
      // The once-only table ages on the workers' clock (frozen in pcap cases).
      dp::LadderState clock_now;
      workers_.front()->guard.clock.read(rte_rdtsc(), clock_now);
      if (clock_now.have_clock) dp_.rings->age_once(clock_now.now_s);
    }
    link_watch_.poll(now);
    systemd_.poll(now, systemd_status_);
    if (listeners_.api != nullptr) {
      listeners_.api->serve_async([&](std::string_view line, const api::ApiServer::Reply& reply) {
        api_->handle(line, now, base::unix_seconds(), reply);
      });
    }
    api_->poll(now);
    watch_unknown_keys(now);
    if (host_ != nullptr && host_->membership_version() != members_published_version_ && now >= next_members_ns_) {
      members_published_version_ = host_->membership_version();
      next_members_ns_ = now + kMembersRepublishNs;
      snapshots_.publish(snapshot_with_members(snapshots_.current(), host_->engine()));
    }
    if (keyring_persister_ != nullptr) {
      keyring_persister_->sync(snapshots_.current().keys, snapshots_.current().key_material, now);
    }
    snapshots_.reclaim();
    if (hosts_file_ != nullptr) {
      if (hosts_dirty_) {
        hosts_dirty_ = false;
        (void)hosts_file_->update(host_->engine().members(), now);
      } else if (hosts_file_->pending()) {
        (void)hosts_file_->poll(now);
      }
    }
    if (export_metrics_ && now >= next_metrics_ns_) {
      next_metrics_ns_ = now + std::uint64_t{cfg_.metrics.interval_ms} * 1'000'000ULL;
      svc_.metrics->publish(counters(false), std::uint64_t{base::unix_seconds()} * 1000ULL);
    }
  }

  Startup& s_;
  const RunOptions& o_;
  const Services& svc_;
  const config::Config& cfg_;
  Listeners listeners_;
  Dataplane dp_;
  std::atomic<bool> workers_stop_{false};
  std::atomic<bool> link_down_{false};  // the control lcore watches the port's link
  LinkWatch link_watch_;
  dp::SnapshotExchange snapshots_;
  std::vector<std::unique_ptr<dp::WorkerContext>> workers_;
  dp::WallClockFollower wall_clock_;  // unused with --freeze-clock
  static constexpr std::uint64_t kClockPollNs = 250'000'000ULL;
  std::uint64_t next_clock_poll_ns_ = 0;
  dp::TxQueue tx_queue_;
  std::unique_ptr<EngineHost> host_;
  std::unique_ptr<ControlLoop> loop_;
  std::unique_ptr<events::HostsFileWriter> hosts_file_;
  bool hosts_dirty_ = false;
  std::unique_ptr<KeyringPersister> keyring_persister_;
  UnknownKeyWatch unknown_keys_;
  std::uint64_t next_unknown_keys_ns_ = 0;
  InfoSources info_;
  std::unique_ptr<ControlApi> api_;
  SystemdNotifier systemd_;
  const std::string systemd_status_ = "cluster " + cfg_.cluster.name + " node " + cfg_.node.name + ": " +
                                      std::to_string(cfg_.lcores.workers.size()) + " worker(s) on port " +
                                      std::to_string(dp_.port.port_id);
  const bool export_metrics_ = cfg_.metrics.telemetry || listeners_.prometheus != nullptr;
  std::uint64_t next_metrics_ns_ = 0;
  std::uint64_t members_published_version_ = 0;
  std::uint64_t next_members_ns_ = 0;
};

}  // namespace

Startup load_startup(const std::string& config_path, std::uint32_t freeze_clock_s) {
  Startup s;
  s.config_path = config_path;
  s.started_unix_s = base::unix_seconds();
  s.cfg = config::load_config(config_path);
  s.config_sha256 = file_sha256_hex(config_path);
  s.keyring = config::load_keyring(s.cfg, &s.key_material);
  (void)config::load_operator_key(s.cfg);  // a bad cluster.operator_public_key is reported now, before EAL
  // A keyring persisted by an earlier run wins over the config's key files
  // (which only seed it): after a rotation the config may still name the
  // old key. docs/operations.md, "Rotating keys". The state directory must
  // be one we can write (or create), or nothing could be kept: exit 2.
  if (!s.cfg.control.state_dir.empty()) {
    check_state_dir(s.cfg.control.state_dir, /*create=*/true);
    if (auto stored = load_keyring_state(s.cfg.control.state_dir, config::resolve_suite(s.cfg))) {
      s.keyring = stored->ring;
      s.key_material = std::move(stored->material);
      s.keyring_source = stored->path;
    }
  }
  s.ladder = dp::ladder_config(s.cfg);
  // The restart watermark (docs/ladder.md): nothing sealed before this start
  // is accepted, whatever an earlier run of this gateway accepted.
  s.ladder.not_before_s =
      freeze_clock_s != 0 ? freeze_clock_s : static_cast<std::uint32_t>(base::unix_time_ns() / 1'000'000'000ULL);
  s.classifier = dp::make_classifier(s.cfg);
  if (s.cfg.membership.enabled) {
    s.engine = engine_config(s.cfg, s.ladder.local);
    // Tags changed at run time (gossipctl tags) win over membership.tags,
    // as the persisted keyring wins over cluster.keys.
    if (!s.cfg.control.state_dir.empty()) {
      if (auto stored = load_tags_state(s.cfg.control.state_dir)) {
        s.engine.tags.clear();
        for (auto& [k, v] : *stored) s.engine.tags.push_back({std::move(k), std::move(v)});
        if (const std::string why = s.engine.validate(); !why.empty()) {
          throw crypto::KeyError("tags state '" + s.cfg.control.state_dir + "/" + kTagsStateFile + "': " + why);
        }
        s.tags_source = s.cfg.control.state_dir + "/" + kTagsStateFile;
      }
    }
  }
  return s;
}

int run_gateway(Startup& s, const RunOptions& o, const Services& svc) {
  check_lcores(s.cfg);
  Gateway gateway(s, o, svc);
  return gateway.run();
}

}  // namespace gw::cp
