#include "control/filter/filter_mode.h"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <span>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>

#include <unistd.h>

#include "base/clock.h"
#include "config/loader.h"
#include "config/ml_keyring.h"
#include "control/filter/filter_worker.h"
#include "dataplane/memberlist/filter_setup.h"
#include "dataplane/memberlist/verdict.h"
#include "dataplane/port.h"
#include "dataplane/start.h"

namespace gw::cp::filter {

namespace ml = dp::ml;

namespace {

// How often the control lcore looks at its flags and counters.
constexpr auto kControlTick = std::chrono::milliseconds(10);
// The transmit pool start_port makes for the native control lcore: filter
// mode sends only what it received, so it keeps the pool small.
constexpr std::uint32_t kUnusedTxMbufs = 256;

std::string mac_text(const std::array<std::uint8_t, 6>& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return buf;
}

std::string port_list_text() {
  std::string out;
  for (std::uint16_t id = 0; id < RTE_MAX_ETHPORTS; ++id) {
    if (!rte_eth_dev_is_valid_port(id)) continue;
    rte_eth_dev_info info{};
    if (!out.empty()) out += ", ";
    out += std::to_string(id);
    if (rte_eth_dev_info_get(id, &info) == 0) out += std::string(" (") + info.driver_name + ")";
  }
  return out.empty() ? "none" : out;
}

// The config's lcores against the ones EAL was given.
void check_lcores(const config::Config& cfg) {
  const unsigned main_lcore = rte_get_main_lcore();
  if (cfg.lcores.control != main_lcore) {
    throw dp::SetupError("lcores.control: " + std::to_string(cfg.lcores.control) + " is not the EAL main lcore " +
                         std::to_string(main_lcore) + " (set it with --main-lcore or the first lcore in -l)");
  }
  for (unsigned lc : cfg.lcores.workers) {
    if (!rte_lcore_is_enabled(lc) || lc == main_lcore) {
      throw dp::SetupError("lcores.workers: lcore " + std::to_string(lc) +
                           " is not an enabled worker lcore in EAL (-l/--lcores)");
    }
  }
}

// Both ports, started, the agent's carrying the NIC's MAC; stopped in
// reverse on every way out.
struct Ports {
  explicit Ports(const config::Config& cfg) {
    const std::uint16_t nic_id = cfg.dataplane.port_id;
    const std::uint16_t agent_id = cfg.memberlist.agent_port_id;
    if (agent_id == nic_id) {
      throw dp::SetupError("memberlist.agent_port_id: " + std::to_string(agent_id) +
                           " is also dataplane.port_id (the NIC); the agent needs its own port, e.g. "
                           "--vdev=net_tap0,iface=gwml0 in the EAL options");
    }
    if (!rte_eth_dev_is_valid_port(agent_id)) {
      throw dp::SetupError("memberlist.agent_port_id: port " + std::to_string(agent_id) +
                           " does not exist (ports: " + port_list_text() +
                           "); give EAL the agent's port, e.g. --vdev=net_tap0,iface=gwml0 (net_tap) or "
                           "--vdev=virtio_user0,path=/dev/vhost-net,iface=gwml0 (virtio_user)");
    }
    dp::PortPlan plan = dp::port_plan(cfg);
    plan.tx_mbufs = kUnusedTxMbufs;
    try {
      nic = dp::start_port(plan);
      nic_started = true;
      plan.port_id = agent_id;
      try {
        agent = dp::start_port(plan);
      } catch (const dp::SetupError& e) {
        throw dp::SetupError(std::string("memberlist.agent_port_id: ") + e.what());
      }
      agent_started = true;
    } catch (...) {
      release();
      throw;
    }
    // Frames pass unchanged both ways: the agent's host must own the NIC's
    // MAC, so it takes frames addressed to it and answers ARP with it.
    rte_ether_addr mac{};
    std::copy(nic.mac.begin(), nic.mac.end(), mac.addr_bytes);
    const int rc = rte_eth_dev_default_mac_addr_set(agent_id, &mac);
    if (rc != 0) {
      release();
      throw dp::SetupError("memberlist.agent_port_id: port " + std::to_string(agent_id) + " (" + agent.driver +
                           ") refused the NIC's MAC " + mac_text(nic.mac) + ": " + rte_strerror(-rc));
    }
    agent.mac = nic.mac;
    if (agent.driver != "net_tap" && agent.driver != "net_virtio_user") {
      spdlog::warn("memberlist.agent_port_id: port {} is {}, not net_tap or virtio_user: the agent must sit behind it",
                   agent_id, agent.driver);
    }
  }
  ~Ports() { release(); }
  Ports(const Ports&) = delete;
  Ports& operator=(const Ports&) = delete;

  void release() noexcept {
    if (agent_started) dp::stop_port(agent);
    if (nic_started) dp::stop_port(nic);
    agent_started = nic_started = false;
  }

  dp::PortState nic;
  dp::PortState agent;
  bool nic_started = false;
  bool agent_started = false;
};

// Everything the workers counted, summed (or one worker's).
struct Totals {
  ml::FilterCounters f;
  FilterIoCounters io;

  void add(const FilterWorker& w) {
    const ml::FilterCounters& c = w.filter->counters();
    for (std::size_t i = 0; i < f.frames.size(); ++i) f.frames[i] += c.frames[i];
    for (std::size_t i = 0; i < f.ml.size(); ++i) f.ml[i] += c.ml[i];
    for (std::size_t i = 0; i < f.opened_by_key.size(); ++i) f.opened_by_key[i] += c.opened_by_key[i];
    f.bytes_to_agent += c.bytes_to_agent;
    f.bytes_to_network += c.bytes_to_network;
    f.bytes_egress_dropped += c.bytes_egress_dropped;
    io.rx_from_network += w.io.rx_from_network;
    io.rx_from_agent += w.io.rx_from_agent;
    io.tx_to_agent += w.io.tx_to_agent;
    io.tx_to_network += w.io.tx_to_network;
    io.tx_full_to_agent += w.io.tx_full_to_agent;
    io.tx_full_to_network += w.io.tx_full_to_network;
    io.multi_segment_in += w.io.multi_segment_in;
    io.multi_segment_out += w.io.multi_segment_out;
    io.rx_bursts += w.io.rx_bursts;
    io.idle_polls += w.io.idle_polls;
  }
};

nlohmann::ordered_json frames_json(const Totals& t) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < ml::kFrameVerdictCount; ++i) j[std::string(ml::kFrameVerdictNames[i])] = t.f.frames[i];
  return j;
}

nlohmann::ordered_json io_json(const FilterIoCounters& io) {
  return {{"rx_from_network", io.rx_from_network},
          {"rx_from_agent", io.rx_from_agent},
          {"tx_to_agent", io.tx_to_agent},
          {"tx_to_network", io.tx_to_network},
          {"rx_bursts", io.rx_bursts},
          {"idle_polls", io.idle_polls}};
}

nlohmann::ordered_json port_json(const dp::PortState& p) {
  nlohmann::ordered_json j = {{"port_id", p.port_id}, {"driver", p.driver}, {"mac", mac_text(p.mac)}};
  rte_eth_stats es{};
  if (rte_eth_stats_get(p.port_id, &es) == 0) {
    j["ipackets"] = es.ipackets;
    j["opackets"] = es.opackets;
    j["imissed"] = es.imissed;
    j["ierrors"] = es.ierrors;
    j["oerrors"] = es.oerrors;
    j["rx_nombuf"] = es.rx_nombuf;
  }
  return j;
}

bool write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return false;
    out << text;
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

MetricFamily family(std::string name, std::string type, std::string help) {
  return MetricFamily{std::move(name), std::move(type), std::move(help), {}, false};
}

std::string label(std::string_view name, std::string_view value) {
  return std::string(name) + "=\"" + std::string(value) + "\"";
}

// Everything that runs once the ports are up, on the control lcore.
class FilterRun {
 public:
  FilterRun(FilterStartup& s, const FilterRunOptions& o, const FilterServices& svc)
      : s_(s),
        o_(o),
        svc_(svc),
        cfg_(s.cfg),
        ports_(cfg_),
        keys_(cfg_.lcores.workers.size(), std::move(s.keyring)),
        watch_(make_watch()) {
    std::mt19937_64 seeds(std::random_device{}());
    for (std::size_t q = 0; q < cfg_.lcores.workers.size(); ++q) {
      auto w = std::make_unique<FilterWorker>();
      w->lcore = cfg_.lcores.workers[q];
      w->nic_port = ports_.nic.port_id;
      w->agent_port = ports_.agent.port_id;
      w->queue = static_cast<std::uint16_t>(q);
      w->burst = std::min<std::uint16_t>(cfg_.dataplane.burst, kMaxFilterBurst);
      w->idle_backoff_us = cfg_.dataplane.idle_backoff_us;
      w->idle_exit_tsc = rte_get_tsc_hz() / 1000 * o_.idle_exit_ms;
      w->keys = &keys_;
      w->reader = q;
      w->stop = &workers_stop_;
      w->filter = std::make_unique<ml::FilterLcore>(*s_.filter, seeds());
      workers_.push_back(std::move(w));
    }
  }

  int run() {
    log_start();
    for (auto& w : workers_) rte_eal_remote_launch(run_filter_worker, w.get(), w->lcore);
    std::uint64_t next_metrics_ns = 0;
    while (!svc_.stop_requested->load(std::memory_order_relaxed) && !inputs_idle()) {
      const std::uint64_t now = base::monotonic_ns();
      const bool forced = svc_.reload_requested != nullptr && svc_.reload_requested->exchange(false);
      watch_keyring(now, forced);
      keys_.reclaim();
      if (svc_.publish && now >= next_metrics_ns) {
        next_metrics_ns = now + std::uint64_t{cfg_.metrics.interval_ms} * 1'000'000ULL;
        svc_.publish(families(), std::uint64_t{base::unix_seconds()} * 1000ULL);
      }
      std::this_thread::sleep_for(kControlTick);
    }
    workers_stop_.store(true, std::memory_order_release);
    rte_eal_mp_wait_lcore();
    keys_.reclaim();

    int status = 0;
    if (!o_.stats_json.empty() && !write_file_atomically(o_.stats_json, stats_json().dump(2) + "\n")) {
      std::fprintf(stderr, "gossipgw: --stats-json: cannot write '%s': %s\n", o_.stats_json.c_str(),
                   std::strerror(errno));
      status = 1;
    }
    spdlog::info("stopped ({})", svc_.stop_requested->load() ? "signal" : "input idle");
    return status;
  }

 private:
  std::unique_ptr<KeyringWatch> make_watch() {
    const std::string& path = cfg_.memberlist.keyring_file;
    if (path.empty()) return nullptr;
    return std::make_unique<KeyringWatch>(config::resolve_path(cfg_, path), load_keyring_file, s_.keyring_stamp,
                                          base::monotonic_ns());
  }

  void log_start() const {
    const ml::Keyring& ring = keys_.current();
    std::string ports;
    for (std::uint16_t p : s_.filter->ports) ports += (ports.empty() ? "" : ",") + std::to_string(p);
    spdlog::info(
        "memberlist filter: NIC port {} ({}), agent port {} ({}), MAC {}, {} worker(s), gossip port(s) {}, "
        "allow-list {} prefix(es){}, plaintext allowed from {} prefix(es), {} key(s){}",
        ports_.nic.port_id, ports_.nic.driver, ports_.agent.port_id, ports_.agent.driver, mac_text(ports_.nic.mac),
        workers_.size(), ports, cfg_.memberlist.allow_cidrs.size(),
        cfg_.memberlist.allow_cidrs.empty() ? " (any source)" : "", cfg_.memberlist.allow_plaintext_cidrs.size(),
        ring.size(), watch_ != nullptr ? " from " + watch_->path() : std::string(" (plaintext cluster)"));
  }

  bool inputs_idle() const {
    if (o_.idle_exit_ms == 0) return false;
    for (const auto& w : workers_) {
      if (!w->idle.load(std::memory_order_relaxed)) return false;
    }
    return true;
  }

  // The agent rewrote its keyring file (serf keys install/use/remove), or SIGHUP.
  void watch_keyring(std::uint64_t now, bool forced) {
    if (watch_ == nullptr) {
      if (forced) spdlog::info("SIGHUP: no memberlist.keyring_file to reload (plaintext cluster)");
      return;
    }
    std::unique_ptr<ml::Keyring> next;
    std::string error;
    switch (watch_->poll(now, forced, &next, &error)) {
      case KeyringWatch::Outcome::kUnchanged:
        return;
      case KeyringWatch::Outcome::kFailed:
        spdlog::error("keyring file {}: {}; keeping the {} key(s) in use", watch_->path(), error,
                      keys_.current().size());
        return;
      case KeyringWatch::Outcome::kLoaded: {
        const std::size_t n = next->size();
        const std::uint64_t version = keys_.publish(std::move(next));
        spdlog::info("keyring file {}: {} key(s) in use (keyring version {}{})", watch_->path(), n, version,
                     forced ? ", SIGHUP" : "");
        return;
      }
    }
  }

  Totals totals() const {
    Totals t;
    for (const auto& w : workers_) t.add(*w);
    return t;
  }

  nlohmann::ordered_json keyring_json() const {
    const KeyringWatch::Counters rc = watch_ != nullptr ? watch_->counters() : KeyringWatch::Counters{};
    return {{"file", watch_ != nullptr ? watch_->path() : std::string()},
            {"keys", keys_.current().size()},
            {"version", keys_.current().version()},
            {"retained", keys_.retained()},
            {"reload", {{"loaded", rc.loaded}, {"failed", rc.failed}}}};
  }

  nlohmann::ordered_json stats_json() const {
    const Totals t = totals();
    nlohmann::ordered_json j;
    j["mode"] = "memberlist";
    j["frames"] = frames_json(t);
    nlohmann::ordered_json mlj = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < ml::kVerdictCount; ++i) mlj[std::string(ml::kVerdictNames[i])] = t.f.ml[i];
    j["ml"] = mlj;
    j["opened_by_key"] = t.f.opened_by_key;
    j["bytes"] = {{"to_agent", t.f.bytes_to_agent},
                  {"to_network", t.f.bytes_to_network},
                  {"egress_dropped", t.f.bytes_egress_dropped}};
    j["tx_full"] = {{"to_agent", t.io.tx_full_to_agent}, {"to_network", t.io.tx_full_to_network}};
    j["multi_segment"] = {{"in", t.io.multi_segment_in}, {"out", t.io.multi_segment_out}};
    j["io"] = io_json(t.io);
    j["keyring"] = keyring_json();
    j["ports"] = {{"nic", port_json(ports_.nic)}, {"agent", port_json(ports_.agent)}};
    nlohmann::ordered_json workers = nlohmann::ordered_json::array();
    for (const auto& w : workers_) {
      Totals one;
      one.add(*w);
      workers.push_back({{"lcore", w->lcore},
                         {"queue", w->queue},
                         {"frames", frames_json(one)},
                         {"tx_full", {{"to_agent", one.io.tx_full_to_agent}, {"to_network", one.io.tx_full_to_network}}},
                         {"multi_segment", {{"in", one.io.multi_segment_in}, {"out", one.io.multi_segment_out}}},
                         {"io", io_json(one.io)}});
    }
    j["workers"] = workers;
    return j;
  }

  // The Prometheus families (docs/filter-mode.md lists them): totals over
  // the workers, one series per verdict, key, direction or outcome.
  std::vector<MetricFamily> families() const {
    const Totals t = totals();
    std::vector<MetricFamily> out;
    MetricFamily frames = family("gossipgw_ml_frames_total", "counter", "Frames by filter verdict (frames)");
    for (std::size_t i = 0; i < ml::kFrameVerdictCount; ++i)
      frames.samples.push_back({label("verdict", ml::kFrameVerdictNames[i]), static_cast<double>(t.f.frames[i]), ""});
    out.push_back(std::move(frames));
    MetricFamily inspected =
        family("gossipgw_ml_inspect_total", "counter", "Gossip UDP packets by memberlist inspector verdict (packets)");
    for (std::size_t i = 0; i < ml::kVerdictCount; ++i)
      inspected.samples.push_back({label("verdict", ml::kVerdictNames[i]), static_cast<double>(t.f.ml[i]), ""});
    out.push_back(std::move(inspected));
    MetricFamily by_key =
        family("gossipgw_ml_opened_by_key_total", "counter", "Packets opened by each keyring index (packets)");
    for (std::size_t i = 0; i < keys_.current().size() && i < t.f.opened_by_key.size(); ++i)
      by_key.samples.push_back({label("key", std::to_string(i)), static_cast<double>(t.f.opened_by_key[i]), ""});
    out.push_back(std::move(by_key));
    MetricFamily bytes = family("gossipgw_ml_bytes_total", "counter", "Gossip UDP bytes by outcome (bytes)");
    bytes.samples.push_back({label("outcome", "to_agent"), static_cast<double>(t.f.bytes_to_agent), ""});
    bytes.samples.push_back({label("outcome", "to_network"), static_cast<double>(t.f.bytes_to_network), ""});
    bytes.samples.push_back({label("outcome", "egress_dropped"), static_cast<double>(t.f.bytes_egress_dropped), ""});
    out.push_back(std::move(bytes));
    MetricFamily full =
        family("gossipgw_ml_tx_full_total", "counter", "Forwarded frames a tx queue did not take, freed (frames)");
    full.samples.push_back({label("direction", "to_agent"), static_cast<double>(t.io.tx_full_to_agent), ""});
    full.samples.push_back({label("direction", "to_network"), static_cast<double>(t.io.tx_full_to_network), ""});
    out.push_back(std::move(full));
    MetricFamily chained =
        family("gossipgw_ml_multi_segment_total", "counter", "Multi-segment frames dropped (frames)");
    chained.samples.push_back({label("direction", "in"), static_cast<double>(t.io.multi_segment_in), ""});
    chained.samples.push_back({label("direction", "out"), static_cast<double>(t.io.multi_segment_out), ""});
    out.push_back(std::move(chained));
    const KeyringWatch::Counters rc = watch_ != nullptr ? watch_->counters() : KeyringWatch::Counters{};
    MetricFamily reload =
        family("gossipgw_ml_keyring_reload_total", "counter", "Keyring file reloads by outcome (reloads)");
    reload.samples.push_back({label("outcome", "loaded"), static_cast<double>(rc.loaded), ""});
    reload.samples.push_back({label("outcome", "failed"), static_cast<double>(rc.failed), ""});
    out.push_back(std::move(reload));
    MetricFamily keys = family("gossipgw_ml_keyring_keys", "gauge", "Keys in the keyring in use (keys)");
    keys.samples.push_back({"", static_cast<double>(keys_.current().size()), ""});
    out.push_back(std::move(keys));
    return out;
  }

  FilterStartup& s_;
  const FilterRunOptions& o_;
  const FilterServices& svc_;
  const config::Config& cfg_;
  Ports ports_;
  ml::KeyringExchange keys_;
  std::unique_ptr<KeyringWatch> watch_;
  std::atomic<bool> workers_stop_{false};
  std::vector<std::unique_ptr<FilterWorker>> workers_;
};

}  // namespace

bool filter_mode(const config::Config& cfg) { return cfg.mode == config::Mode::kMemberlist; }

std::unique_ptr<ml::Keyring> load_keyring_file(const std::string& path, std::string* error) {
  std::string warning;
  std::optional<config::MlKeys> keys = config::load_ml_keyring(path, error, &warning);
  if (!keys) return nullptr;
  if (!warning.empty()) spdlog::warn("{}", warning);
  std::vector<std::span<const std::uint8_t>> views(keys->begin(), keys->end());
  std::string why;
  std::unique_ptr<ml::Keyring> ring = ml::Keyring::make(views, &why);
  for (std::vector<std::uint8_t>& k : *keys) std::fill(k.begin(), k.end(), std::uint8_t{0});  // expanded copies only
  if (ring == nullptr) *error = "'" + path + "': " + why;
  return ring;
}

std::unique_ptr<FilterStartup> load_filter_startup(config::Config cfg, const std::string& config_path) {
  auto s = std::make_unique<FilterStartup>();
  s->cfg = std::move(cfg);
  s->config_path = config_path;
  s->started_unix_s = base::unix_seconds();
  std::string error;
  std::optional<ml::FilterConfig> filter = ml::make_filter_config(s->cfg, &error);
  if (!filter) throw std::runtime_error(error);
  s->filter = std::make_unique<ml::FilterConfig>(std::move(*filter));
  // Stamped before it is read: a rewrite in between is seen as a change.
  if (!s->cfg.memberlist.keyring_file.empty())
    s->keyring_stamp = stamp_file(config::resolve_path(s->cfg, s->cfg.memberlist.keyring_file));
  std::string warning;
  s->keyring = ml::load_filter_keyring(s->cfg, &error, &warning);  // empty: a plaintext cluster
  if (s->keyring == nullptr) throw std::runtime_error(error);
  if (!warning.empty()) spdlog::warn("memberlist.keyring_file: {}", warning);
  return s;
}

int run_filter(FilterStartup& s, const FilterRunOptions& o, const FilterServices& svc) {
  check_lcores(s.cfg);
  FilterRun run(s, o, svc);
  return run.run();
}

}  // namespace gw::cp::filter
