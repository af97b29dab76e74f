// The memberlist inspector's cost per packet (issue 54): inspect() on real
// memberlist packets (tests/memberlist/golden.txt, written by Debian's
// memberlist 0.2.2) against its floor, the one AES-GCM open of the same
// bytes into the same scratch buffer (ipsec-mb, as inspect() calls it),
// measured side by side in one run on one core.
//
//   memberlist_bench [--golden FILE] [--seconds S]
//
// Prints one line per case: "case=NAME bytes=N keys=K inspect_ns=.. open_ns=.. ratio=..";
// each figure is the median of 5 rounds of S/10 seconds of this thread's CPU
// time (default S=2).
// Cases: a typical Serf packet (a ping with the agent's queued alive
// broadcasts piggybacked: compound, LZW-compressed, AES-128-GCM, 367 bytes),
// the same ping alone with its CRC, one alive; the typical packet when the
// opening key is third of three (keys tried in order, as memberlist does);
// a forged packet that no key opens (three opens, then drop); the costliest
// packet there is, one that inflates to just under the 64 KiB bound.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "crypto/aes_gcm.h"
#include "dataplane/memberlist/inspect.h"
#include "tests/unit/dataplane/memberlist/packets.h"

namespace {

using gw::dp::ml::test::Bytes;

struct Case {
  std::string name;
  Bytes packet;
  std::vector<Bytes> keys;  // the keyring, in order
  std::size_t opening_key;  // which one opens it (keys.size(): none)
  gw::dp::ml::Verdict want;
};

// This thread's CPU time, not the wall clock: on a shared 2-core machine
// the thread is descheduled now and then, and wall time would count that.
double cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

template <typename F>
double ns_per_call(F&& f, double seconds) {
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    std::size_t n = 0;
    const double t0 = cpu_ns();
    const double until = t0 + seconds / 10 * 1e9;
    double t = t0;
    while (t < until) {
      for (int i = 0; i < 256; ++i) f();
      n += 256;
      t = cpu_ns();
    }
    rounds.push_back((t - t0) / static_cast<double>(n));
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[2];
}

}  // namespace

int main(int argc, char** argv) try {
  std::string golden = GW_SOURCE_ROOT "/tests/memberlist/golden.txt";
  double seconds = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--golden" && i + 1 < argc) {
      golden = argv[++i];
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--golden FILE] [--seconds S]\n", argv[0]);
      return 2;
    }
  }
  if (!gw::crypto::ipsecmb_gcm_available()) {
    std::fprintf(stderr, "memberlist_bench: ipsec-mb has no AES-GCM code for this CPU\n");
    return 1;
  }
  const auto all = gw::dp::ml::test::read_golden(golden);
  auto find = [&](const std::string& n) -> const gw::dp::ml::test::Golden& {
    for (const auto& g : all) {
      if (g.name == n) return g;
    }
    throw std::runtime_error("no " + n + " in " + golden);
  };
  const auto& typical = find("ping_compound_compressed_aes128");
  const Bytes other1 = gw::dp::ml::test::bytes_of("ffffffffffffffffffffffffffffffff");
  const Bytes other2 = gw::dp::ml::test::bytes_of("eeeeeeeeeeeeeeee");
  Bytes forged = typical.packet;
  forged[forged.size() / 2] ^= 1;
  const Bytes bomb = gw::dp::ml::test::compress(gw::dp::ml::test::user(std::string(65000, 'A')));
  std::vector<Case> cases = {
      {"serf_ping_compound_lzw", typical.packet, {typical.key}, 0, gw::dp::ml::Verdict::kAccepted},
      {"ping_crc", find("ping_crc_aes128").packet, {typical.key}, 0, gw::dp::ml::Verdict::kAccepted},
      {"alive", find("alive_aes128").packet, {typical.key}, 0, gw::dp::ml::Verdict::kAccepted},
      {"serf_ping_compound_lzw_key3of3",
       typical.packet,
       {other1, other2, typical.key},
       2,
       gw::dp::ml::Verdict::kAccepted},
      {"forged_3keys", forged, {other1, other2, typical.key}, 3, gw::dp::ml::Verdict::kBadAuth},
      // The most a packet can cost: a user message that inflates to just
      // under max_inflated (64 KiB) from a few hundred bytes, sealed.
      {"lzw_64k_bomb", gw::dp::ml::test::seal(typical.key, bomb), {typical.key}, 0, gw::dp::ml::Verdict::kAccepted},
  };
  for (const Case& c : cases) {
    std::vector<std::span<const std::uint8_t>> spans(c.keys.begin(), c.keys.end());
    std::string err;
    const auto ring = gw::dp::ml::Keyring::make(spans, &err);
    if (ring == nullptr) throw std::runtime_error(err);
    gw::dp::ml::Config cfg;
    cfg.keyring = ring.get();
    gw::dp::ml::Scratch scratch(cfg);
    gw::base::Address src;
    src.ip = {10, 0, 0, 2};
    src.port = 7946;
    const auto r = gw::dp::ml::inspect(c.packet.data(), c.packet.size(), src, cfg, scratch);
    if (r.verdict != c.want) {
      std::fprintf(stderr, "memberlist_bench: %s gave %s\n", c.name.c_str(),
                   std::string(gw::dp::ml::verdict_name(r.verdict)).c_str());
      return 1;
    }
    volatile std::uint32_t sink = 0;
    const double inspect_ns = ns_per_call(
        [&] {
          sink = sink + static_cast<std::uint32_t>(
                            gw::dp::ml::inspect(c.packet.data(), c.packet.size(), src, cfg, scratch).verdict);
        },
        seconds);
    // The floor: one open of the same bytes with the key that opens them
    // (the first one for the forged packet: its one failing open).
    const std::size_t k = std::min(c.opening_key, c.keys.size() - 1);
    const std::uint8_t* nonce = c.packet.data() + 1;
    const std::size_t ct_len = c.packet.size() - 1 - 12 - 16;
    const double open_ns = ns_per_call(
        [&] {
          sink = sink + gw::crypto::ipsecmb_gcm_open_to(ring->key(k), nonce, nullptr, 0, nonce + 12, ct_len,
                                                        scratch.plain(), nonce + 12 + ct_len);
        },
        seconds);
    std::printf("case=%s bytes=%zu keys=%zu inspect_ns=%.0f open_ns=%.0f ratio=%.2f\n", c.name.c_str(), c.packet.size(),
                c.keys.size(), inspect_ns, open_ns, inspect_ns / open_ns);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "memberlist_bench: %s\n", e.what());
  return 1;
}
