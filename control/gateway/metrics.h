// Counter export. The control lcore publishes, every metrics.interval_ms, the
// families of a snapshot of the counters (the same walk over the same
// descriptions that writes the stats JSON: counter_table.h); the exporters
// only ever read the latest publication, so neither a scrape nor a telemetry
// request touches a worker or the engine.
//
//   Prometheus text:  http://127.0.0.1:PORT/metrics   (metrics.prometheus_port)
//   DPDK telemetry:   /gossipgw/totals, /gossipgw/metrics[,PAGE], /gossipgw/info
//                     (dpdk-telemetry.py -f FILE_PREFIX)
//
// Metric names, types, units and help are fixed in counter_table.cc and
// listed in docs/metrics.md; they are stable.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "control/gateway/counter_table.h"
#include "control/gateway/metric_family.h"

namespace gw::cp {

// One number per family, as DPDK telemetry's /gossipgw/totals gives it: the
// sum over its series (per-lcore and per-class counters add up), except a
// histogram (its count) and a gauge of maxima (the largest).
std::vector<std::pair<std::string, double>> family_totals(const std::vector<MetricFamily>& families);

// The families of a snapshot: every counter of its stats JSON but the sums of
// per-lcore series, in the document's order.
std::vector<MetricFamily> metric_families(const CounterSnapshot& snapshot);

// Prometheus text exposition format 0.0.4.
std::string prometheus_text(const std::vector<MetricFamily>& families);

// The latest publication, shared by the exporters.
class MetricsPublisher {
 public:
  // Control lcore: builds the families from a snapshot and swaps them in.
  // Not on any worker's path.
  void publish(const CounterSnapshot& snapshot, std::uint64_t unix_ms);
  // The same for families built elsewhere (filter mode's counters).
  void publish_families(std::vector<MetricFamily> families, std::uint64_t unix_ms);
  // Main thread, before the first publish: gossipgw_build_info{version,commit} 1.
  void set_build_info(const std::string& version, const std::string& commit);

  struct View {
    std::shared_ptr<const std::vector<MetricFamily>> families;
    std::shared_ptr<const std::string> text;  // Prometheus text
    std::uint64_t published_unix_ms = 0;
    std::uint64_t publications = 0;
  };
  View latest() const;

 private:
  mutable std::mutex mu_;
  View view_;
  MetricFamily build_info_;
};

// Why `address`:`port` cannot be listened on, in words (the kernel's reason
// and what to do), found by trying the same bind.
std::string bind_failure(const std::string& address, std::uint16_t port);
// The same words for an errno that bind() or listen() on `address`:`port`
// gave (PrometheusServer's constructor reports it so).
std::string bind_error_text(int err, const std::string& address, std::uint16_t port);

// Serves GET /metrics from `publisher` on its own thread. The constructor
// only binds (throws std::runtime_error if the address cannot be bound), so a
// taken port is reported before anything runs; start() launches the thread
// once the gateway is known good. The destructor always returns, whether or
// not start() was called and however soon after it.
//
// Bounded like the control socket (issue 51 item 9): one poll loop serves
// up to kMaxConnections connections at once, each with a deadline for its
// whole request (kRequestTimeoutMs from accept) and for its whole answer
// (kWriteTimeoutMs); a new connection when all slots are taken closes the
// oldest one (one still sending its request first), so slow or idle
// clients cannot keep a scraper out. One request per connection
// (Connection: close). prometheus_server.cc.
class PrometheusServer {
 public:
  static constexpr std::size_t kMaxConnections = 64;
  static constexpr int kRequestTimeoutMs = 1000;
  static constexpr int kWriteTimeoutMs = 5000;
  static constexpr std::size_t kMaxRequestBytes = 8192;

  struct Counters {
    std::atomic<std::uint64_t> connections{0};
    std::atomic<std::uint64_t> scrapes{0};      // GET /metrics answered
    std::atomic<std::uint64_t> timed_out{0};    // closed at a deadline
    std::atomic<std::uint64_t> evicted{0};      // closed to make room for a newer connection
    std::atomic<std::uint64_t> bad_request{0};  // not a GET we serve, or too large
  };

  PrometheusServer(const MetricsPublisher& publisher, const std::string& address, std::uint16_t port);
  ~PrometheusServer();
  // Main thread: starts serving.
  void start();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  const Counters& counters() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::uint16_t port_ = 0;
};

// What the Prometheus endpoint makes of a request's head (its request line:
// METHOD SP TARGET SP VERSION; the query string ignored). Pure, for the
// server and the fuzzer (tests/fuzz/fuzz_http_request.cc).
struct HttpAsk {
  enum class What : std::uint8_t { kMetrics, kRoot, kNotFound, kBadMethod };
  What what = What::kBadMethod;
  bool head_only = false;  // HEAD: the headers without the body
};
HttpAsk parse_http_request(std::string_view head) noexcept;

// The name a series has in DPDK telemetry, which accepts only [A-Za-z0-9_/]
// in names: the family, then each label as "/name/value", e.g.
// gossipgw_verdict_packets_total/lcore/1/queue/0/verdict/accepted. Label
// values are [a-z0-9_] already (lcore and queue numbers, counter and rule
// names); any other byte would become '_'. Empty if longer than the library's
// RTE_TEL_MAX_STRING_LEN - 1.
std::string telemetry_name(const MetricFamily& family, const MetricSample& sample);

// Series the telemetry library refused to add (should stay 0), since start.
std::uint64_t telemetry_refused();

// Registers the /gossipgw/* telemetry commands, reading from `publisher`
// (which must outlive EAL cleanup). Returns false if registration failed.
bool register_telemetry(const MetricsPublisher* publisher, std::string node_name);

}  // namespace gw::cp
