// The Prometheus endpoint under slow and idle clients (issue 51 item 9):
// scrapes are served while hundreds of connections send nothing or send
// their request a byte at a time; every connection has deadlines; the
// number held at once is bounded. Real sockets on 127.0.0.1.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "control/gateway/metrics.h"

namespace gw::cp {
namespace {

int connect_to(std::uint16_t port, int timeout_ms) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` and reads until the server closes; empty on a timeout or error.
std::string exchange(int fd, const std::string& request) {
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) return {};
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) return out;
    if (n < 0) return {};
    out.append(buf, static_cast<std::size_t>(n));
  }
}

class PrometheusServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CounterSnapshot s;
    publisher_.publish(s, 1000);
    server_ = std::make_unique<PrometheusServer>(publisher_, "127.0.0.1", 0);
    server_->start();
  }
  void TearDown() override {
    for (int fd : clients_) ::close(fd);
    server_.reset();
  }
  // One scrape with a one-second deadline for the whole answer.
  std::string scrape(double* seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    const int fd = connect_to(server_->port(), 1000);
    if (fd < 0) return {};
    const std::string r = exchange(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    ::close(fd);
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }

  MetricsPublisher publisher_;
  std::unique_ptr<PrometheusServer> server_;
  std::vector<int> clients_;
};

TEST_F(PrometheusServerTest, ServesScrapesWithHundredsOfIdleAndSlowClients) {
  // 16 slow clients: a request begun and never finished.
  for (int i = 0; i < 16; ++i) {
    const int fd = connect_to(server_->port(), 1000);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, "GET /metr", 9, MSG_NOSIGNAL), 9);
    clients_.push_back(fd);
  }
  // Then 400 idle connections that send nothing.
  for (int i = 0; i < 400; ++i) {
    const int fd = connect_to(server_->port(), 10000);
    ASSERT_GE(fd, 0) << i;
    clients_.push_back(fd);
  }
  for (int round = 0; round < 3; ++round) {
    double s = 0;
    const std::string r = scrape(&s);
    std::printf("scrape %d with %zu idle or slow clients: %.3f s, %zu bytes\n", round, clients_.size(), s, r.size());
    ASSERT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r.substr(0, 200);
    EXPECT_NE(r.find("\r\n\r\n"), std::string::npos);
    EXPECT_NE(r.find("version=0.0.4"), std::string::npos);
  }
  // Never more than the bound at once: the rest were closed to make room.
  EXPECT_GE(server_->counters().evicted.load(), clients_.size() - PrometheusServer::kMaxConnections);
  EXPECT_EQ(server_->counters().scrapes.load(), 3u);
}

TEST_F(PrometheusServerTest, AClientTooSlowToSendItsRequestIsClosedAtItsDeadline) {
  const int fd = connect_to(server_->port(), 5000);
  ASSERT_GE(fd, 0);
  clients_.push_back(fd);
  ASSERT_EQ(::send(fd, "GET /", 5, MSG_NOSIGNAL), 5);
  const auto t0 = std::chrono::steady_clock::now();
  char c = 0;
  const ssize_t n = ::recv(fd, &c, 1, 0);  // the server closes it: 0 (before: held for the pool's read timeout)
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(n, 0) << "closed after " << s << " s";
  EXPECT_EQ(server_->counters().timed_out.load(), 1u);
}

TEST_F(PrometheusServerTest, AnswersOnlyWhatItServes) {
  const auto ask = [&](const std::string& req) {
    const int fd = connect_to(server_->port(), 2000);
    EXPECT_GE(fd, 0);
    const std::string r = exchange(fd, req);
    ::close(fd);
    return r.substr(0, r.find("\r\n"));
  };
  EXPECT_EQ(ask("GET / HTTP/1.0\r\n\r\n"), "HTTP/1.1 200 OK");
  EXPECT_EQ(ask("GET /other HTTP/1.1\r\n\r\n"), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(ask("POST /metrics HTTP/1.1\r\n\r\n"), "HTTP/1.1 405 Method Not Allowed");
  EXPECT_EQ(ask("HEAD /metrics HTTP/1.1\r\n\r\n"), "HTTP/1.1 200 OK");
  EXPECT_EQ(ask("GET /metrics?x=1 HTTP/1.1\r\n\r\n"), "HTTP/1.1 200 OK");
  EXPECT_EQ(ask("GET /" + std::string(10000, 'a') + " HTTP/1.1\r\n\r\n"),
            "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_EQ(server_->counters().bad_request.load(), 2u);
}

}  // namespace
}  // namespace gw::cp
