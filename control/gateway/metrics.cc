#include "control/gateway/metrics.h"

#include <rte_telemetry.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>

namespace gw::cp {
namespace {

class Builder final : public CounterVisitor {
 public:
  void open(std::string_view) override {}
  void open_array(std::string_view) override {}
  void close() override {}
  void text(std::string_view, std::string_view) override {}
  void number(std::string_view, std::uint64_t) override {}
  void counter(std::string_view, std::uint64_t, const Series& s) override {
    const std::string name(s.family->name);
    auto it = index_.find(name);
    if (it == index_.end()) {
      it = index_.emplace(name, families_.size()).first;
      families_.push_back({name, std::string(s.family->type), std::string(s.family->help), {}, s.family->maximum});
    }
    families_[it->second].samples.push_back({s.labels, s.value, std::string(s.suffix)});
  }
  std::vector<MetricFamily> take() { return std::move(families_); }

 private:
  std::vector<MetricFamily> families_;
  std::map<std::string, std::size_t> index_;
};

}  // namespace

std::string bind_failure(const std::string& address, std::uint16_t port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  int family = AF_INET;
  if (auto* a4 = reinterpret_cast<sockaddr_in*>(&ss); ::inet_pton(AF_INET, address.c_str(), &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons(port);
    len = sizeof(sockaddr_in);
  } else if (auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
             ::inet_pton(AF_INET6, address.c_str(), &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(port);
    len = sizeof(sockaddr_in6);
    family = AF_INET6;
  } else {
    return "not an IPv4 or IPv6 address (metrics.prometheus_address)";
  }
  // The same bind the listener does (SO_REUSEADDR, as PrometheusServer
  // sets it), to learn the kernel's reason.
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string("socket(): ") + std::strerror(errno);
  const int one = 1;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int err = 0;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    err = errno;
  } else if (::listen(fd, 1) != 0) {
    err = errno;
  }
  ::close(fd);
  if (err == 0) return "the listener failed, but the port can be bound now (try again)";
  return bind_error_text(err, address, port);
}

std::string bind_error_text(int err, const std::string& address, std::uint16_t port) {
  switch (err) {
    case EADDRINUSE:
      return std::string(std::strerror(err)) +
             ": another process listens there (ss -ltnp 'sport = :" + std::to_string(port) +
             "'); choose another metrics.prometheus_port";
    case EACCES:
      return std::string(std::strerror(err)) + ": ports below 1024 need CAP_NET_BIND_SERVICE; use a higher port";
    case EADDRNOTAVAIL:
      return std::string(std::strerror(err)) + ": no interface of this host has the address " + address;
    default:
      return std::strerror(err);
  }
}

std::vector<MetricFamily> metric_families(const CounterSnapshot& snapshot) {
  Builder b;
  walk_counters(snapshot, b);
  return b.take();
}

std::vector<std::pair<std::string, double>> family_totals(const std::vector<MetricFamily>& families) {
  std::vector<std::pair<std::string, double>> out;
  out.reserve(families.size());
  for (const MetricFamily& f : families) {
    double total = 0;
    for (const MetricSample& s : f.samples) {
      if (f.type == "histogram") {
        // Its buckets and sum do not add up: its total is its count.
        if (s.suffix == "_count") total = s.value;
      } else if (f.maximum) {
        total = std::max(total, s.value);
      } else {
        total += s.value;
      }
    }
    out.emplace_back(f.name, total);
  }
  return out;
}

std::string prometheus_text(const std::vector<MetricFamily>& families) {
  std::string out;
  char num[64];
  for (const MetricFamily& f : families) {
    out += "# HELP " + f.name + " " + f.help + "\n";
    out += "# TYPE " + f.name + " " + f.type + "\n";
    for (const MetricSample& s : f.samples) {
      out += f.name + s.suffix;
      if (!s.labels.empty()) out += "{" + s.labels + "}";
      if (std::floor(s.value) == s.value && std::fabs(s.value) < 1e18) {
        std::snprintf(num, sizeof num, " %.0f\n", s.value);
      } else {
        std::snprintf(num, sizeof num, " %.17g\n", s.value);
      }
      out += num;
    }
  }
  return out;
}

void MetricsPublisher::set_build_info(const std::string& version, const std::string& commit) {
  std::lock_guard<std::mutex> lock(mu_);
  build_info_ = MetricFamily{"gossipgw_build_info",
                             "gauge",
                             "Always 1: the version and git commit of the binary",
                             {{"version=\"" + version + "\",commit=\"" + commit + "\"", 1, ""}}};
  for (char& c : build_info_.samples[0].labels) {
    if (c == '\\' || c == '\n') c = '_';  // keep the exposition format valid whatever git says
  }
}

void MetricsPublisher::publish(const CounterSnapshot& snapshot, std::uint64_t unix_ms) {
  publish_families(metric_families(snapshot), unix_ms);
}

void MetricsPublisher::publish_families(std::vector<MetricFamily> built, std::uint64_t unix_ms) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!build_info_.name.empty()) built.push_back(build_info_);
  }
  auto fams = std::make_shared<const std::vector<MetricFamily>>(std::move(built));
  auto text = std::make_shared<const std::string>(prometheus_text(*fams));
  std::lock_guard<std::mutex> lock(mu_);
  view_.families = std::move(fams);
  view_.text = std::move(text);
  view_.published_unix_ms = unix_ms;
  ++view_.publications;
}

MetricsPublisher::View MetricsPublisher::latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return view_;
}

namespace {

const MetricsPublisher* g_publisher = nullptr;  // set once, before EAL serves telemetry
std::string g_node;

constexpr int kPageEntries = RTE_TEL_MAX_DICT_ENTRIES;

std::atomic<std::uint64_t> g_refused{0};

bool tel_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '/';
}

// One value under `name`: whole non-negative numbers as u64 (every counter
// and gauge today), anything else as its decimal text. The library's return
// value is checked (it refuses bad names with -EINVAL and truncates with E2BIG).
bool tel_add(rte_tel_data* d, const std::string& name, double value) {
  int rc = 0;
  if (value >= 0 && std::floor(value) == value && value < 1.8e19) {
    rc = rte_tel_data_add_dict_u64(d, name.c_str(), static_cast<std::uint64_t>(value));
  } else {
    char num[64];
    std::snprintf(num, sizeof num, "%.17g", value);
    rc = rte_tel_data_add_dict_string(d, name.c_str(), num);
  }
  if (rc != 0) g_refused.fetch_add(1, std::memory_order_relaxed);
  return rc == 0;
}

int tel_metrics(const char*, const char* params, rte_tel_data* d) {
  const MetricsPublisher::View v = g_publisher->latest();
  rte_tel_data_start_dict(d);
  if (!v.families) return 0;
  long page = 0;
  if (params != nullptr && *params != '\0') {
    char* end = nullptr;
    page = std::strtol(params, &end, 10);
    if (end == params || *end != '\0' || page < 0) return -EINVAL;
  }
  // Two entries of every page are ours: _pages and _publication.
  constexpr long kPerPage = kPageEntries - 2;
  long index = 0;
  const long first = page * kPerPage;
  long total = 0;
  for (const MetricFamily& f : *v.families) total += static_cast<long>(f.samples.size());
  for (const MetricFamily& f : *v.families) {
    for (const MetricSample& s : f.samples) {
      const long at = index++;
      if (at < first || at >= first + kPerPage) continue;
      const std::string name = telemetry_name(f, s);
      if (name.empty()) {
        g_refused.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      (void)tel_add(d, name, s.value);
    }
  }
  const long pages = (total + kPerPage - 1) / kPerPage;
  rte_tel_data_add_dict_u64(d, "_pages", static_cast<std::uint64_t>(pages));
  // Which publication this page is from: a reader paging through compares it.
  rte_tel_data_add_dict_u64(d, "_publication", v.publications);
  return 0;
}

int tel_totals(const char*, const char*, rte_tel_data* d) {
  const MetricsPublisher::View v = g_publisher->latest();
  rte_tel_data_start_dict(d);
  if (!v.families) return 0;
  // One number per family (family_totals).
  int added = 0;
  for (const auto& [name, total] : family_totals(*v.families)) {
    if (added >= kPageEntries) break;
    if (tel_add(d, name, total)) ++added;
  }
  return 0;
}

int tel_info(const char*, const char*, rte_tel_data* d) {
  const MetricsPublisher::View v = g_publisher->latest();
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "node", g_node.c_str());
  rte_tel_data_add_dict_u64(d, "published_unix_ms", v.published_unix_ms);
  rte_tel_data_add_dict_u64(d, "publications", v.publications);
  rte_tel_data_add_dict_u64(d, "series_refused", telemetry_refused());
  return 0;
}

}  // namespace

std::string telemetry_name(const MetricFamily& family, const MetricSample& sample) {
  std::string name = family.name + sample.suffix;
  // labels: a="x",b="y" (values never hold quotes: see the header).
  const std::string& l = sample.labels;
  std::size_t pos = 0;
  while (pos < l.size()) {
    const std::size_t eq = l.find('=', pos);
    if (eq == std::string::npos) break;
    const std::size_t open = eq + 1;
    const std::size_t close = l.find('"', open + 1);
    if (open >= l.size() || l[open] != '"' || close == std::string::npos) break;
    name += "/" + l.substr(pos, eq - pos) + "/" + l.substr(open + 1, close - open - 1);
    pos = close + 1;
    if (pos < l.size() && l[pos] == ',') ++pos;
  }
  for (char& c : name) {
    if (!tel_name_char(c)) c = '_';
  }
  if (name.size() >= RTE_TEL_MAX_STRING_LEN) return {};
  return name;
}

std::uint64_t telemetry_refused() { return g_refused.load(std::memory_order_relaxed); }

bool register_telemetry(const MetricsPublisher* publisher, std::string node_name) {
  g_publisher = publisher;
  g_node = std::move(node_name);
  int rc = rte_telemetry_register_cmd(
      "/gossipgw/metrics", tel_metrics,
      "Every gossipgw series, one entry each, named family/label/value/...; param: page (0.._pages-1)");
  rc |= rte_telemetry_register_cmd("/gossipgw/totals", tel_totals,
                                   "Every gossipgw metric family summed over its series (lcores, classes, ...)");
  rc |= rte_telemetry_register_cmd("/gossipgw/info", tel_info, "Node name and when counters were last published");
  return rc == 0;
}

}  // namespace gw::cp
