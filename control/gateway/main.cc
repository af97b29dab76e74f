// gossipgw [EAL options] -- --config FILE [--stats-json PATH] [--idle-exit-ms N]
//
// `mode: memberlist` in the config runs filter mode instead (control/filter/).
//
// The composition root: validate options and config before EAL starts, bring
// up the port, launch one worker per rx queue, run the control loop on the
// main lcore, write counters on the way out.
#include <rte_eal.h>
#include <rte_errno.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "config/loader.h"
#include "control/filter/filter_mode.h"
#include "control/gateway/gateway.h"
#include "dataplane/port.h"
#include "control/gateway/metrics.h"
#include "control/host/events/event_runner.h"
#include "control/host/log_ring.h"
#include "control/version.h"
#include "crypto/keys.h"

namespace {

using gw::cp::kExitRuntime;
using gw::cp::kExitUsage;

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

// SIGHUP in filter mode: read the keyring file now (control/filter/).
std::atomic<bool> g_reload{false};

void on_reload(int) { g_reload.store(true, std::memory_order_relaxed); }

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

// Only a directory named like EAL's own (.../dpdk/<prefix>) is removed.
void remove_runtime_dir(const std::string& dir) {
  const std::filesystem::path p(dir);
  if (dir.empty() || !p.has_parent_path() || p.parent_path().filename() != "dpdk") return;
  std::error_code ec;
  std::filesystem::remove_all(p, ec);
}

int fail(int status, const std::string& message) {
  std::fprintf(stderr, "gossipgw: %s\n", message.c_str());
  return status;
}

struct AppOptions {
  std::vector<char*> eal_argv;  // before "--"
  std::string config_path;
  std::string log_level;
  gw::cp::RunOptions run;
};

constexpr const char* kUsage =
    "usage: gossipgw [EAL options] -- --config FILE [--stats-json PATH] [--idle-exit-ms N]\n"
    "\n"
    "EAL options come first (DPDK convention), e.g. without a NIC or hugepages:\n"
    "  gossipgw -l 0,1 --no-huge -m 512 --no-pci --file-prefix=gw1 \\\n"
    "      --vdev=net_pcap0,rx_pcap=in.pcap -- --config gossipgw.yaml --idle-exit-ms 500\n"
    "Run 'gossipgw -- --help' for the gateway's own options, 'gossipgw --version' for the version.\n";

// --version, --help and the gateway's options after "--". Returns the exit
// status when there is nothing more to do (a version, a help text, a usage
// error), nothing when the gateway should start.
std::optional<int> parse_options(int argc, char** argv, AppOptions& opt) {
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

  CLI::App app{"gossipgw: a userspace gossip gateway on DPDK", "gossipgw [EAL options] --"};
  app.add_option("--config", opt.config_path, "gateway YAML config")->required()->check(CLI::ExistingFile);
  app.add_option("--stats-json", opt.run.stats_json, "write all counters as JSON to PATH on exit");
  app.add_option("--idle-exit-ms", opt.run.idle_exit_ms,
                 "exit once no packet has arrived for N ms (0: never); for finite inputs such as pcap files")
      ->check(CLI::Range(0u, 3'600'000u));
  app.add_option("--log-level", opt.log_level, "override log.level from the config")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.add_flag("--defer-control", opt.run.defer_control,
               "testing aid: the control lcore drains only after the workers stop (needs --idle-exit-ms)");
  app.add_option("--freeze-clock", opt.run.freeze_clock_s,
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
  if (opt.run.defer_control && opt.run.idle_exit_ms == 0) {
    return fail(kExitUsage, "--defer-control needs --idle-exit-ms, or the control lcore would never drain");
  }
  opt.eal_argv.assign(argv, argv + split);
  return std::nullopt;
}

// Logs go to stderr (stdout is for what a command is asked to print) and
// into a ring of recent lines for `gossipctl monitor`.
std::shared_ptr<gw::cp::LogRing> install_logger(const std::string& level) {
  auto log_ring = std::make_shared<gw::cp::LogRing>();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "gossipgw", spdlog::sinks_init_list{std::make_shared<spdlog::sinks::stderr_color_sink_mt>(), log_ring}));
  spdlog::set_level(spdlog::level::from_str(level));
  return log_ring;
}

// The EAL file prefix the arguments ask for ("rte" by default); empty when
// EAL keeps no shared files (--in-memory, --no-shconf).
std::string eal_file_prefix(const std::vector<char*>& eal_argv) {
  std::string prefix = "rte";
  for (std::size_t i = 1; i < eal_argv.size(); ++i) {
    const std::string a = eal_argv[i];
    if (a == "--in-memory" || a == "--no-shconf") return {};
    if (a == "--file-prefix" && i + 1 < eal_argv.size()) {
      prefix = eal_argv[++i];
    } else if (a.rfind("--file-prefix=", 0) == 0) {
      prefix = a.substr(std::strlen("--file-prefix="));
    }
  }
  return prefix;
}

// The process holding the lock on the file prefix's EAL config file, as
// EAL names the directory (root: /var/run/dpdk/PREFIX; others:
// $XDG_RUNTIME_DIR/dpdk/PREFIX, else /tmp/dpdk/PREFIX); 0 if nobody does.
pid_t file_prefix_holder(const std::string& prefix) {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  const std::string base = getuid() == 0 ? "/var/run" : (xdg != nullptr ? xdg : "/tmp");
  const std::string config = base + "/dpdk/" + prefix + "/config";
  const int fd = open(config.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct flock lk {};
  lk.l_type = F_WRLCK;
  lk.l_whence = SEEK_SET;  // the whole file: EAL locks a range of it
  const pid_t holder = fcntl(fd, F_GETLK, &lk) == 0 && lk.l_type != F_UNLCK ? lk.l_pid : 0;
  close(fd);
  return holder;
}

// Returns 0, or the exit status after EAL refused its options.
int start_eal(std::vector<char*>& eal_argv) {
  if (rte_eal_init(static_cast<int>(eal_argv.size()), eal_argv.data()) >= 0) return 0;
  // EAL prints its usage to stdout, which a pipe (the journal) buffers
  // until exit: flush it first so our one line is the last one.
  const int eal_errno = rte_errno;
  std::fflush(stdout);
  // A second primary process on one file prefix: EAL only logs it and
  // leaves rte_errno 0 ("Success"), so say it ourselves.
  const std::string prefix = eal_file_prefix(eal_argv);
  if (const pid_t holder = prefix.empty() ? 0 : file_prefix_holder(prefix); holder > 0) {
    return fail(kExitUsage, "EAL file prefix '" + prefix + "' is in use by process " + std::to_string(holder) +
                                " (another gossipgw with the same node.name, or the same --file-prefix): stop it, "
                                "or give this one its own --file-prefix");
  }
  return fail(kExitUsage, "EAL initialisation failed" +
                              (eal_errno != 0 ? std::string(": ") + rte_strerror(eal_errno) : std::string()) +
                              " (EAL options come before '--'; see the lines above)");
}

// mode: memberlist (control/filter/filter_mode.h): the same options, the
// same order (every file checked before EAL), another composition root.
int run_filter_mode(AppOptions& opt, gw::config::Config cfg) {
  namespace filter = gw::cp::filter;
  if (opt.run.defer_control || opt.run.freeze_clock_s != 0) {
    return fail(kExitUsage, "--defer-control and --freeze-clock are native-mode test aids; mode: memberlist takes neither");
  }
  auto log_ring = install_logger(opt.log_level.empty() ? cfg.log.level : opt.log_level);
  std::unique_ptr<filter::FilterStartup> startup;
  try {
    startup = filter::load_filter_startup(std::move(cfg), opt.config_path);
  } catch (const std::exception& e) {
    return fail(kExitUsage, e.what());
  }
  const gw::config::Config& c = startup->cfg;
  static gw::cp::MetricsPublisher metrics;  // read by telemetry callbacks until EAL cleanup
  metrics.set_build_info(GW_VERSION, GW_COMMIT);

  if (const int refused = start_eal(opt.eal_argv)) return refused;
  install_signal_handlers(kStopMarginS);
  struct sigaction hup {};
  hup.sa_handler = on_reload;
  sigemptyset(&hup.sa_mask);
  sigaction(SIGHUP, &hup, nullptr);
  if (c.metrics.telemetry && !gw::cp::register_telemetry(&metrics, c.node.name)) {
    spdlog::warn("DPDK telemetry: could not register /gossipgw/* commands (is telemetry disabled?)");
  }

  int status = 0;
  try {
    std::unique_ptr<gw::cp::PrometheusServer> prometheus;
    if (c.metrics.prometheus_port != 0) {
      try {
        prometheus = std::make_unique<gw::cp::PrometheusServer>(metrics, c.metrics.prometheus_address,
                                                                c.metrics.prometheus_port);
      } catch (const std::exception& e) {
        throw gw::dp::SetupError(e.what());
      }
      prometheus->start();
      spdlog::info("Prometheus metrics on http://{}:{}/metrics", c.metrics.prometheus_address, prometheus->port());
    }
    filter::FilterServices svc;
    svc.stop_requested = &g_stop;
    svc.reload_requested = &g_reload;
    if (prometheus != nullptr || c.metrics.telemetry) {
      svc.publish = [](std::vector<gw::cp::MetricFamily> families, std::uint64_t unix_ms) {
        metrics.publish_families(std::move(families), unix_ms);
      };
    }
    filter::FilterRunOptions run{opt.run.stats_json, opt.run.idle_exit_ms};
    status = filter::run_filter(*startup, run, svc);
  } catch (const gw::dp::SetupError& e) {
    status = fail(kExitUsage, e.what());
  }
  const std::string runtime_dir = rte_eal_get_runtime_dir();
  rte_eal_cleanup();
  remove_runtime_dir(runtime_dir);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  AppOptions opt;
  if (const std::optional<int> done = parse_options(argc, argv, opt)) return *done;

  // Everything that can be wrong with the files is found before EAL starts.
  if (!gw::crypto::init()) return fail(kExitRuntime, "libsodium failed to initialise");
  // `mode:` decides which composition root runs (native below, or filter mode).
  {
    gw::config::Config peek;
    try {
      peek = gw::config::load_config(opt.config_path);
    } catch (const std::exception& e) {
      return fail(kExitUsage, e.what());
    }
    if (gw::cp::filter::filter_mode(peek)) return run_filter_mode(opt, std::move(peek));
  }
  gw::cp::Startup startup;
  try {
    startup = gw::cp::load_startup(opt.config_path, opt.run.freeze_clock_s);
  } catch (const std::exception& e) {
    return fail(kExitUsage, e.what());
  }
  const gw::config::Config& cfg = startup.cfg;
  auto log_ring = install_logger(opt.log_level.empty() ? cfg.log.level : opt.log_level);

  // Telemetry callbacks read it until EAL cleanup: it lives as long as main.
  static gw::cp::MetricsPublisher metrics;
  metrics.set_build_info(GW_VERSION, GW_COMMIT);

  // Event handlers run from their own thread, started before EAL pins this
  // one to the control lcore's CPU, so handlers never run on an lcore's CPU
  // by inheritance.
  std::unique_ptr<gw::cp::events::EventRunner> event_runner;
  if (cfg.membership.enabled && !cfg.events.handler.empty()) {
    event_runner = std::make_unique<gw::cp::events::EventRunner>(cfg.events, cfg.node.name, cfg.cluster.name);
  }

  if (const int refused = start_eal(opt.eal_argv)) return refused;
  install_signal_handlers(cfg.membership.leave_timeout_ms / 1000 + 1 + kStopMarginS);
  if (cfg.metrics.telemetry && !gw::cp::register_telemetry(&metrics, cfg.node.name)) {
    spdlog::warn("DPDK telemetry: could not register /gossipgw/* commands (is telemetry disabled?)");
  }

  int status = 0;
  try {
    status = gw::cp::run_gateway(startup, opt.run, {&g_stop, &metrics, log_ring.get(), event_runner.get()});
  } catch (const gw::cp::StartError& e) {
    status = fail(e.status, e.what());
  }
  // EAL leaves its runtime directory (/var/run/dpdk/<file-prefix>) behind;
  // gossipgw runs no secondary processes, so nothing else can need it.
  const std::string runtime_dir = rte_eal_get_runtime_dir();
  rte_eal_cleanup();
  remove_runtime_dir(runtime_dir);
  return status;
}
