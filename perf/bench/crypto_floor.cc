// The crypto floor for perf/bench/run.sh: how many datagrams per second one
// core can AEAD-open with the same call the gateway's workers make
// (gw::crypto::Key::open_in_place), on the fastest implementation of the
// suite here (issue 19: ipsec-mb for AES-256-GCM, libsodium for
// ChaCha20-Poly1305; --impl libsodium measures libsodium's AES-256-GCM). No DPDK, no parsing in the timed loop,
// no header MAC: the upper bound of the accept path on this core.
//
//   crypto_floor --frame-size 1400 --suite aes256gcm --seconds 2
//       one payload, of the size an IPv4 frame of 1400 bytes carries, sealed
//       here with a fixed key
//   crypto_floor --pcap valid-128.pcap --key keys/k1.key --seconds 2
//       the payloads the gateway is benchmarked on: every datagram of the
//       capture that names the key, opened in file order, round and round
//       (gossipgen's "128 B" valid frames carry real gossip messages and
//       vary in size, so the fixed-size floor would flatter the gateway)
//
// Prints one line: "frame=1400 suite=aes256gcm impl=ipsec-mb ciphertext=1310 mpps=1.234"
// (for --pcap: "pcap=... datagrams=N ciphertext=MEAN mpps=..."). Each open
// works on a fresh copy of the sealed datagram (opening in place destroys
// it); the copy is included and costs a few ns against the AEAD's hundreds.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "crypto/datagram.h"
#include "crypto/keys.h"
#include "crypto/nonce.h"
#include "perf/gossipgen/pcap_io.h"

namespace {

// Ethernet + IPv4 + UDP in front of the gossipgw datagram (gossipgen's IPv4 frames).
constexpr std::size_t kL2L4 = 14 + 20 + 8;

// The gateway perf/bench/bench.py runs (node.address 10.0.0.1, port 7946):
// whom its input datagrams are sealed for (wire version 2).
const gw::crypto::Receiver& bench_receiver() {
  static const gw::crypto::Receiver r = [] {
    const std::uint8_t ip[4] = {10, 0, 0, 1};
    return gw::crypto::receiver_of(ip, sizeof ip, 7946);
  }();
  return r;
}

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--frame-size BYTES] [--suite aes256gcm|chacha20poly1305] [--impl best|ipsec-mb|libsodium] "
               "[--seconds S]\n"
               "       %s --pcap FILE --key FILE [--suite ...] [--seconds S]\n"
               "  AEAD-opens the payload of an IPv4 gossipgw frame of BYTES (default 1400),\n"
               "  or every datagram of FILE sealed with the key in FILE, in a loop for S\n"
               "  seconds (default 2) and prints Mpps.\n",
               argv0, argv0);
  return 2;
}

// The timed loop: opens datagrams[i % n] on a fresh copy until `seconds`
// pass; returns Mpps, or a negative value if any open failed.
double open_loop(const gw::crypto::Key& key, const std::vector<std::vector<std::uint8_t>>& datagrams,
                 const std::vector<gw::crypto::WireHeader>& headers, double seconds) {
  std::size_t longest = 0;
  for (const auto& d : datagrams) longest = std::max(longest, d.size());
  std::vector<std::uint8_t> work(longest);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  std::uint64_t opened = 0;
  std::uint64_t failed = 0;
  std::size_t next = 0;
  auto now = start;
  while (now < until) {
    for (int k = 0; k < 1024; ++k) {
      const auto& d = datagrams[next];
      const auto& h = headers[next];
      next = next + 1 == datagrams.size() ? 0 : next + 1;
      std::memcpy(work.data(), d.data(), d.size());
      if (key.open_in_place(work.data(), h.nonce, work.data() + gw::crypto::kHeaderBytes, h.payload_len,
                            bench_receiver())) {
        ++opened;
      } else {
        ++failed;
      }
    }
    now = Clock::now();
  }
  if (failed != 0) {
    std::fprintf(stderr, "crypto_floor: %llu opens failed\n", static_cast<unsigned long long>(failed));
    return -1;
  }
  return static_cast<double>(opened) / std::chrono::duration<double>(now - start).count() / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t frame = 1400;
  std::string suite_name = "chacha20poly1305";
  double seconds = 2.0;
  std::string pcap_path;
  std::string key_path;
  std::string impl_name = "best";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--frame-size" || a == "--suite" || a == "--seconds" || a == "--pcap" || a == "--key" || a == "--impl") &&
        i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--frame-size") frame = std::strtoul(v.c_str(), nullptr, 10);
      if (a == "--suite") suite_name = v;
      if (a == "--seconds") seconds = std::strtod(v.c_str(), nullptr);
      if (a == "--pcap") pcap_path = v;
      if (a == "--key") key_path = v;
      if (a == "--impl") impl_name = v;
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
  gw::crypto::AesGcmImpl impl;
  if (impl_name == "best") {
    impl = gw::crypto::AesGcmImpl::kBest;
  } else if (impl_name == "libsodium") {
    impl = gw::crypto::AesGcmImpl::kLibsodium;
  } else if (impl_name == "ipsec-mb") {
    impl = gw::crypto::AesGcmImpl::kIpsecMb;
  } else {
    return usage(argv[0]);
  }
  auto make_key = [&](const gw::crypto::KeyBytes& raw) {
    try {
      return gw::crypto::Key(raw, suite, impl);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "crypto_floor: %s\n", e.what());
      std::exit(1);
    }
  };
  auto shown_impl = [&](const gw::crypto::Key& k) {
    if (suite != gw::crypto::Suite::kAes256Gcm) return "libsodium";
    return k.aes_impl() == gw::crypto::AesGcmImpl::kIpsecMb ? "ipsec-mb" : "libsodium";
  };
  if (pcap_path.empty() != key_path.empty()) return usage(argv[0]);
  if (!pcap_path.empty()) {
    if (seconds <= 0) return usage(argv[0]);
    std::vector<std::vector<std::uint8_t>> all;
    gw::crypto::KeyBytes raw{};
    try {
      all = gw::perf::read_udp_payloads(pcap_path);
      raw = gw::crypto::load_key_file(key_path);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "crypto_floor: %s\n", e.what());
      return 1;
    }
    const gw::crypto::Key key = make_key(raw);
    const std::uint32_t id = gw::crypto::derive_key_id(raw);
    std::vector<std::vector<std::uint8_t>> datagrams;
    std::vector<gw::crypto::WireHeader> headers;
    std::uint64_t bytes = 0;
    for (auto& d : all) {
      gw::crypto::WireHeader h;
      if (gw::crypto::parse_header(d.data(), d.size(), &h) != gw::crypto::HeaderStatus::kOk) continue;
      if (h.key_id != id || h.suite != suite || !key.verify_header_mac(d.data())) continue;
      // Only datagrams that open: the floor measures accepts.
      std::vector<std::uint8_t> probe = d;
      if (!key.open_in_place(probe.data(), h.nonce, probe.data() + gw::crypto::kHeaderBytes, h.payload_len,
                             bench_receiver()))
        continue;
      bytes += h.payload_len;
      headers.push_back(h);
      datagrams.push_back(std::move(d));
    }
    if (datagrams.empty()) {
      std::fprintf(stderr, "crypto_floor: no datagram of %s opens with the key in %s (suite %s)\n", pcap_path.c_str(),
                   key_path.c_str(), suite_name.c_str());
      return 1;
    }
    const double mpps = open_loop(key, datagrams, headers, seconds);
    if (mpps < 0) return 1;
    std::printf("pcap=%s suite=%s impl=%s datagrams=%zu ciphertext=%llu mpps=%.4f\n", pcap_path.c_str(),
                suite_name.c_str(), shown_impl(key), datagrams.size(),
                static_cast<unsigned long long>(bytes / datagrams.size()), mpps);
    return 0;
  }

  const std::size_t overhead = kL2L4 + gw::crypto::kHeaderBytes + gw::crypto::kTagBytes;
  if (frame < overhead + 1 || frame > 9000 || seconds <= 0) return usage(argv[0]);
  const std::size_t plaintext = frame - overhead;

  gw::crypto::KeyBytes raw{};
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<std::uint8_t>(i * 7 + 1);
  const gw::crypto::Key key = make_key(raw);
  gw::crypto::NonceSource nonces(1);
  std::vector<std::uint8_t> pt(plaintext);
  for (std::size_t i = 0; i < pt.size(); ++i) pt[i] = static_cast<std::uint8_t>(i);
  std::vector<std::uint8_t> sealed(gw::crypto::kHeaderBytes + plaintext + gw::crypto::kTagBytes);
  gw::crypto::SealParams params;
  params.cluster_id = gw::crypto::derive_cluster_id("bench");
  params.timestamp = 1700000000;
  params.to = bench_receiver();
  const std::size_t n =
      gw::crypto::seal_datagram(key, params, nonces, pt.data(), pt.size(), sealed.data(), sealed.size());
  if (n != sealed.size()) {
    std::fprintf(stderr, "crypto_floor: seal failed\n");
    return 1;
  }
  gw::crypto::WireHeader h;
  if (gw::crypto::parse_header(sealed.data(), sealed.size(), &h) != gw::crypto::HeaderStatus::kOk) {
    std::fprintf(stderr, "crypto_floor: sealed datagram does not parse\n");
    return 1;
  }
  const double mpps = open_loop(key, {sealed}, {h}, seconds);
  if (mpps < 0) return 1;
  std::printf("frame=%zu suite=%s impl=%s ciphertext=%u mpps=%.4f\n", frame, suite_name.c_str(), shown_impl(key),
              static_cast<unsigned>(h.payload_len), mpps);
  return 0;
}
