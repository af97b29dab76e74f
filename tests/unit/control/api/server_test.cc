// The control socket: owner-only permissions, one request and one reply per
// connection, answered only when the control lcore calls serve(), stale
// sockets replaced, live ones refused, oversized requests rejected.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "control/api/request.h"
#include "control/api/server.h"

namespace gw::cp::api {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gw-api-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

int connect_to(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string round_trip(const std::string& path, const std::string& payload) {
  const int fd = connect_to(path);
  if (fd < 0) return "connect failed";
  (void)!::send(fd, payload.data(), payload.size(), MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  std::string reply;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) reply.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return reply;
}

// Plays the control lcore: serves until told to stop.
class Serving {
 public:
  explicit Serving(ApiServer& s)
      : thread_([this, &s] {
          while (!stop_.load()) {
            s.serve([](std::string_view line) { return "{\"ok\":true,\"echo\":" + std::to_string(line.size()) + "}"; });
            std::this_thread::yield();
          }
        }) {}
  ~Serving() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(ApiServer, OwnerOnlyAndAnswersThroughServe) {
  TempDir dir;
  const std::string path = dir.file("run/gw.sock");
  ApiServer server(path);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(dir.file("run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  server.start();
  {
    Serving serving(server);
    EXPECT_EQ(round_trip(path, "{\"cmd\":\"stats\"}\n"), "{\"ok\":true,\"echo\":15}\n");
    // A client that half-closes without a newline still gets its answer.
    EXPECT_EQ(round_trip(path, "abc"), "{\"ok\":true,\"echo\":3}\n");
  }
  EXPECT_EQ(server.counters().requests.load(), 2u);
  server.stop();
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(ApiServer, NothingIsAnsweredWithoutTheControlLcore) {
  TempDir dir;
  const std::string path = dir.file("gw.sock");
  ApiServer server(path);
  server.start();
  std::string reply;
  std::thread client([&] { reply = round_trip(path, "{\"cmd\":\"stats\"}\n"); });
  // The request waits in the mailbox until serve() runs.
  while (server.counters().requests.load() == 0) std::this_thread::yield();
  std::size_t answered = 0;
  while (answered == 0) answered = server.serve([](std::string_view) { return std::string("{\"ok\":true}"); });
  client.join();
  EXPECT_EQ(answered, 1u);
  EXPECT_EQ(reply, "{\"ok\":true}\n");
}

TEST(ApiServer, OversizedRequestRejected) {
  TempDir dir;
  const std::string path = dir.file("gw.sock");
  ApiServer server(path);
  server.start();
  const std::string reply = round_trip(path, std::string(kMaxRequestBytes + 10, 'x'));
  EXPECT_NE(reply.find("too large"), std::string::npos);
  EXPECT_EQ(server.counters().rejected_too_large.load(), 1u);
  EXPECT_EQ(server.counters().requests.load(), 0u);
}

TEST(ApiServer, StaleSocketReplacedLiveOneRefused) {
  TempDir dir;
  const std::string path = dir.file("gw.sock");
  {
    // A socket file nobody listens on any more.
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::close(fd);
  }
  ApiServer first(path);  // replaces the stale one
  try {
    ApiServer second(path);
    FAIL() << "a live socket was replaced";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
  }
  // A regular file is never replaced.
  const std::string plain = dir.file("plain");
  std::FILE* f = std::fopen(plain.c_str(), "w");
  std::fclose(f);
  EXPECT_THROW(ApiServer{plain}, ApiError);
  EXPECT_TRUE(std::filesystem::exists(plain));
}

TEST(ApiServer, StopAnswersWaitingClients) {
  TempDir dir;
  const std::string path = dir.file("gw.sock");
  ApiServer server(path);
  server.start();
  std::string reply;
  std::thread client([&] { reply = round_trip(path, "{\"cmd\":\"stats\"}\n"); });
  while (server.counters().requests.load() == 0) std::this_thread::yield();
  server.stop();  // never served: the client gets an error, not a hang
  client.join();
  EXPECT_NE(reply.find("stopping"), std::string::npos) << reply;
}

// Issue 17: the server served one client at a time and its read timeout
// restarted on every byte, so a client trickling bytes blocked every other
// request. Now: other clients are answered while slow and idle ones are
// connected (even kMaxClients of them), and a trickling client is cut off
// by its whole-request deadline, however often it sends.
TEST(ApiServer, SlowAndIdleClientsDoNotBlockOthers) {
  TempDir dir;
  const std::string path = dir.file("gw.sock");
  ApiServer server(path);
  server.start();
  Serving serving(server);
  // A slot-full of idle connections, and one that trickles a byte at a time.
  std::vector<int> idle;
  for (std::size_t i = 0; i < ApiServer::kMaxClients; ++i) idle.push_back(connect_to(path));
  const int slow = connect_to(path);
  ASSERT_GE(slow, 0);
  (void)!::send(slow, "{", 1, MSG_NOSIGNAL);
  // Others are answered at once (a newcomer to a full server evicts the oldest idle one).
  for (int i = 0; i < 3; ++i) EXPECT_EQ(round_trip(path, "{\"cmd\":\"stats\"}\n"), "{\"ok\":true,\"echo\":15}\n");
  EXPECT_GE(server.counters().evicted.load(), 2u);  // for the slow one and the first newcomer
  // Keep trickling every 200 ms: the connection still ends within the
  // deadline (plus slack for a loaded machine), with an error line.
  const auto start = std::chrono::steady_clock::now();
  std::string got;
  char buf[512];
  for (int i = 0; i < 40; ++i) {
    (void)!::send(slow, "\"", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    timeval tv{0, 200 * 1000};
    ::setsockopt(slow, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const ssize_t n = ::recv(slow, buf, sizeof buf, 0);
    if (n == 0) break;
    if (n > 0) got.append(buf, static_cast<std::size_t>(n));
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_NE(got.find("\"ok\":false"), std::string::npos) << got;
  EXPECT_LT(took, std::chrono::milliseconds(ApiServer::kReadTimeoutMs + 3000));
  ::close(slow);
  for (const int fd : idle) ::close(fd);
}

}  // namespace
}  // namespace gw::cp::api
