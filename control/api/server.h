// The control API's socket: a Unix stream socket (mode 0600, owner only)
// served by one thread that never touches gateway state. Each connection
// carries one request line and gets one reply line. Up to kMaxClients
// connections are served at once by one poll loop (issue 17: one slow
// client used to block every other), each with a deadline for its whole
// request line (kReadTimeoutMs from accept, not per byte); when all slots
// are taken, the oldest connection still sending its line is closed with a
// timeout error, so idle connections cannot starve the socket. The thread hands the
// request to the control lcore through a mailbox; the control lcore answers
// it between passes over the rings (serve()), so the engine and the keyring
// are only ever touched by their owner, and no worker ever sees the API.
//
//   ApiServer api(cfg.control.socket);      // binds, or throws ApiError
//   api.start();
//   ... control loop: api.serve([&](std::string_view line) { return reply; });
//   api.stop();                             // also in the destructor
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace gw::cp::api {

class ApiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ServerCounters {
  std::atomic<std::uint64_t> connections{0};
  std::atomic<std::uint64_t> requests{0};  // complete lines handed to the control lcore
  std::atomic<std::uint64_t> rejected_too_large{0};
  std::atomic<std::uint64_t> rejected_read{0};  // closed or timed out before a full line
  std::atomic<std::uint64_t> timed_out{0};      // the control lcore did not answer in time
  std::atomic<std::uint64_t> evicted{0};        // closed to make room while still sending its line
};

// ServerCounters read at one moment (for the exporters).
struct ServerCounterValues {
  std::uint64_t connections = 0;
  std::uint64_t requests = 0;
  std::uint64_t rejected_too_large = 0;
  std::uint64_t rejected_read = 0;
  std::uint64_t timed_out = 0;
  std::uint64_t evicted = 0;
};
inline ServerCounterValues load(const ServerCounters& c) {
  return {c.connections.load(),   c.requests.load(),  c.rejected_too_large.load(),
          c.rejected_read.load(), c.timed_out.load(), c.evicted.load()};
}

class ApiServer {
 public:
  // How long a connection may take to send its whole request line (from
  // accept), and how long it waits for the control lcore's answer, before
  // it gets an error. Connections served at once.
  static constexpr int kReadTimeoutMs = 2000;
  static constexpr int kAnswerTimeoutMs = 10000;
  static constexpr std::size_t kMaxClients = 16;

  // Creates the directory (0700) if missing, replaces a stale socket file,
  // refuses one that still answers, binds and listens. Throws ApiError.
  explicit ApiServer(std::string path);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  void start();
  // Stops the thread, answers nothing more, removes the socket file.
  void stop();

  // Control lcore: answers the requests waiting, each with handle(line).
  // One relaxed atomic load when none waits. Returns requests answered.
  std::size_t serve(const std::function<std::string(std::string_view)>& handle);

  // The same, for requests whose answer comes later (a cluster-wide key
  // change waits for the other members): handle(line, reply) may call
  // reply(text) now or on a later pass, on the control lcore, once. A reply
  // after kAnswerTimeoutMs is dropped (the client got a timeout error).
  using Reply = std::function<void(std::string)>;
  std::size_t serve_async(const std::function<void(std::string_view, Reply)>& handle);

  const std::string& path() const noexcept { return path_; }
  const ServerCounters& counters() const noexcept { return counters_; }

 private:
  struct Pending {
    std::string request;
    std::string reply;
    bool answered = false;
  };

  struct Conn;
  void run();
  // Reads what `c` sent; true when its line is complete (queued) or it is done.
  void read_from(Conn& c);
  void queue_request(Conn& c);
  // Refuses to serve a client that is not our user; true if refused.
  bool refuse_stranger(int fd);

  std::string path_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: stop() wakes the thread's poll
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  std::mutex mu_;
  std::condition_variable answered_cv_;
  std::deque<std::shared_ptr<Pending>> queue_;
  std::atomic<std::size_t> waiting_{0};
  ServerCounters counters_;
};

}  // namespace gw::cp::api
