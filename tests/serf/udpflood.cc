// udpflood: the volumetric flood of the Serf harness (issue 54 item 3,
// docs/serf-harness.md). Sends one UDP payload to one address as fast as a
// kernel socket in this namespace takes it (sendmmsg, batches of 64) for a
// bounded time and prints one JSON line: packets sent, send errors, rate.
// Only the harness's own namespaces are targets; the run stops by itself.
//
//   udpflood --dst 10.78.0.3:7946 --seconds 10 [--size 64] [--hex PAYLOAD]
//            [--rate PPS]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

constexpr unsigned kBatch = 64;

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "udpflood: %s\nusage: udpflood --dst IP:PORT --seconds S [--size N] [--hex PAYLOAD] [--rate PPS]\n",
               why);
  std::exit(2);
}

bool parse_hex(std::string_view s, std::vector<uint8_t>& out) {
  if (s.size() % 2 != 0) return false;
  out.clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    char buf[3] = {s[i], s[i + 1], 0};
    char* end = nullptr;
    unsigned long v = std::strtoul(buf, &end, 16);
    if (end != buf + 2) return false;
    out.push_back(static_cast<uint8_t>(v));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dst;
  double seconds = 0;
  size_t size = 64;
  double rate = 0;
  std::vector<uint8_t> payload;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (i + 1 >= argc) usage("every option needs a value");
    std::string_view v = argv[++i];
    if (a == "--dst") {
      dst = v;
    } else if (a == "--seconds") {
      seconds = std::atof(argv[i]);
    } else if (a == "--size") {
      size = static_cast<size_t>(std::atol(argv[i]));
    } else if (a == "--rate") {
      rate = std::atof(argv[i]);
    } else if (a == "--hex") {
      if (!parse_hex(v, payload)) usage("--hex: an even number of hex digits");
    } else {
      usage("unknown option");
    }
  }
  if (seconds <= 0 || seconds > 600) usage("--seconds: 0 < S <= 600");
  auto colon = dst.rfind(':');
  if (colon == std::string::npos) usage("--dst: IP:PORT");
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::atoi(dst.c_str() + colon + 1)));
  if (inet_pton(AF_INET, dst.substr(0, colon).c_str(), &to.sin_addr) != 1) usage("--dst: not an IPv4 address");
  if (payload.empty()) {
    if (size == 0 || size > 65507) usage("--size: 1..65507");
    // 0xff first: no memberlist message type, so the agent reads the
    // datagram, logs "msg type (255) not supported" and drops it.
    payload.assign(size, 0x5a);
    payload[0] = 0xff;
  }

  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    std::fprintf(stderr, "udpflood: socket/connect: %s\n", std::strerror(errno));
    return 1;
  }
  int sndbuf = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);

  iovec iov{payload.data(), payload.size()};
  std::vector<mmsghdr> msgs(kBatch);
  for (auto& m : msgs) {
    m.msg_hdr = {};
    m.msg_hdr.msg_iov = &iov;
    m.msg_hdr.msg_iovlen = 1;
  }
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const auto end = t0 + std::chrono::duration<double>(seconds);
  uint64_t sent = 0, errors = 0;
  while (true) {
    auto now = clock::now();
    if (now >= end) break;
    if (rate > 0) {
      // Paced: never ahead of rate * elapsed.
      double due = rate * std::chrono::duration<double>(now - t0).count();
      if (static_cast<double>(sent) >= due) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        continue;
      }
    }
    int n = sendmmsg(fd, msgs.data(), kBatch, 0);
    if (n < 0) {
      ++errors;  // ENOBUFS/ECONNREFUSED (ICMP from a dead agent): keep going
      continue;
    }
    sent += static_cast<uint64_t>(n);
  }
  double dt = std::chrono::duration<double>(clock::now() - t0).count();
  std::printf("{\"attack\":\"flood\",\"sender\":\"udpflood\",\"size\":%zu,\"packets\":%llu,\"send_errors\":%llu,"
              "\"seconds\":%.3f,\"pps\":%.0f,\"payload_bytes\":%llu}\n",
              payload.size(), static_cast<unsigned long long>(sent), static_cast<unsigned long long>(errors), dt,
              static_cast<double>(sent) / dt, static_cast<unsigned long long>(sent * payload.size()));
  return 0;
}
