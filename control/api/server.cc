#include "control/api/server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

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
      answered_cv_.notify_all();
    };
    try {
      handle(p->request, reply);
    } catch (const std::exception& e) {
      reply(error_reply(std::string("internal error: ") + e.what()));
    }
  }
  return batch.size();
}

void ApiServer::run() {
  std::array<pollfd, 2> fds{};
  fds[0] = {listen_fd_, POLLIN, 0};
  fds[1] = {wake_fd_, POLLIN, 0};
  while (!stopping_.load(std::memory_order_relaxed)) {
    const int n = ::poll(fds.data(), fds.size(), -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || (fds[1].revents & POLLIN) != 0) break;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    counters_.connections.fetch_add(1, std::memory_order_relaxed);
    handle_connection(fd);
    ::close(fd);
  }
}

void ApiServer::handle_connection(int fd) {
  // Only our own user may talk to us (the socket's mode says so too; this
  // also holds where the file mode is not enforced).
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid != ::geteuid() && cred.uid != 0) {
    (void)write_all(fd, error_reply("permission denied: not the gateway's user") + "\n");
    return;
  }
  timeval tv{kReadTimeoutMs / 1000, (kReadTimeoutMs % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string line;
  std::array<char, 4096> buf;
  bool complete = false;
  while (!complete) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // closed, error or read timeout
    const auto* nl = static_cast<const char*>(std::memchr(buf.data(), '\n', static_cast<std::size_t>(n)));
    const std::size_t take = nl != nullptr ? static_cast<std::size_t>(nl - buf.data()) : static_cast<std::size_t>(n);
    if (line.size() + take > kMaxRequestBytes) {
      counters_.rejected_too_large.fetch_add(1, std::memory_order_relaxed);
      (void)write_all(fd, error_reply("request too large (limit " + std::to_string(kMaxRequestBytes) + " bytes)", kStatusBadInput) + "\n");
      // Read (and discard) what the client is still sending, bounded, so that
      // closing with unread data does not reset the connection before the
      // client has read the error.
      ::shutdown(fd, SHUT_WR);
      for (std::size_t drained = 0; drained < 16 * kMaxRequestBytes;) {
        const ssize_t d = ::recv(fd, buf.data(), buf.size(), 0);
        if (d <= 0) break;
        drained += static_cast<std::size_t>(d);
      }
      return;
    }
    line.append(buf.data(), take);
    complete = nl != nullptr;
  }
  if (!complete && line.empty()) {
    counters_.rejected_read.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // A client that half-closes after its line without a newline still counts.
  auto p = std::make_shared<Pending>();
  p->request = std::move(line);
  std::string out;
  {
    std::unique_lock<std::mutex> lock(mu_);
    queue_.push_back(p);
    waiting_.store(queue_.size(), std::memory_order_relaxed);
    counters_.requests.fetch_add(1, std::memory_order_relaxed);
    const bool ok = answered_cv_.wait_for(lock, std::chrono::milliseconds(kAnswerTimeoutMs), [&] {
      return p->answered || stopping_.load(std::memory_order_relaxed);
    });
    if (!ok || !p->answered) {
      counters_.timed_out.fetch_add(1, std::memory_order_relaxed);
      p->reply = error_reply(stopping_.load() ? "gateway is stopping" : "the control lcore did not answer in time");
      p->answered = true;  // a late answer is dropped
    }
    out = std::move(p->reply);
  }
  (void)write_all(fd, out + "\n");
}

}  // namespace gw::cp::api
