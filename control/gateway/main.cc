// gossipgw [EAL options] -- --config FILE [--stats-json PATH] [--idle-exit-ms N]
//
// The composition root: validate options and config before EAL starts, bring
// up the port, launch one worker per rx queue, run the control loop on the
// main lcore, write counters on the way out.
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include <sodium.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "config/keys.h"
#include "config/loader.h"
#include "control/api/server.h"
#include "control/gateway/adapters.h"
#include "control/gateway/control_api.h"
#include "control/gateway/housekeeping.h"
#include "control/gateway/info.h"
#include "control/gateway/metrics.h"
#include "control/gateway/stats_json.h"
#include "control/host/control_loop.h"
#include "control/host/engine_host.h"
#include "control/host/events/event_runner.h"
#include "control/host/events/hosts_file.h"
#include "control/host/keyring_state.h"
#include "control/host/log_ring.h"
#include "control/version.h"
#include "crypto/keys.h"
#include "dataplane/handoff_rings.h"
#include "dataplane/port.h"
#include "dataplane/setup.h"
#include "dataplane/start.h"
#include "dataplane/tx_path.h"
#include "dataplane/worker.h"

namespace {

constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

// The one process-wide flag: signal handlers can reach nothing else.
std::atomic<bool> g_stop{false};
// Seconds a stop may take once asked for (set before the handlers are
// installed): past it the process ends without its --stats-json, so a wedged
// shutdown (an event handler that never exits, a driver that never returns)
// cannot outlive systemd's TimeoutStopSec unnoticed.
unsigned g_stop_bound_s = 10;

void on_signal(int) {
  if (!g_stop.exchange(true, std::memory_order_relaxed)) alarm(g_stop_bound_s);
}

void on_stop_overdue(int) {
  static const char kMsg[] = "gossipgw: stop took longer than its bound; exiting without --stats-json\n";
  (void)!write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  _exit(1);
}

void install_signal_handlers(unsigned stop_bound_s) {
  g_stop_bound_s = stop_bound_s;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  struct sigaction alarm_sa {};
  alarm_sa.sa_handler = on_stop_overdue;
  sigemptyset(&alarm_sa.sa_mask);
  sigaction(SIGALRM, &alarm_sa, nullptr);
}

// How long a stop may take: the leave broadcast's own bound plus a margin
// for draining the rings, stopping event handlers and writing the stats.
constexpr unsigned kStopMarginS = 7;

constexpr unsigned kTxRingSize = 4096;

// Only a directory named like EAL's own (.../dpdk/<prefix>) is removed.
void remove_runtime_dir(const std::string& dir) {
  const std::filesystem::path p(dir);
  if (dir.empty() || !p.has_parent_path() || p.parent_path().filename() != "dpdk") return;
  std::error_code ec;
  std::filesystem::remove_all(p, ec);
}

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

int fail(int status, const std::string& message) {
  std::fprintf(stderr, "gossipgw: %s\n", message.c_str());
  return status;
}

struct AppOptions {
  std::string config_path;
  std::string stats_json;
  std::uint32_t idle_exit_ms = 0;
  std::string log_level;
  bool defer_control = false;
  std::uint32_t freeze_clock = 0;  // test aid: workers' clock stands at this Unix time
};

constexpr const char* kUsage =
    "usage: gossipgw [EAL options] -- --config FILE [--stats-json PATH] [--idle-exit-ms N]\n"
    "\n"
    "EAL options come first (DPDK convention), e.g. without a NIC or hugepages:\n"
    "  gossipgw -l 0,1 --no-huge -m 512 --no-pci --file-prefix=gw1 \\\n"
    "      --vdev=net_pcap0,rx_pcap=in.pcap -- --config gossipgw.yaml --idle-exit-ms 500\n"
    "Run 'gossipgw -- --help' for the gateway's own options, 'gossipgw --version' for the version.\n";

}  // namespace

int main(int argc, char** argv) {
  // Split at "--": EAL options before, ours after.
  int split = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      split = i;
      break;
    }
  }
  // --version anywhere (before or after "--"): nothing else happens.
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--version") == 0) {
      std::printf("gossipgw %s (git %s)\n", GW_VERSION, GW_COMMIT);
      return 0;
    }
  }
  if (split == argc) {
    if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::fputs(kUsage, stderr);
    return fail(kExitUsage, "missing '--' and --config after the EAL options");
  }

  AppOptions opt;
  CLI::App app{"gossipgw: a userspace gossip gateway on DPDK", "gossipgw [EAL options] --"};
  app.add_option("--config", opt.config_path, "gateway YAML config")->required()->check(CLI::ExistingFile);
  app.add_option("--stats-json", opt.stats_json, "write all counters as JSON to PATH on exit");
  app.add_option("--idle-exit-ms", opt.idle_exit_ms,
                 "exit once no packet has arrived for N ms (0: never); for finite inputs such as pcap files")
      ->check(CLI::Range(0u, 3'600'000u));
  app.add_option("--log-level", opt.log_level, "override log.level from the config")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.add_flag("--defer-control", opt.defer_control,
               "testing aid: the control lcore drains only after the workers stop (needs --idle-exit-ms)");
  app.add_option("--freeze-clock", opt.freeze_clock,
                 "testing aid: the workers' clock stands still at this Unix time (replay window and "
                 "rate limits give exact results on pcap input)")
      ->check(CLI::Range(1u, 4'294'967'295u));
  std::vector<std::string> app_args;
  for (int i = argc - 1; i > split; --i) app_args.emplace_back(argv[i]);  // CLI11 wants them reversed
  try {
    app.parse(app_args);
  } catch (const CLI::CallForHelp&) {
    std::fputs(kUsage, stdout);
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    return fail(kExitUsage, e.what());
  }
  if (opt.defer_control && opt.idle_exit_ms == 0) {
    return fail(kExitUsage, "--defer-control needs --idle-exit-ms, or the control lcore would never drain");
  }

  // Everything that can be wrong with the files is found before EAL starts.
  if (!gw::crypto::init()) return fail(kExitRuntime, "libsodium failed to initialise");
  const std::uint32_t started_unix_s = gw::cp::unix_seconds();
  std::string config_digest;  // SHA-256 of the config file as read at start (gossipctl info)
  gw::config::Config cfg;
  gw::crypto::Keyring keyring;
  gw::cp::KeyMaterial key_material;
  std::string keyring_source = "cluster.keys";  // or the state file it came from
  gw::dp::LadderConfig ladder;
  std::unique_ptr<gw::dp::Classifier> classifier;  // null: classifier.enabled is false
  gw::cp::engine::EngineConfig engine_config;      // membership.enabled only
  try {
    cfg = gw::config::load_config(opt.config_path);
    config_digest = file_sha256_hex(opt.config_path);
    keyring = gw::config::load_keyring(cfg, &key_material);
    // A keyring persisted by an earlier run wins over the config's key files
    // (which only seed it): after a rotation the config may still name the
    // old key. docs/operations.md, "Rotating keys".
    if (!cfg.control.state_dir.empty()) {
      if (auto stored = gw::cp::load_keyring_state(cfg.control.state_dir, gw::config::resolve_suite(cfg))) {
        keyring = stored->ring;
        key_material = std::move(stored->material);
        keyring_source = stored->path;
      }
    }
    ladder = gw::dp::ladder_config(cfg);
    // The restart watermark (docs/ladder.md): nothing sealed before this
    // start is accepted, whatever an earlier run of this gateway accepted.
    ladder.not_before_s = opt.freeze_clock != 0 ? static_cast<std::uint32_t>(opt.freeze_clock)
                                                : static_cast<std::uint32_t>(gw::dp::unix_time_ns() / 1'000'000'000ULL);
    classifier = gw::dp::make_classifier(cfg);
    if (cfg.membership.enabled) engine_config = gw::cp::engine_config(cfg, ladder.local);
  } catch (const std::exception& e) {
    return fail(kExitUsage, e.what());
  }
  // Logs go to stderr: stdout is for what a command is asked to print.
  // ... and into a ring of recent lines for `gossipctl monitor`.
  auto log_ring = std::make_shared<gw::cp::LogRing>();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "gossipgw", spdlog::sinks_init_list{std::make_shared<spdlog::sinks::stderr_color_sink_mt>(), log_ring}));
  spdlog::set_level(spdlog::level::from_str(opt.log_level.empty() ? cfg.log.level : opt.log_level));

  // Telemetry callbacks read it until EAL cleanup: it lives as long as main.
  static gw::dp::MetricsPublisher metrics;
  metrics.set_build_info(GW_VERSION, GW_COMMIT);

  // Event handlers run from their own thread, started before EAL pins this
  // one to the control lcore's CPU, so handlers never run on an lcore's CPU
  // by inheritance.
  std::unique_ptr<gw::cp::events::EventRunner> event_runner;
  if (cfg.membership.enabled && !cfg.events.handler.empty()) {
    event_runner = std::make_unique<gw::cp::events::EventRunner>(cfg.events, cfg.node.name, cfg.cluster.name);
  }

  std::vector<char*> eal_argv(argv, argv + split);
  if (rte_eal_init(static_cast<int>(eal_argv.size()), eal_argv.data()) < 0) {
    // EAL prints its usage to stdout, which a pipe (the journal) buffers
    // until exit: flush it first so our one line is the last one.
    const int eal_errno = rte_errno;
    std::fflush(stdout);
    return fail(kExitUsage, std::string("EAL initialisation failed: ") + rte_strerror(eal_errno) +
                                " (EAL options come before '--'; see the lines above)");
  }
  install_signal_handlers(cfg.membership.leave_timeout_ms / 1000 + 1 + kStopMarginS);
  if (cfg.metrics.telemetry && !gw::dp::register_telemetry(&metrics, cfg.node.name)) {
    spdlog::warn("DPDK telemetry: could not register /gossipgw/* commands (is telemetry disabled?)");
  }

  int status = 0;
  {
    const unsigned main_lcore = rte_get_main_lcore();
    if (cfg.lcores.control != main_lcore) {
      status =
          fail(kExitUsage, "lcores.control: " + std::to_string(cfg.lcores.control) + " is not the EAL main lcore " +
                               std::to_string(main_lcore) + " (set it with --main-lcore or the first lcore in -l)");
    }
    for (unsigned lc : cfg.lcores.workers) {
      if (status == 0 && (!rte_lcore_is_enabled(lc) || lc == main_lcore)) {
        status = fail(kExitUsage, "lcores.workers: lcore " + std::to_string(lc) +
                                      " is not an enabled worker lcore in EAL (-l/--lcores)");
      }
    }

    // The control API and the Prometheus listener bind before the port is
    // set up, so a socket in use or a port taken is reported before anything
    // starts; neither serves (no thread runs) until the port is up.
    std::unique_ptr<gw::cp::api::ApiServer> api_server;
    std::unique_ptr<gw::dp::PrometheusServer> prometheus;
    if (status == 0) {
      try {
        if (!cfg.control.socket.empty()) api_server = std::make_unique<gw::cp::api::ApiServer>(cfg.control.socket);
        if (cfg.metrics.prometheus_port != 0) {
          prometheus = std::make_unique<gw::dp::PrometheusServer>(metrics, cfg.metrics.prometheus_address,
                                                                  cfg.metrics.prometheus_port);
        }
      } catch (const std::exception& e) {
        status = fail(kExitUsage, e.what());
      }
    }

    gw::dp::PortState port;
    std::unique_ptr<gw::dp::HandoffRings> rings;
    rte_ring* tx_ring = nullptr;
    std::vector<std::unique_ptr<gw::dp::WorkerContext>> workers;
    if (status == 0) {
      try {
        port = gw::dp::start_port(gw::dp::port_plan(cfg));
        rings = std::make_unique<gw::dp::HandoffRings>(
            cfg.lcores.workers.size(), cfg.rings.size,
            cfg.limits.max_payload_bytes - static_cast<std::uint32_t>(gw::crypto::kTagBytes));
        tx_ring = rte_ring_create("gw_tx", kTxRingSize, static_cast<int>(rte_socket_id()),
                                  RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
        if (tx_ring == nullptr)
          throw gw::dp::SetupError(std::string("cannot create the transmit ring: ") + rte_strerror(rte_errno));
      } catch (const gw::dp::SetupError& e) {
        // A port that does not exist, cannot take the config's queues or
        // descriptors, or memory EAL was not given: restarting cannot fix it.
        status = fail(kExitUsage, e.what());
      }
    }

    if (status == 0) {
      std::atomic<bool> workers_stop{false};
      std::atomic<bool> link_down{false};  // the control lcore watches the port's link
      gw::cp::LinkWatch link_watch(port.port_id, link_down);
      auto first = std::make_unique<gw::dp::DataplaneSnapshot>();
      first->keys = keyring;
      first->key_material = key_material;
      gw::dp::SnapshotExchange snapshots(cfg.lcores.workers.size(), std::move(first));
      gw::dp::WorkerWiring wiring;
      wiring.port = &port;
      wiring.ladder = ladder;
      wiring.snapshots = &snapshots;
      wiring.rings = rings.get();
      wiring.tx_ring = tx_ring;
      wiring.classifier = classifier.get();
      wiring.stop = &workers_stop;
      wiring.link_down = &link_down;
      wiring.idle_exit_tsc = rte_get_tsc_hz() / 1000 * opt.idle_exit_ms;
      wiring.freeze_clock_s = opt.freeze_clock;
      std::vector<const std::atomic<bool>*> done_flags;
      for (std::size_t q = 0; q < cfg.lcores.workers.size(); ++q) {
        try {
          workers.push_back(gw::dp::make_worker(cfg, q, wiring));
        } catch (const gw::dp::SetupError& e) {
          // Nothing serves yet (the listeners start below), so exiting here is clean.
          rte_exit(kExitUsage, "gossipgw: %s\n", e.what());
        }
        done_flags.push_back(&workers.back()->done);
      }
      rings->watch(done_flags);
      // The once-only check over all workers (issue 17): a copy of a datagram
      // that reached two workers is served once.
      try {
        rings->check_once(cfg.limits.replay_senders, cfg.limits.replay_window_s, rte_rdtsc() ^ 0xD6E8FEB86659FD93ULL);
      } catch (const std::exception& e) {
        rte_exit(kExitRuntime, "gossipgw: cannot allocate the control lcore's replay table: %s\n", e.what());
      }

      spdlog::info("cluster '{}' node '{}' on {} port {} ({}), {} worker(s), {} key(s)", cfg.cluster.name,
                   cfg.node.name, port.driver, port.port_id, cfg.node.address + ":" + std::to_string(cfg.node.port),
                   workers.size(), keyring.size());
      // Which code does the AEAD (issue 19): ipsec-mb's AES-256-GCM picks its
      // instruction set from the CPU flags; libsodium runs ChaCha20-Poly1305.
      spdlog::info("suite {}; aes256gcm: {}; chacha20poly1305: {}", gw::cp::suite_text(gw::config::resolve_suite(cfg)),
                   gw::crypto::aes256gcm_impl_name(), gw::crypto::chacha20poly1305_impl_name());
      if (keyring_source != "cluster.keys") {
        char primary_id[9];
        std::snprintf(primary_id, sizeof primary_id, "%08x", keyring.primary()->id());
        spdlog::info("keyring from {} ({} key(s), primary {}); cluster.keys in the config is not used while it exists",
                     keyring_source, keyring.size(), primary_id);
      }
      for (auto& w : workers) rte_eal_remote_launch(gw::dp::run_worker, w.get(), w->lcore);

      gw::dp::TxQueue tx_queue(port.tx_pool, tx_ring, ladder.local.ipv6);
      std::unique_ptr<gw::cp::EngineHost> host;
      if (cfg.membership.enabled) {
        host = std::make_unique<gw::cp::EngineHost>(gw::cp::engine_plan(cfg, engine_config, ladder, snapshots),
                                                    tx_queue, gw::cp::monotonic_ns());
      }

      gw::cp::StopControl stop;
      stop.requested = &g_stop;
      stop.workers_stop = &workers_stop;
      stop.inputs_idle = [&workers, &opt] {
        if (opt.idle_exit_ms == 0) return false;
        for (const auto& w : workers) {
          if (!w->idle.load(std::memory_order_relaxed)) return false;
        }
        return true;
      };
      gw::cp::ControlLoop loop(*rings, gw::cp::loop_plan(cfg, opt.defer_control), host.get());

      // Member events: the configured handler, and the hosts file.
      std::unique_ptr<gw::cp::events::HostsFileWriter> hosts_file;
      if (host != nullptr && !cfg.events.hosts_file.path.empty()) {
        hosts_file = std::make_unique<gw::cp::events::HostsFileWriter>(cfg.events.hosts_file, cfg.node.name,
                                                                       cfg.events.hosts_min_interval_ms);
      }
      bool hosts_dirty = hosts_file != nullptr;  // written once at start (ourselves)
      if (host != nullptr && (event_runner != nullptr || hosts_file != nullptr)) {
        host->set_event_listener([&](const gw::cp::engine::MemberEvent& e) {
          hosts_dirty = true;
          if (event_runner == nullptr) return;
          if (const gw::cp::engine::Member* m = host->engine().member(e.node)) {
            (void)event_runner->submit(e, std::span<const gw::cp::engine::Member>(m, 1));
          } else {
            (void)event_runner->submit(e);
          }
        });
      }

      // Everything the API, the exporters and the snapshots need, on the
      // control lcore. Worker counters are read live: each is one aligned
      // 64-bit word, so a reader sees an old or a new value, never a torn one.
      // The running keyring is kept in control.state_dir (KeyringPersister).
      std::unique_ptr<gw::cp::KeyringPersister> keyring_persister;
      if (!cfg.control.state_dir.empty()) {
        keyring_persister = std::make_unique<gw::cp::KeyringPersister>(cfg.control.state_dir);
      }
      gw::dp::ControlApi* api_ptr = nullptr;
      auto extra_sections = [&]() {
        gw::dp::ExtraSections extra;
        extra.push_back({"snapshots", {{"version", snapshots.current().version}, {"retained", snapshots.retained()}}});
        if (event_runner != nullptr) {
          const auto c = event_runner->counters();
          extra.push_back({"event_handler",
                           {{"submitted", c.submitted},
                            {"coalesced", c.coalesced},
                            {"dropped_queue_full", c.dropped_queue_full},
                            {"dropped_stopped", c.dropped_stopped},
                            {"started", c.started},
                            {"succeeded", c.succeeded},
                            {"failed_exit", c.failed_exit},
                            {"timed_out", c.timed_out},
                            {"spawn_errors", c.spawn_errors}}});
        }
        if (hosts_file != nullptr) {
          const auto& c = hosts_file->counters();
          extra.push_back({"hosts_file",
                           {{"writes", c.writes},
                            {"unchanged", c.unchanged},
                            {"deferred", c.deferred},
                            {"write_errors", c.write_errors},
                            {"skipped_members", c.skipped_members}}});
        }
        if (cfg.metrics.telemetry) extra.push_back({"telemetry", {{"refused", gw::dp::telemetry_refused()}}});
        extra.push_back({"process", {{"start_time_unix", started_unix_s}}});
        extra.push_back(
            {"port", {{"link_up", link_watch.up() ? 1 : 0}, {"link_down_events", link_watch.down_events()}}});
        // The NIC's own counters: what it dropped before any worker saw it.
        rte_eth_stats es{};
        if (rte_eth_stats_get(port.port_id, &es) == 0) {
          extra.push_back({"nic",
                           {{"rx_packets", es.ipackets},
                            {"tx_packets", es.opackets},
                            {"rx_missed", es.imissed},
                            {"rx_errors", es.ierrors},
                            {"rx_nombuf", es.rx_nombuf},
                            {"tx_errors", es.oerrors}}});
        }
        if (keyring_persister != nullptr) {
          extra.push_back({"keyring_state",
                           {{"writes", keyring_persister->counters().writes},
                            {"write_errors", keyring_persister->counters().write_errors}}});
        }
        if (host != nullptr) {
          const auto& hc = host->counters();
          extra.push_back({"key_commands",
                           {{"sent", hc.key_commands_sent},
                            {"applied", hc.key_commands_applied},
                            {"refused", hc.key_commands_refused},
                            {"repeated", hc.key_commands_repeated},
                            {"not_member", hc.key_commands_not_member},
                            {"stale", hc.key_commands_stale},
                            {"results_received", hc.key_results_received},
                            {"results_unsolicited", hc.key_results_unsolicited}}});
        }
        if (api_server != nullptr && api_ptr != nullptr) {
          const auto& sc = api_server->counters();
          const auto& ac = api_ptr->counters();
          extra.push_back({"control_api",
                           {{"connections", sc.connections.load()},
                            {"requests", ac.requests},
                            {"bad_requests", ac.bad_requests},
                            {"failed", ac.failed},
                            {"key_changes", ac.key_changes},
                            {"cluster_key_changes", ac.cluster_key_changes},
                            {"rejected_too_large", sc.rejected_too_large.load()},
                            {"rejected_read", sc.rejected_read.load()},
                            {"evicted", sc.evicted.load()},
                            {"timed_out", sc.timed_out.load()}}});
        }
        return extra;
      };
      auto live_snapshot = [&](bool include_members) {
        std::vector<gw::dp::WorkerStats> live;
        for (const auto& w : workers) {
          live.push_back(
              {w->lcore, w->queue, w->counters, w->tx.counters, classifier ? &classifier->rule_names() : nullptr});
        }
        return gw::dp::counter_snapshot(std::move(live), main_lcore, loop.counters(), tx_queue.counters(), host.get(),
                                        include_members, extra_sections());
      };
      auto live_stats = [&](bool include_members) { return gw::dp::stats_json(live_snapshot(include_members), true); };
      gw::dp::ControlApi::Context api_ctx;
      api_ctx.host = host.get();
      api_ctx.snapshots = &snapshots;
      api_ctx.suite = gw::config::resolve_suite(cfg);
      api_ctx.stats_json = [&] { return live_stats(false); };
      api_ctx.request_stop = [] { g_stop.store(true, std::memory_order_relaxed); };
      api_ctx.logs = log_ring.get();
      gw::cp::InfoSources info;
      info.cfg = &cfg;
      info.config_path = opt.config_path;
      info.config_sha256 = config_digest;
      info.started_unix_s = started_unix_s;
      info.driver = port.driver;
      info.workers = workers.size();
      info.keyring_source = keyring_source;
      info.host = host.get();
      info.snapshots = &snapshots;
      info.rings = rings.get();
      info.tx_ring = tx_ring;
      api_ctx.info_json = [&info] { return gw::cp::info_json(info); };
      gw::dp::ControlApi api(api_ctx);
      api_ptr = &api;
      if (api_server != nullptr) {
        api_server->start();
        spdlog::info("control API on {}", api_server->path());
      }
      if (prometheus != nullptr) {
        prometheus->start();
        spdlog::info("Prometheus metrics on http://{}:{}/metrics", cfg.metrics.prometheus_address, prometheus->port());
      }

      const std::uint64_t metrics_interval_ns = std::uint64_t{cfg.metrics.interval_ms} * 1'000'000ULL;
      std::uint64_t next_metrics_ns = 0;
      // Known members reach the workers' rate limits through a snapshot,
      // republished at most every 100 ms after the membership changed.
      constexpr std::uint64_t kMembersRepublishNs = 100'000'000ULL;
      std::uint64_t members_published_version = 0;
      std::uint64_t next_members_ns = 0;
      const bool export_metrics = cfg.metrics.telemetry || prometheus != nullptr;
      gw::cp::SystemdNotifier systemd;
      const std::string systemd_status = "cluster " + cfg.cluster.name + " node " + cfg.node.name + ": " +
                                         std::to_string(workers.size()) + " worker(s) on port " +
                                         std::to_string(port.port_id);
      loop.set_housekeeping([&](std::uint64_t now) {
        {
          // The once-only table ages on the workers' clock (frozen in pcap cases).
          gw::dp::LadderState clock_now;
          workers.front()->guard.clock.read(rte_rdtsc(), clock_now);
          if (clock_now.have_clock) rings->age_once(clock_now.now_s);
        }
        link_watch.poll(now);
        systemd.poll(now, systemd_status);
        if (api_server != nullptr) {
          api_server->serve_async([&](std::string_view line, const gw::cp::api::ApiServer::Reply& reply) {
            api.handle(line, now, gw::cp::unix_seconds(), reply);
          });
        }
        api.poll(now);
        if (host != nullptr && host->membership_version() != members_published_version && now >= next_members_ns) {
          members_published_version = host->membership_version();
          next_members_ns = now + kMembersRepublishNs;
          snapshots.publish(gw::dp::snapshot_with_members(snapshots.current(), host->engine()));
        }
        if (keyring_persister != nullptr) {
          keyring_persister->sync(snapshots.current().keys, snapshots.current().key_material);
        }
        snapshots.reclaim();
        if (hosts_file != nullptr) {
          if (hosts_dirty) {
            hosts_dirty = false;
            (void)hosts_file->update(host->engine().members(), now);
          } else if (hosts_file->pending()) {
            (void)hosts_file->poll(now);
          }
        }
        if (export_metrics && now >= next_metrics_ns) {
          next_metrics_ns = now + metrics_interval_ns;
          metrics.publish(live_snapshot(false), std::uint64_t{gw::cp::unix_seconds()} * 1000ULL);
        }
      });

      loop.run(stop);  // returns once the leave went out, the workers stopped and the rings drained
      systemd.stopping();
      rte_eal_mp_wait_lcore();
      if (api_server != nullptr) api_server->stop();
      if (host != nullptr) host->set_event_listener({});
      if (event_runner != nullptr) event_runner->stop();  // waits for running handlers, bounded by their timeout

      std::vector<gw::dp::WorkerStats> stats;
      for (const auto& w : workers) {
        stats.push_back(
            {w->lcore, w->queue, w->counters, w->tx.counters, classifier ? &classifier->rule_names() : nullptr});
      }
      const std::string json = gw::dp::stats_json(stats, main_lcore, loop.counters(), tx_queue.counters(), host.get(),
                                                  false, true, extra_sections());
      if (!opt.stats_json.empty() && !gw::dp::write_file_atomically(opt.stats_json, json)) {
        status = fail(kExitRuntime, "--stats-json: cannot write '" + opt.stats_json + "': " + std::strerror(errno));
      }
      spdlog::info("stopped ({})", g_stop.load() ? "signal" : "input idle");
    }
    rings.reset();
    if (tx_ring != nullptr) {
      void* obj = nullptr;
      while (rte_ring_sc_dequeue(tx_ring, &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
      rte_ring_free(tx_ring);
    }
    if (!port.pools.empty()) gw::dp::stop_port(port);
  }
  // EAL leaves its runtime directory (/var/run/dpdk/<file-prefix>) behind;
  // gossipgw runs no secondary processes, so nothing else can need it.
  const std::string runtime_dir = rte_eal_get_runtime_dir();
  rte_eal_cleanup();
  remove_runtime_dir(runtime_dir);
  return status;
}
