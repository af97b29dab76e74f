// The crypto floor for perf/bench/run.sh: how many datagrams per second one
// core can AEAD-open with the same libsodium call the gateway's workers make
// (gw::crypto::Key::open_in_place), over the payload a frame of the given
// size carries. No DPDK, no parsing, no header MAC: the upper bound of the
// accept path on this core.
//
//   crypto_floor --frame-size 1400 --suite aes256gcm --seconds 2
//
// Prints one line: "frame=1400 suite=aes256gcm ciphertext=1310 mpps=1.234".
// Each open works on a fresh copy of the sealed payload (opening in place
// destroys it); the copy is included and costs a few ns against the AEAD's
// hundreds.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "crypto/datagram.h"
#include "crypto/keys.h"
#include "crypto/nonce.h"

namespace {

// Ethernet + IPv4 + UDP in front of the gossipgw datagram (gossipgen's IPv4 frames).
constexpr std::size_t kL2L4 = 14 + 20 + 8;

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--frame-size BYTES] [--suite aes256gcm|chacha20poly1305] [--seconds S]\n"
               "  AEAD-opens the payload of an IPv4 gossipgw frame of BYTES (default 1400)\n"
               "  in a loop for S seconds (default 2) and prints Mpps.\n",
               argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t frame = 1400;
  std::string suite_name = "chacha20poly1305";
  double seconds = 2.0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--frame-size" || a == "--suite" || a == "--seconds") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--frame-size") frame = std::strtoul(v.c_str(), nullptr, 10);
      if (a == "--suite") suite_name = v;
      if (a == "--seconds") seconds = std::strtod(v.c_str(), nullptr);
    } else {
      return usage(argv[0]);
    }
  }
  if (!gw::crypto::init()) {
    std::fprintf(stderr, "crypto_floor: libsodium init failed\n");
    return 1;
  }
  gw::crypto::Suite suite;
  if (suite_name == "aes256gcm") {
    suite = gw::crypto::Suite::kAes256Gcm;
    if (!gw::crypto::aes256gcm_available()) {
      std::fprintf(stderr, "crypto_floor: this CPU cannot run AES-256-GCM\n");
      return 1;
    }
  } else if (suite_name == "chacha20poly1305") {
    suite = gw::crypto::Suite::kChaCha20Poly1305;
  } else {
    return usage(argv[0]);
  }
  const std::size_t overhead = kL2L4 + gw::crypto::kHeaderBytes + gw::crypto::kTagBytes;
  if (frame < overhead + 1 || frame > 9000 || seconds <= 0) return usage(argv[0]);
  const std::size_t plaintext = frame - overhead;

  gw::crypto::KeyBytes raw{};
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<std::uint8_t>(i * 7 + 1);
  const gw::crypto::Key key(raw, suite);
  gw::crypto::NonceSource nonces(1);
  std::vector<std::uint8_t> pt(plaintext);
  for (std::size_t i = 0; i < pt.size(); ++i) pt[i] = static_cast<std::uint8_t>(i);
  std::vector<std::uint8_t> sealed(gw::crypto::kHeaderBytes + plaintext + gw::crypto::kTagBytes);
  gw::crypto::SealParams params;
  params.cluster_id = gw::crypto::derive_cluster_id("bench");
  params.timestamp = 1700000000;
  const std::size_t n = gw::crypto::seal_datagram(key, params, nonces, pt.data(), pt.size(), sealed.data(),
                                                  sealed.size());
  if (n != sealed.size()) {
    std::fprintf(stderr, "crypto_floor: seal failed\n");
    return 1;
  }
  gw::crypto::WireHeader h;
  if (gw::crypto::parse_header(sealed.data(), sealed.size(), &h) != gw::crypto::HeaderStatus::kOk) {
    std::fprintf(stderr, "crypto_floor: sealed datagram does not parse\n");
    return 1;
  }
  std::vector<std::uint8_t> work(sealed.size());

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  std::uint64_t opened = 0;
  std::uint64_t failed = 0;
  auto now = start;
  while (now < until) {
    for (int k = 0; k < 1024; ++k) {
      std::memcpy(work.data(), sealed.data(), sealed.size());
      if (key.open_in_place(work.data(), h.nonce, work.data() + gw::crypto::kHeaderBytes, h.payload_len)) {
        ++opened;
      } else {
        ++failed;
      }
    }
    now = Clock::now();
  }
  const double elapsed = std::chrono::duration<double>(now - start).count();
  if (failed != 0) {
    std::fprintf(stderr, "crypto_floor: %llu opens failed\n", static_cast<unsigned long long>(failed));
    return 1;
  }
  std::printf("frame=%zu suite=%s ciphertext=%u mpps=%.4f\n", frame, suite_name.c_str(),
              static_cast<unsigned>(h.payload_len), static_cast<double>(opened) / elapsed / 1e6);
  return 0;
}
