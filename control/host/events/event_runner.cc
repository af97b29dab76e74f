#include "control/host/events/event_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <system_error>
#include <utility>

#include "base/clock.h"
#include "control/host/events/member_line.h"

extern char** environ;

namespace gw::cp::events {

namespace {

constexpr std::uint64_t kNsPerMs = 1'000'000;
// Poll period when the kernel has no pidfd_open (then exits are found by
// waitpid(WNOHANG) on this tick rather than by a readable pidfd).
constexpr int kFallbackPollMs = 20;
// Member names shown in one log line.
constexpr std::size_t kLogNames = 8;

std::uint64_t steady_ns() { return base::monotonic_ns(); }

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

bool set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  // Always close-on-exec (pidfd_open(2)).
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

// A write to a pipe whose reader has gone raises SIGPIPE, which would kill the
// gateway. The runner thread blocks it; a pending one is consumed here.
void consume_sigpipe() {
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  const struct timespec zero {};
  while (::sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
  }
}

// Handler output for one log line: printable ASCII kept, newlines shown as
// "\n", other bytes as \xNN; one trailing newline dropped.
std::string printable(std::string_view s, bool truncated) {
  if (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      std::array<char, 5> buf{};
      std::snprintf(buf.data(), buf.size(), "\\x%02x", u);
      out += buf.data();
    }
  }
  if (truncated) out += "...";
  return out;
}

std::string name_list(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kLogNames; ++i) {
    if (i > 0) out += ',';
    append_escaped(out, names[i]);
  }
  if (names.size() > kLogNames) out += " (+" + std::to_string(names.size() - kLogNames) + " more)";
  return out;
}

}  // namespace

struct EventRunner::Invocation {
  pid_t pid = -1;
  int pidfd = -1;   // readable once the handler exits; -1 without pidfd_open
  int in_fd = -1;   // our end of its stdin, -1 once all written (or it stopped reading)
  int out_fd = -1;  // our ends of its stdout and stderr, -1 at EOF
  int err_fd = -1;
  std::string input;
  std::size_t input_off = 0;
  std::string out;
  std::string err;
  bool out_truncated = false;
  bool err_truncated = false;
  engine::EventKind kind = engine::EventKind::kJoin;
  std::vector<std::string> names;
  std::uint64_t start_ns = 0;
  std::uint64_t term_at_ns = 0;
  std::uint64_t kill_at_ns = 0;  // set when SIGTERM is sent
  bool term_sent = false;
  bool kill_sent = false;

  void close_all() {
    close_fd(pidfd);
    close_fd(in_fd);
    close_fd(out_fd);
    close_fd(err_fd);
  }
};

namespace {

// Reads what is there without blocking; keeps the first kMaxOutputBytes.
void drain(int& fd, std::string& keep, bool& truncated) {
  std::array<char, 4096> buf{};
  while (fd >= 0) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      const std::size_t room = EventRunner::kMaxOutputBytes - keep.size();
      const auto got = static_cast<std::size_t>(n);
      keep.append(buf.data(), std::min(room, got));
      if (got > room) truncated = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close_fd(fd);  // EOF or an error: nothing more will come
  }
}

void feed(int& fd, const std::string& input, std::size_t& off) {
  while (fd >= 0 && off < input.size()) {
    const ssize_t n = ::write(fd, input.data() + off, input.size() - off);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // EPIPE: the handler does not read its stdin, which is its right.
    if (n < 0 && errno == EPIPE) consume_sigpipe();
    close_fd(fd);
  }
  if (off >= input.size()) close_fd(fd);  // EOF tells the handler the list is complete
}

}  // namespace

EventRunner::EventRunner(config::EventsConfig config, std::string node, std::string cluster, std::vector<int> cpus)
    : config_(std::move(config)), node_(std::move(node)), cluster_(std::move(cluster)), cpus_(std::move(cpus)) {
  if (config_.handler.empty()) return;
  // Inherit the environment (PATH, HOME, ...) as Serf does, minus any
  // GOSSIPGW_ variables a parent set, which would shadow ours.
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "GOSSIPGW_", 9) == 0) continue;
    env_.emplace_back(*e);
  }
  env_.push_back("GOSSIPGW_NODE=" + node_);
  env_.push_back("GOSSIPGW_CLUSTER=" + cluster_);
  argv_.push_back(config_.handler);
  for (const std::string& a : config_.handler_args) argv_.push_back(a);

  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw std::system_error(errno, std::system_category(), "eventfd for the event runner");
  thread_ = std::thread([this] { run(); });
}

EventRunner::~EventRunner() {
  stop();
  close_fd(wake_fd_);
}

bool EventRunner::submit(const engine::MemberEvent& event, std::span<const engine::Member> affected) {
  if (config_.handler.empty()) return false;
  Queued q;
  q.kind = event.kind;
  q.enqueued_ns = steady_ns();
  if (affected.empty()) {
    q.names.push_back(event.node);
    q.lines.push_back(member_line(event));
  } else {
    for (const engine::Member& m : affected) {
      q.names.push_back(m.name);
      q.lines.push_back(member_line(m));
    }
  }
  {
    const std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      bump(dropped_stopped_);
      return false;
    }
    if (queue_.size() >= config_.queue) {
      bump(dropped_queue_full_);
      return false;
    }
    queue_.push_back(std::move(q));
  }
  bump(submitted_);
  const std::uint64_t one = 1;
  // Nonblocking: a full counter (never in practice) only means already woken.
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  return true;
}

bool EventRunner::wait_for(const std::function<bool(const EventCounters&)>& pred,
                           std::chrono::milliseconds limit) const {
  std::unique_lock<std::mutex> lock(progress_mu_);
  return progress_cv_.wait_for(lock, limit, [&] { return pred(counters()); });
}

EventCounters EventRunner::counters() const {
  EventCounters c;
  c.submitted = submitted_.load(std::memory_order_relaxed);
  c.coalesced = coalesced_.load(std::memory_order_relaxed);
  c.dropped_queue_full = dropped_queue_full_.load(std::memory_order_relaxed);
  c.dropped_stopped = dropped_stopped_.load(std::memory_order_relaxed);
  c.started = started_.load(std::memory_order_relaxed);
  c.succeeded = succeeded_.load(std::memory_order_relaxed);
  c.failed_exit = failed_exit_.load(std::memory_order_relaxed);
  c.timed_out = timed_out_.load(std::memory_order_relaxed);
  c.spawn_errors = spawn_errors_.load(std::memory_order_relaxed);
  return c;
}

std::size_t EventRunner::queued() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

void EventRunner::stop() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  if (!thread_.joinable()) return;
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  thread_.join();
}

// Takes the head event and every event of the same kind queued right behind
// it (never past an event of another kind, so per-member order holds), once
// the head has waited coalesce_ms. A member named twice keeps its first place
// and its latest line.
bool EventRunner::take_batch(Queued& out, std::uint64_t now_ns) {
  if (queue_.empty()) return false;
  if (now_ns - queue_.front().enqueued_ns < std::uint64_t{config_.coalesce_ms} * kNsPerMs) return false;
  out = std::move(queue_.front());
  queue_.pop_front();
  std::size_t merged = 0;
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < out.names.size(); ++i) index.emplace(out.names[i], i);
  while (!queue_.empty() && queue_.front().kind == out.kind && merged + 1 < kMaxBatchEvents) {
    Queued& next = queue_.front();
    for (std::size_t i = 0; i < next.names.size(); ++i) {
      auto [it, inserted] = index.emplace(next.names[i], out.names.size());
      if (inserted) {
        out.names.push_back(std::move(next.names[i]));
        out.lines.push_back(std::move(next.lines[i]));
      } else {
        out.lines[it->second] = std::move(next.lines[i]);
      }
    }
    queue_.pop_front();
    ++merged;
  }
  if (merged > 0) bump(coalesced_, merged);
  return true;
}

void EventRunner::start(Queued batch, std::vector<Invocation>& running) {
  Invocation inv;
  inv.kind = batch.kind;
  inv.names = std::move(batch.names);
  for (const std::string& l : batch.lines) inv.input += l;

  std::array<int, 2> in{-1, -1};
  std::array<int, 2> out{-1, -1};
  std::array<int, 2> err{-1, -1};
  auto fail = [&](const char* what, int error) {
    bump(spawn_errors_);
    spdlog::warn("event handler {} for {}: {}: {}", event_name(inv.kind), name_list(inv.names), what,
                 std::system_category().message(error));
    for (int* fd : {&in[0], &in[1], &out[0], &out[1], &err[0], &err[1]}) close_fd(*fd);
  };
  if (::pipe2(in.data(), O_CLOEXEC) != 0 || ::pipe2(out.data(), O_CLOEXEC) != 0 ||
      ::pipe2(err.data(), O_CLOEXEC) != 0) {
    fail("pipe", errno);
    return;
  }

  std::vector<std::string> env = env_;
  env.push_back(std::string("GOSSIPGW_EVENT=") + event_name(inv.kind));
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (std::string& a : argv_) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // Ours are all close-on-exec; this also covers descriptors other code in
  // the process opened without O_CLOEXEC (DPDK, libraries).
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a timeout kills what a script started too; an
  // empty signal mask (ours blocks SIGPIPE) and default dispositions (the
  // gateway may ignore signals a handler expects to die of).
  sigset_t none;
  sigemptyset(&none);
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);

  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv_[0].c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    fail("spawn", rc);
    return;
  }
  bump(started_);
  close_fd(in[0]);
  close_fd(out[1]);
  close_fd(err[1]);
  inv.pid = pid;
  inv.in_fd = in[1];
  inv.out_fd = out[0];
  inv.err_fd = err[0];
  for (int fd : {inv.in_fd, inv.out_fd, inv.err_fd}) {
    if (!set_nonblocking(fd)) spdlog::warn("event handler: O_NONBLOCK: {}", std::strerror(errno));
  }
  inv.pidfd = open_pidfd(pid);
  inv.start_ns = steady_ns();
  inv.term_at_ns = inv.start_ns + std::uint64_t{config_.timeout_ms} * kNsPerMs;
  feed(inv.in_fd, inv.input, inv.input_off);
  running.push_back(std::move(inv));
  running_count_.store(running.size(), std::memory_order_relaxed);
}

void EventRunner::run() {
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);
  // Handlers get none of the gateway's ambient capabilities (under the
  // systemd unit CAP_IPC_LOCK, CAP_NET_RAW and CAP_NET_ADMIN, which are
  // DPDK's): an event consumer has no business reconfiguring the host's
  // network. Capabilities are per thread, so only this thread, and every
  // handler it spawns, gives them up; the gateway keeps them.
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
    spdlog::warn("event runner: cannot clear the ambient capabilities handlers would inherit: {}",
                 std::strerror(errno));
  }
  if (!cpus_.empty()) {
    // Set here, on this thread, so every handler it spawns inherits it too.
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus_) {
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
    }
    const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    if (rc != 0) spdlog::warn("event runner: cannot set its CPU affinity: {}", std::strerror(rc));
  }

  std::vector<Invocation> running;
  std::vector<pollfd> fds;
  for (;;) {
    std::uint64_t now = steady_ns();
    std::uint64_t wake_at = UINT64_MAX;
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      stopping = stopping_;
      if (stopping && !queue_.empty()) {
        bump(dropped_stopped_, queue_.size());
        queue_.clear();
      }
      Queued batch;
      while (!stopping && running.size() < config_.max_concurrent && take_batch(batch, now)) {
        lock.unlock();
        start(std::move(batch), running);
        lock.lock();
        stopping = stopping_;
      }
      // A head still inside its coalescing window: wake when it is due.
      if (!stopping && running.size() < config_.max_concurrent && !queue_.empty()) {
        wake_at = queue_.front().enqueued_ns + std::uint64_t{config_.coalesce_ms} * kNsPerMs;
      }
    }
    if (stopping && running.empty()) break;

    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    bool need_tick = false;
    for (const Invocation& inv : running) {
      if (inv.pidfd >= 0) {
        fds.push_back({inv.pidfd, POLLIN, 0});
      } else {
        need_tick = true;
      }
      if (inv.out_fd >= 0) fds.push_back({inv.out_fd, POLLIN, 0});
      if (inv.err_fd >= 0) fds.push_back({inv.err_fd, POLLIN, 0});
      if (inv.in_fd >= 0) fds.push_back({inv.in_fd, POLLOUT, 0});
      // After SIGKILL only its exit is awaited (a past deadline would spin).
      if (!inv.kill_sent) wake_at = std::min(wake_at, inv.term_sent ? inv.kill_at_ns : inv.term_at_ns);
    }
    int timeout_ms = -1;
    if (wake_at != UINT64_MAX) {
      const std::uint64_t left = wake_at > now ? wake_at - now : 0;
      timeout_ms = static_cast<int>(std::min<std::uint64_t>((left + kNsPerMs - 1) / kNsPerMs, 60'000));
    }
    if (need_tick && (timeout_ms < 0 || timeout_ms > kFallbackPollMs)) timeout_ms = kFallbackPollMs;
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      spdlog::error("event runner: poll: {}", std::strerror(errno));
    }
    std::uint64_t drained = 0;
    while (::read(wake_fd_, &drained, sizeof(drained)) > 0) {
    }

    now = steady_ns();
    for (auto it = running.begin(); it != running.end();) {
      Invocation& inv = *it;
      feed(inv.in_fd, inv.input, inv.input_off);
      drain(inv.out_fd, inv.out, inv.out_truncated);
      drain(inv.err_fd, inv.err, inv.err_truncated);
      int status = 0;
      const pid_t r = ::waitpid(inv.pid, &status, WNOHANG);
      if (r == 0) {
        // Still running: SIGTERM at the deadline, SIGKILL after the grace.
        // Both to the process group (-pid): the leader is unreaped, so its
        // pid (= the group id) cannot have been recycled.
        if (!inv.term_sent && now >= inv.term_at_ns) {
          inv.term_sent = true;
          inv.kill_at_ns = now + std::uint64_t{kKillGraceMs} * kNsPerMs;
          ::kill(-inv.pid, SIGTERM);
        } else if (inv.term_sent && !inv.kill_sent && now >= inv.kill_at_ns) {
          inv.kill_sent = true;
          ::kill(-inv.pid, SIGKILL);
        }
        ++it;
        continue;
      }
      if (r < 0 && errno == EINTR) {
        ++it;
        continue;
      }
      // Exited (or, r < 0, lost: someone else reaped it). What it wrote
      // before exiting is in the pipes; a child it left behind holding them
      // open must not keep us waiting.
      drain(inv.out_fd, inv.out, inv.out_truncated);
      drain(inv.err_fd, inv.err, inv.err_truncated);
      const double ms = static_cast<double>(now - inv.start_ns) / 1e6;
      const std::string names = name_list(inv.names);
      const std::string out = printable(inv.out, inv.out_truncated);
      const std::string err = printable(inv.err, inv.err_truncated);
      if (inv.term_sent) {
        bump(timed_out_);
        // The group may outlive its leader (a script's children that ignore
        // SIGTERM); it is ours to end.
        if (r > 0 && !inv.kill_sent) ::kill(-inv.pid, SIGKILL);
        spdlog::warn("event handler {} for {} timed out after {} ms and was killed; stdout: '{}' stderr: '{}'",
                     event_name(inv.kind), names, config_.timeout_ms, out, err);
      } else if (r > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        bump(succeeded_);
        spdlog::log(out.empty() && err.empty() ? spdlog::level::debug : spdlog::level::info,
                    "event handler {} for {} exited 0 in {:.1f} ms; stdout: '{}' stderr: '{}'", event_name(inv.kind),
                    names, ms, out, err);
      } else {
        bump(failed_exit_);
        std::string how = "was lost (reaped elsewhere)";
        if (r > 0 && WIFEXITED(status)) how = "exited " + std::to_string(WEXITSTATUS(status));
        if (r > 0 && WIFSIGNALED(status)) how = "died of signal " + std::to_string(WTERMSIG(status));
        spdlog::warn("event handler {} for {} {} after {:.1f} ms; stdout: '{}' stderr: '{}'", event_name(inv.kind),
                     names, how, ms, out, err);
      }
      inv.close_all();
      it = running.erase(it);
      running_count_.store(running.size(), std::memory_order_relaxed);
    }
  }
}

}  // namespace gw::cp::events
