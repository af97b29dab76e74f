#include "control/api/server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "base/clock.h"
#include "control/api/request.h"

namespace gw::cp::api {
namespace {

std::string errno_text() { return std::strerror(errno); }

sockaddr_un address_of(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

// True if something accepts connections at `path`.
bool answers(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const sockaddr_un a = address_of(path);
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

bool write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

ApiServer::ApiServer(std::string path) : path_(std::move(path)) {
  if (path_.empty() || path_.size() >= sizeof(sockaddr_un{}.sun_path)) {
    throw ApiError("control.socket: path must be 1.." + std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) +
                   " bytes: '" + path_ + "'");
  }
  const std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) throw ApiError("control.socket: cannot create directory '" + dir.string() + "': " + ec.message());
    ::chmod(dir.c_str(), 0700);
  }
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      throw ApiError("control.socket: '" + path_ + "' exists and is not a socket; refusing to replace it");
    }
    if (answers(path_)) {
      throw ApiError("control.socket: '" + path_ + "' is in use by a running gateway (another --file-prefix?)");
    }
    ::unlink(path_.c_str());  // stale: left by a process that died
  }
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) throw ApiError("control.socket: socket(): " + errno_text());
  const sockaddr_un a = address_of(path_);
  // Owner only from the first instant: no window where others could connect.
  const mode_t old_mask = ::umask(0177);
  const int rc = ::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  const int bind_errno = errno;
  ::umask(old_mask);
  if (rc != 0) {
    ::close(listen_fd_);
    throw ApiError("control.socket: cannot bind '" + path_ + "': " + std::strerror(bind_errno));
  }
  ::chmod(path_.c_str(), 0600);
  if (::listen(listen_fd_, 16) != 0) {
    const std::string why = errno_text();
    ::close(listen_fd_);
    ::unlink(path_.c_str());
    throw ApiError("control.socket: listen(): " + why);
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    const std::string why = errno_text();
    ::close(listen_fd_);
    ::unlink(path_.c_str());
    throw ApiError("control.socket: eventfd(): " + why);
  }
}

ApiServer::~ApiServer() {
  stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void ApiServer::start() {
  if (thread_.joinable() || listen_fd_ < 0) return;
  thread_ = std::thread([this] { run(); });
}

void ApiServer::stop() {
  if (stopping_.exchange(true)) return;
  const std::uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof one);
  {
    // A connection waiting for an answer gives up now.
    std::lock_guard<std::mutex> lock(mu_);
    answered_cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
    ::unlink(path_.c_str());
  }
}

std::size_t ApiServer::serve(const std::function<std::string(std::string_view)>& handle) {
  return serve_async([&](std::string_view line, const Reply& reply) { reply(handle(line)); });
}

std::size_t ApiServer::serve_async(const std::function<void(std::string_view, Reply)>& handle) {
  if (waiting_.load(std::memory_order_relaxed) == 0) return 0;
  std::deque<std::shared_ptr<Pending>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(queue_);
    waiting_.store(0, std::memory_order_relaxed);
  }
  for (const auto& p : batch) {
    // The connection thread waits on `p` (shared), so a late reply is safe.
    auto reply = [this, p](std::string text) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (p->answered) return;
        p->reply = std::move(text);
        p->answered = true;
      }
      // Wake the socket thread's poll: the reply can go out.
      const std::uint64_t one = 1;
      (void)!::write(wake_fd_, &one, sizeof one);
    };
    try {
      handle(p->request, reply);
    } catch (const std::exception& e) {
      reply(error_reply(std::string("internal error: ") + e.what()));
    }
  }
  return batch.size();
}

// One client's connection, from accept to its reply.
struct ApiServer::Conn {
  int fd = -1;
  std::uint64_t since_ms = 0;     // accepted at
  std::uint64_t deadline_ms = 0;  // whole-request (then answer) deadline
  std::string line;
  std::shared_ptr<Pending> pending;  // set once the line is queued
  std::string out;                   // reply left to write
  bool reading = true;
  bool done = false;
};

namespace {

std::uint64_t now_ms() { return base::monotonic_ns() / 1'000'000ULL; }

}  // namespace

bool ApiServer::refuse_stranger(int fd) {
  // Only our own user may talk to us (the socket's mode says so too; this
  // also holds where the file mode is not enforced).
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid != ::geteuid() && cred.uid != 0) {
    (void)write_all(fd, error_reply("permission denied: not the gateway's user") + "\n");
    return true;
  }
  return false;
}

void ApiServer::run() {
  std::vector<Conn> conns;
  conns.reserve(kMaxClients);
  std::vector<pollfd> fds;
  while (!stopping_.load(std::memory_order_relaxed)) {
    fds.clear();
    fds.push_back({listen_fd_, POLLIN, 0});
    fds.push_back({wake_fd_, POLLIN, 0});
    for (const Conn& c : conns) {
      const short ev = c.reading ? POLLIN : (!c.out.empty() ? POLLOUT : 0);
      fds.push_back({c.fd, ev, 0});
    }
    // Wake for the nearest deadline.
    const std::uint64_t now = now_ms();
    int timeout = -1;
    for (const Conn& c : conns) {
      const int left = c.deadline_ms > now ? static_cast<int>(c.deadline_ms - now) : 0;
      if (timeout < 0 || left < timeout) timeout = left;
    }
    const int n = ::poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno != EINTR) break;
    if (stopping_.load(std::memory_order_relaxed)) break;
    if (n > 0 && (fds[1].revents & POLLIN) != 0) {
      std::uint64_t v = 0;
      (void)!::read(wake_fd_, &v, sizeof v);  // an answer arrived (or stop)
    }
    const std::uint64_t t = now_ms();
    for (std::size_t i = 0; i < conns.size(); ++i) {
      Conn& c = conns[i];
      const short rev = n > 0 ? fds[i + 2].revents : 0;
      if (c.reading && (rev & (POLLIN | POLLHUP | POLLERR)) != 0) read_from(c);
      if (!c.reading && c.out.empty() && !c.done) {
        std::lock_guard<std::mutex> lock(mu_);
        if (c.pending->answered) {
          c.out = c.pending->reply + "\n";
        } else if (t >= c.deadline_ms) {
          counters_.timed_out.fetch_add(1, std::memory_order_relaxed);
          c.pending->answered = true;  // a late answer is dropped
          c.out = error_reply("the control lcore did not answer in time") + "\n";
        }
      } else if (c.reading && !c.done && t >= c.deadline_ms) {
        // The whole line must arrive within kReadTimeoutMs of accept.
        counters_.rejected_read.fetch_add(1, std::memory_order_relaxed);
        (void)write_all(c.fd,
                        error_reply("request not complete within " + std::to_string(kReadTimeoutMs) + " ms") + "\n");
        c.done = true;
      }
      if (!c.out.empty()) {
        const ssize_t w = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) c.out.erase(0, static_cast<std::size_t>(w));
        if (c.out.empty() || (w < 0 && errno != EAGAIN && errno != EINTR)) c.done = true;
        // A client that does not read its reply is closed at the deadline.
        if (!c.done && t >= c.deadline_ms + kReadTimeoutMs) c.done = true;
      }
    }
    for (std::size_t i = 0; i < conns.size();) {
      if (conns[i].done) {
        ::close(conns[i].fd);
        conns[i] = std::move(conns.back());
        conns.pop_back();
      } else {
        ++i;
      }
    }
    if (n > 0 && (fds[0].revents & POLLIN) != 0) {
      for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        counters_.connections.fetch_add(1, std::memory_order_relaxed);
        if (refuse_stranger(fd)) {
          ::close(fd);
          continue;
        }
        if (conns.size() >= kMaxClients) {
          // Full: make room by closing the oldest connection still sending
          // its line (idle ones cannot hold the socket); if every one is
          // waiting for an answer, refuse the newcomer.
          std::size_t oldest = conns.size();
          for (std::size_t i = 0; i < conns.size(); ++i) {
            if (conns[i].reading && (oldest == conns.size() || conns[i].since_ms < conns[oldest].since_ms)) oldest = i;
          }
          if (oldest == conns.size()) {
            (void)write_all(fd, error_reply("too many control API clients; retry") + "\n");
            ::close(fd);
            continue;
          }
          counters_.evicted.fetch_add(1, std::memory_order_relaxed);
          (void)write_all(conns[oldest].fd, error_reply("closed to make room for another client") + "\n");
          ::close(conns[oldest].fd);
          conns[oldest] = std::move(conns.back());
          conns.pop_back();
        }
        Conn c;
        c.fd = fd;
        c.since_ms = now_ms();
        c.deadline_ms = c.since_ms + kReadTimeoutMs;
        conns.push_back(std::move(c));
      }
    }
  }
  // Stopping: whoever still waits gets told.
  for (Conn& c : conns) {
    if (!c.reading && c.out.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      c.out = (c.pending->answered ? c.pending->reply : error_reply("gateway is stopping")) + "\n";
      c.pending->answered = true;
    }
    if (!c.out.empty()) (void)write_all(c.fd, c.out);
    ::close(c.fd);
  }
}

void ApiServer::read_from(Conn& c) {
  std::array<char, 4096> buf;
  for (;;) {
    const ssize_t n = ::recv(c.fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // more later
    if (n <= 0) {
      // Closed (or failed) before a newline: a half-closed line still counts.
      if (c.line.empty()) {
        counters_.rejected_read.fetch_add(1, std::memory_order_relaxed);
        c.done = true;
      } else {
        queue_request(c);
      }
      return;
    }
    const auto* nl = static_cast<const char*>(std::memchr(buf.data(), '\n', static_cast<std::size_t>(n)));
    const std::size_t take = nl != nullptr ? static_cast<std::size_t>(nl - buf.data()) : static_cast<std::size_t>(n);
    if (c.line.size() + take > kMaxRequestBytes) {
      counters_.rejected_too_large.fetch_add(1, std::memory_order_relaxed);
      (void)write_all(c.fd, error_reply("request too large (limit " + std::to_string(kMaxRequestBytes) + " bytes)",
                                        kStatusBadInput) +
                                "\n");
      // Read (and discard) what the client is still sending, bounded, so that
      // closing with unread data does not reset the connection before the
      // client has read the error.
      ::shutdown(c.fd, SHUT_WR);
      for (std::size_t drained = 0; drained < 16 * kMaxRequestBytes;) {
        const ssize_t d = ::recv(c.fd, buf.data(), buf.size(), MSG_DONTWAIT);
        if (d <= 0) break;
        drained += static_cast<std::size_t>(d);
      }
      c.done = true;
      return;
    }
    c.line.append(buf.data(), take);
    if (nl != nullptr) {
      queue_request(c);
      return;
    }
  }
}

void ApiServer::queue_request(Conn& c) {
  c.reading = false;
  c.pending = std::make_shared<Pending>();
  c.pending->request = std::move(c.line);
  c.deadline_ms = now_ms() + kAnswerTimeoutMs;
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(c.pending);
  waiting_.store(queue_.size(), std::memory_order_relaxed);
  counters_.requests.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace gw::cp::api
