// The Prometheus endpoint's server loop (metrics.h, PrometheusServer): one
// thread, one poll() over the listener, a wake-up eventfd and at most
// kMaxConnections connections, each with deadlines. cpp-httplib, used
// before, gave every accepted connection a pool thread for as long as the
// client kept it (its read timeout per request, keep-alive between them) and
// queued the rest without bound: 16 slow clients made scrapes time out, and
// 3,000 idle connections made every scrape fail (issue 51 item 9).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <list>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "control/gateway/metrics.h"

namespace gw::cp {
namespace {

std::uint64_t now_ms() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

std::string response(int status, std::string_view reason, std::string_view type, std::size_t length) {
  std::string h = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\n";
  h += "Content-Type: " + std::string(type) + "\r\n";
  h += "Content-Length: " + std::to_string(length) + "\r\n";
  h += "Connection: close\r\n\r\n";
  return h;
}

}  // namespace

HttpAsk parse_http_request(std::string_view head) noexcept {
  const std::size_t eol = head.find('\n');
  std::string_view line = head.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const std::size_t sp1 = line.find(' ');
  const std::string_view method = line.substr(0, sp1);
  std::string_view target;
  if (sp1 != std::string_view::npos) {
    target = line.substr(sp1 + 1);
    target = target.substr(0, target.find(' '));
    target = target.substr(0, target.find('?'));
  }
  HttpAsk a;
  a.head_only = method == "HEAD";
  if (method != "GET" && !a.head_only) {
    a.what = HttpAsk::What::kBadMethod;
  } else if (target == "/metrics") {
    a.what = HttpAsk::What::kMetrics;
  } else if (target == "/") {
    a.what = HttpAsk::What::kRoot;
  } else {
    a.what = HttpAsk::What::kNotFound;
  }
  return a;
}

struct PrometheusServer::Impl {
  struct Conn {
    int fd = -1;
    std::uint64_t accepted_ms = 0;
    std::uint64_t deadline_ms = 0;
    bool writing = false;
    std::string in;
    std::string head;                         // status line and headers (or a whole small answer)
    std::shared_ptr<const std::string> body;  // the publication's text, shared, not copied
    std::size_t sent = 0;                     // of head, then of body
  };

  const MetricsPublisher& publisher;
  int listen_fd = -1;
  int wake_fd = -1;
  std::thread thread;
  std::atomic<bool> stopping{false};
  Counters counters;
  std::list<Conn> conns;  // oldest first

  explicit Impl(const MetricsPublisher& p) : publisher(p) {}
  ~Impl() {
    for (Conn& c : conns) ::close(c.fd);
    if (listen_fd >= 0) ::close(listen_fd);
    if (wake_fd >= 0) ::close(wake_fd);
  }

  void close_conn(std::list<Conn>::iterator it) {
    ::close(it->fd);
    conns.erase(it);
  }

  // Room for one more: the oldest connection still sending its request
  // goes first, else the oldest of all.
  void make_room() {
    if (conns.size() < kMaxConnections) return;
    auto victim = std::find_if(conns.begin(), conns.end(), [](const Conn& c) { return !c.writing; });
    if (victim == conns.end()) victim = conns.begin();
    counters.evicted.fetch_add(1, std::memory_order_relaxed);
    close_conn(victim);
  }

  void accept_all() {
    for (;;) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or an error for that one connection (EMFILE: served again next pass)
      make_room();
      counters.connections.fetch_add(1, std::memory_order_relaxed);
      Conn c;
      c.fd = fd;
      c.accepted_ms = now_ms();
      c.deadline_ms = c.accepted_ms + kRequestTimeoutMs;
      conns.push_back(std::move(c));
    }
  }

  void answer(Conn& c) {
    const HttpAsk ask = parse_http_request(c.in);
    c.writing = true;
    c.deadline_ms = now_ms() + kWriteTimeoutMs;
    const auto small = [&](int status, std::string_view reason, const std::string& text) {
      c.head = response(status, reason, "text/plain", text.size()) + (ask.head_only ? "" : text);
    };
    switch (ask.what) {
      case HttpAsk::What::kBadMethod:
        counters.bad_request.fetch_add(1, std::memory_order_relaxed);
        small(405, "Method Not Allowed", "only GET\n");
        return;
      case HttpAsk::What::kRoot:
        small(200, "OK", "gossipgw: counters at /metrics\n");
        return;
      case HttpAsk::What::kNotFound:
        small(404, "Not Found", "not found: counters at /metrics\n");
        return;
      case HttpAsk::What::kMetrics:
        break;
    }
    const MetricsPublisher::View v = publisher.latest();
    if (!v.text) {
      small(503, "Service Unavailable", "no counters published yet\n");
      return;
    }
    counters.scrapes.fetch_add(1, std::memory_order_relaxed);
    c.head = response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", v.text->size());
    if (!ask.head_only) c.body = v.text;
  }

  // False when the connection is done (closed by the peer, answered, or bad).
  bool on_readable(Conn& c) {
    char buf[2048];
    for (;;) {
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      c.in.append(buf, static_cast<std::size_t>(n));
      std::size_t end = c.in.find("\r\n\r\n");
      if (end == std::string::npos) end = c.in.find("\n\n");
      if (end != std::string::npos && end < kMaxRequestBytes) {
        answer(c);
        return on_writable(c);
      }
      if (c.in.size() > kMaxRequestBytes) {
        counters.bad_request.fetch_add(1, std::memory_order_relaxed);
        static const std::string kText = "request too large\n";
        c.head = response(431, "Request Header Fields Too Large", "text/plain", kText.size()) + kText;
        c.writing = true;
        c.deadline_ms = now_ms() + kWriteTimeoutMs;
        return on_writable(c);
      }
    }
  }

  bool on_writable(Conn& c) {
    for (;;) {
      const bool in_head = c.sent < c.head.size();
      if (!in_head && (c.body == nullptr || c.sent - c.head.size() >= c.body->size())) {
        ::shutdown(c.fd, SHUT_WR);
        return false;  // all sent
      }
      const std::string& part = in_head ? c.head : *c.body;
      const std::size_t off = in_head ? c.sent : c.sent - c.head.size();
      const ssize_t n = ::send(c.fd, part.data() + off, part.size() - off, MSG_NOSIGNAL);
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      c.sent += static_cast<std::size_t>(n);
    }
  }

  void run() {
    std::vector<pollfd> fds;
    std::vector<std::list<Conn>::iterator> index;
    while (!stopping.load(std::memory_order_acquire)) {
      fds.clear();
      index.clear();
      fds.push_back({wake_fd, POLLIN, 0});
      fds.push_back({listen_fd, POLLIN, 0});
      std::uint64_t next = now_ms() + 1000;
      for (auto it = conns.begin(); it != conns.end(); ++it) {
        fds.push_back({it->fd, static_cast<short>(it->writing ? POLLOUT : POLLIN), 0});
        index.push_back(it);
        next = std::min(next, it->deadline_ms);
      }
      const std::uint64_t t = now_ms();
      const int wait = next > t ? static_cast<int>(next - t) : 0;
      if (::poll(fds.data(), fds.size(), wait) < 0 && errno != EINTR) break;
      if (stopping.load(std::memory_order_acquire)) break;
      // Connections first (their slots may be taken by new ones next).
      const std::uint64_t now = now_ms();
      for (std::size_t i = 0; i < index.size(); ++i) {
        const auto it = index[i];
        const short ev = fds[i + 2].revents;
        bool keep = true;
        if (ev & (POLLERR | POLLNVAL)) {
          keep = false;
        } else if (ev & (POLLIN | POLLHUP) && !it->writing) {
          keep = on_readable(*it);
        } else if (ev & POLLOUT && it->writing) {
          keep = on_writable(*it);
        } else if (ev & POLLHUP) {
          keep = false;
        }
        if (keep && now >= it->deadline_ms) {
          counters.timed_out.fetch_add(1, std::memory_order_relaxed);
          keep = false;
        }
        if (!keep) close_conn(it);
      }
      if (fds[1].revents & POLLIN) accept_all();
    }
  }
};

PrometheusServer::PrometheusServer(const MetricsPublisher& publisher, const std::string& address, std::uint16_t port)
    : impl_(std::make_unique<Impl>(publisher)) {
  const auto fail = [&](const std::string& why) {
    throw std::runtime_error("metrics.prometheus_port: cannot listen on " + address + ":" + std::to_string(port) +
                             ": " + why);
  };
  sockaddr_storage ss{};
  socklen_t len = 0;
  in6_addr a6{};
  in_addr a4{};
  int family = AF_INET;
  if (::inet_pton(AF_INET, address.c_str(), &a4) == 1) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
    sin->sin_family = AF_INET;
    sin->sin_addr = a4;
    sin->sin_port = htons(port);
    len = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, address.c_str(), &a6) == 1) {
    family = AF_INET6;
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_addr = a6;
    sin6->sin6_port = htons(port);
    len = sizeof(sockaddr_in6);
  } else {
    fail("not an IPv4 or IPv6 address (metrics.prometheus_address)");
  }
  impl_->listen_fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (impl_->listen_fd < 0) fail(std::strerror(errno));
  const int one = 1;
  ::setsockopt(impl_->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // The kernel's reason in words, with what to do (issue 52 item 10).
  if (::bind(impl_->listen_fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    fail(bind_error_text(errno, address, port));
  }
  if (::listen(impl_->listen_fd, SOMAXCONN) != 0) fail(bind_error_text(errno, address, port));
  sockaddr_storage got{};
  socklen_t got_len = sizeof got;
  ::getsockname(impl_->listen_fd, reinterpret_cast<sockaddr*>(&got), &got_len);
  port_ = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&got)->sin_port
                                  : reinterpret_cast<sockaddr_in6*>(&got)->sin6_port);
  impl_->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl_->wake_fd < 0) fail(std::strerror(errno));
}

void PrometheusServer::start() {
  if (impl_->thread.joinable()) return;
  impl_->thread = std::thread([this] { impl_->run(); });
}

PrometheusServer::~PrometheusServer() {
  if (impl_->thread.joinable()) {
    impl_->stopping.store(true, std::memory_order_release);
    const std::uint64_t one = 1;
    (void)::write(impl_->wake_fd, &one, sizeof one);
    impl_->thread.join();
  }
}

const PrometheusServer::Counters& PrometheusServer::counters() const noexcept { return impl_->counters; }

}  // namespace gw::cp
