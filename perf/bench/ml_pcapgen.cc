// Writes the filter-mode benchmark's inputs (issue 54 item 4): Ethernet/IPv4
// frames of memberlist gossip to 10.0.0.1:7946, one case per file, for
// perf/bench/filter_bench.py to replay through net_pcap infinite_rx into
// dpdk-testpmd rxonly and into gossipgw in `mode: memberlist`.
//
//   ml_pcapgen --case C --out FILE [--frames N] [--size B] [--sources S] [--keys K]
//              [--key-len 16|24|32] [--keyring-out FILE] [--floor-seconds S]
//
// Cases (the verdict filter mode gives each frame):
//   valid       sealed compound (ping + piggybacked alives and a Serf user
//               message, LZW-compressed, as Serf sends), padded with user
//               bytes to about --size bytes of frame; from --sources members
//               inside the allow-list: to_agent (ml_accepted)
//   lastkey     the same sealed with the last of --keys keys (memberlist tries
//               every key, primary first: K - 1 failed opens, then one)
//   forged      valid frames with one ciphertext bit flipped: drop_inspected
//               (ml_drop_bad_auth after one open per key)
//   plaintext   plaintext phantom alives (the second incident) into an
//               encrypted cluster: ml_drop_plaintext, no crypto
//   disallowed  valid frames from sources outside the allow-list
//               (192.168.0.0/16): drop_not_allowed, no crypto
//   crash       a key holder's sealed alive with a three-entry Vsn:
//               ml_drop_bad_vsn after the open and the msgpack read
// Sources are 10.1.x.y (allow-list 10.0.0.0/8); every frame is distinct in
// its source or nonce. The keyring (JSON array of base64 keys, primary
// first, the format of `serf agent -keyring-file`) goes to --keyring-out.
//
// --floor-seconds S: then measures, on the calling thread's CPU (run it
// under taskset on the worker's CPU), what the file's UDP payloads cost
// without any packet I/O: one AES-GCM open each with the key that opens it
// (the crypto floor: the work no filter can skip) and the whole inspect()
// with the file's keyring. Prints "open_mpps=.. inspect_mpps=..", each the
// median of 5 rounds of S/5 seconds of thread CPU time.
#include <sodium.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataplane/memberlist/inspect.h"
#include "dataplane/memberlist/keyring.h"
#include "perf/gossipgen/frames.h"
#include "perf/gossipgen/pcap_io.h"
#include "tests/unit/dataplane/memberlist/packets.h"

namespace {

namespace t = gw::dp::ml::test;
using t::Bytes;

struct Options {
  std::string kase = "valid";
  std::string out;
  std::string keyring_out;
  std::size_t frames = 4096;
  std::size_t size = 512;
  std::size_t sources = 1024;
  std::size_t keys = 1;
  std::size_t key_len = 32;
  double floor_seconds = 0;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "ml_pcapgen: %s\nusage: ml_pcapgen --case valid|lastkey|forged|plaintext|disallowed|crash --out FILE\n"
               "  [--frames N] [--size BYTES] [--sources S] [--keys K] [--key-len 16|24|32] [--keyring-out FILE]\n"
               "  [--floor-seconds S]\n",
               why);
  std::exit(2);
}

std::size_t number(const char* s, std::size_t lo, std::size_t hi, const char* what) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || *end != 0 || v < lo || v > hi) {
    std::fprintf(stderr, "ml_pcapgen: %s must be %zu..%zu, not '%s'\n", what, lo, hi, s);
    std::exit(2);
  }
  return static_cast<std::size_t>(v);
}

// Key i of the run: fixed bytes, so files and keyring agree across runs.
Bytes key_bytes(std::size_t i, std::size_t len) {
  Bytes k(len);
  for (std::size_t j = 0; j < len; ++j) k[j] = static_cast<std::uint8_t>(0x30 + i * 7 + j);
  return k;
}

std::string base64(const Bytes& b) {
  std::string out(sodium_base64_encoded_len(b.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), b.data(), b.size(), sodium_base64_VARIANT_ORIGINAL);
  out.resize(std::strlen(out.c_str()));
  return out;
}

// What Serf sends most: a ping with queued broadcasts piggybacked, in a
// compound, LZW-compressed; `pad` bytes of a Serf user message make it
// larger. `seq` makes each plaintext distinct; the ping asks for its ack at
// the sender's own address `from`, as memberlist's pings do.
Bytes serf_plain(std::uint32_t seq, std::size_t pad, const gw::perf::IpAddr& from) {
  std::vector<Bytes> parts = {t::ping(seq, t::ip4(from.bytes[0], from.bytes[1], from.bytes[2], from.bytes[3]), 7946,
                                      "node-1"),
                              t::alive(t::vsn6(), "node-" + std::to_string(seq % 997), t::ip4(10, 1, 0, 1))};
  if (pad != 0) {
    std::string u(pad, '\0');
    for (std::size_t i = 0; i < pad; ++i) u[i] = static_cast<char>("serf-user-event-"[i % 16] ^ (seq + i));
    parts.push_back(t::user(u));
  }
  return t::compress(t::compound(parts));
}

// Seals as memberlist does (version 1, no label) with nonce `n` of its own:
// t::seal() writes one fixed nonce.
Bytes seal_unique(const Bytes& key, const Bytes& p, std::uint32_t n) {
  gw::crypto::IpsecMbGcm k;
  if (!gw::crypto::ipsecmb_gcm_expand_len(key.data(), key.size(), &k)) throw std::runtime_error("bad key");
  Bytes out(1 + 12 + p.size() + 16);
  out[0] = 1;
  for (int i = 0; i < 12; ++i) out[1 + i] = static_cast<std::uint8_t>((n >> (8 * (i % 4))) ^ (0x5a + i));
  gw::crypto::ipsecmb_gcm_seal(k, out.data() + 1, nullptr, 0, p.data(), p.size(), out.data() + 13,
                               out.data() + 13 + p.size());
  gw::crypto::ipsecmb_gcm_clear(&k);
  return out;
}

double cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Median over 5 rounds of calls of f(i) (i cycling over n items) per second
// of this thread's CPU time, in millions.
template <typename F>
double mcalls_per_s(std::size_t n, double seconds, F&& f) {
  std::vector<double> rounds;
  std::size_t i = 0;
  for (int r = 0; r < 5; ++r) {
    std::size_t calls = 0;
    const double t0 = cpu_ns();
    double t = t0;
    while (t < t0 + seconds / 5 * 1e9) {
      for (int k = 0; k < 256; ++k) {
        f(i);
        i = i + 1 == n ? 0 : i + 1;
      }
      calls += 256;
      t = cpu_ns();
    }
    rounds.push_back(static_cast<double>(calls) / (t - t0) * 1e3);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[2];
}

}  // namespace

int main(int argc, char** argv) try {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + a).c_str());
    const char* v = argv[++i];
    if (a == "--case") {
      o.kase = v;
    } else if (a == "--out") {
      o.out = v;
    } else if (a == "--keyring-out") {
      o.keyring_out = v;
    } else if (a == "--floor-seconds") {
      o.floor_seconds = static_cast<double>(number(v, 1, 600, "--floor-seconds"));
    } else if (a == "--frames") {
      o.frames = number(v, 1, 2'000'000, "--frames");
    } else if (a == "--size") {
      o.size = number(v, 60, 1500, "--size");
    } else if (a == "--sources") {
      o.sources = number(v, 1, 65'000, "--sources");
    } else if (a == "--keys") {
      o.keys = number(v, 1, 16, "--keys");
    } else if (a == "--key-len") {
      o.key_len = number(v, 16, 32, "--key-len");
      if (o.key_len != 16 && o.key_len != 24 && o.key_len != 32) usage("--key-len must be 16, 24 or 32");
    } else {
      usage(("unknown option " + a).c_str());
    }
  }
  if (o.out.empty()) usage("--out is required");
  if (sodium_init() < 0) throw std::runtime_error("libsodium did not initialise");
  if (!gw::crypto::ipsecmb_gcm_available()) throw std::runtime_error("ipsec-mb has no AES-GCM code for this CPU");
  const std::string& c = o.kase;
  if (c != "valid" && c != "lastkey" && c != "forged" && c != "plaintext" && c != "disallowed" && c != "crash") {
    usage(("unknown case " + c).c_str());
  }

  std::vector<Bytes> keys;
  for (std::size_t i = 0; i < o.keys; ++i) keys.push_back(key_bytes(i, o.key_len));
  if (!o.keyring_out.empty()) {
    std::ofstream f(o.keyring_out);
    f << "[";
    for (std::size_t i = 0; i < keys.size(); ++i) f << (i == 0 ? "" : ",") << "\"" << base64(keys[i]) << "\"";
    f << "]\n";
    if (!f) throw std::runtime_error("cannot write " + o.keyring_out);
  }
  const Bytes& opener = c == "lastkey" ? keys.back() : keys.front();

  // Frame overhead: Ethernet 14 + IPv4 20 + UDP 8, and the seal's 29 bytes.
  const std::size_t base_len = 42 + 29 + serf_plain(0, 0, gw::perf::IpAddr{}).size();
  const std::size_t pad = o.size > base_len ? o.size - base_len : 0;

  gw::perf::PcapWriter w(o.out, 1'790'000'000);
  std::size_t total = 0;
  std::vector<Bytes> payloads;  // for the floor, with their sources
  std::vector<gw::base::Address> sources;
  for (std::size_t i = 0; i < o.frames; ++i) {
    const auto n = static_cast<std::uint32_t>(i);
    gw::perf::Flow f;
    f.src_mac = {0x02, 0, 0, 0, 1, static_cast<std::uint8_t>(i)};
    f.dst_mac = {0x02, 0, 0, 0, 0, 1};
    const std::size_t s = i % o.sources;
    f.src = *gw::perf::parse_ip(c == "disallowed" ? "192.168.0.0" : "10.1.0.0");
    f.src.bytes[2] = static_cast<std::uint8_t>(s >> 8);
    f.src.bytes[3] = static_cast<std::uint8_t>(1 + s % 250);
    f.dst = *gw::perf::parse_ip("10.0.0.1");
    f.src_port = 7946;
    f.dst_port = 7946;
    f.ip_id = static_cast<std::uint16_t>(i);
    Bytes payload;
    if (c == "plaintext") {
      std::vector<Bytes> alives;
      for (int k = 0; k < 4; ++k) {
        alives.push_back(t::alive(t::vsn6(), "phantom-" + std::to_string(i * 4 + k), t::ip4(10, 2, 0, 1)));
      }
      payload = t::compound(alives);
    } else if (c == "crash") {
      payload = seal_unique(opener, t::alive(t::Bin{{1, 5, 2}}, "crash-" + std::to_string(i)), n);
    } else {
      payload = seal_unique(opener, serf_plain(n, pad, f.src), n);
      if (c == "forged") payload[payload.size() / 2] ^= 1;
    }
    const gw::perf::Frame fr = gw::perf::build_udp_frame(f, payload);
    if (o.floor_seconds > 0) {
      payloads.push_back(payload);
      gw::base::Address a;
      a.ip = {f.src.bytes[0], f.src.bytes[1], f.src.bytes[2], f.src.bytes[3]};
      a.port = f.src_port;
      sources.push_back(a);
    }
    total += fr.size();
    w.write(fr);
  }
  w.close();
  std::printf("ml_pcapgen: %zu frames of case %s, %.0f bytes on average, %zu keys of %zu bytes\n", o.frames,
              c.c_str(), static_cast<double>(total) / static_cast<double>(o.frames), o.keys, o.key_len);
  if (o.floor_seconds > 0) {
    std::vector<std::span<const std::uint8_t>> spans(keys.begin(), keys.end());
    std::string err;
    const auto ring = gw::dp::ml::Keyring::make(spans, &err);
    if (ring == nullptr) throw std::runtime_error(err);
    gw::dp::ml::Config cfg;
    cfg.keyring = ring.get();
    gw::dp::ml::Scratch scratch(cfg);
    const std::size_t k = c == "lastkey" ? keys.size() - 1 : 0;
    volatile std::uint32_t sink = 0;
    const double open_mpps = mcalls_per_s(payloads.size(), o.floor_seconds, [&](std::size_t i) {
      const Bytes& p = payloads[i];
      if (p.size() < 29 || p[0] != 1) return;  // plaintext: nothing to open
      const std::size_t ct = p.size() - 29;
      sink = sink + gw::crypto::ipsecmb_gcm_open_to(ring->key(k), p.data() + 1, nullptr, 0, p.data() + 13, ct,
                                                    scratch.plain(), p.data() + 13 + ct);
    });
    const double inspect_mpps = mcalls_per_s(payloads.size(), o.floor_seconds, [&](std::size_t i) {
      const Bytes& p = payloads[i];
      sink = sink + static_cast<std::uint32_t>(gw::dp::ml::inspect(p.data(), p.size(), sources[i], cfg, scratch).verdict);
    });
    std::printf("open_mpps=%.3f inspect_mpps=%.3f\n", open_mpps, inspect_mpps);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "ml_pcapgen: %s\n", e.what());
  return 1;
}
