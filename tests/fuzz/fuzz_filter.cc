// Fuzz target: mode: memberlist's per-frame filter (dataplane/memberlist/
// filter.h, issue 54) over arbitrary frames. The first byte picks how the
// rest is offered:
//   bit 0: outbound (the agent's frame) instead of inbound;
//   bit 1: inbound with a keyring of three fixed keys (else plaintext cluster);
//   bit 2: the lcores with an allow-list and a plaintext rollout list;
//   bit 3: the rest is a UDP payload, wrapped here in a well-formed
//          Ethernet/IPv4 (bit 4: IPv6; bit 5: with an 802.1Q tag) frame to
//          port 7946, so the fuzzer reaches inspect() through the frame path;
//   else:  the rest is the whole frame.
// The clock advances 1 ms per input. Invariants beyond "no crash": the frame
// is never written; verdicts belong to their direction; kToAgent carries an
// accepting inspector verdict and kDropInspected a refusing one; every call
// is counted once; two lcores fed the same inputs agree.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "crypto/aes_gcm.h"
#include "dataplane/memberlist/filter.h"

namespace {

using gw::dp::ml::CidrSet;
using gw::dp::ml::FilterConfig;
using gw::dp::ml::FilterLcore;
using gw::dp::ml::FilterResult;
using gw::dp::ml::FrameVerdict;
using gw::dp::ml::Keyring;

const std::uint8_t kKeys[3][32] = {{1}, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, {3}};
const std::size_t kKeyLens[3] = {16, 24, 32};

const Keyring* keyring() {
  static const std::unique_ptr<Keyring> k = [] {
    std::vector<std::span<const std::uint8_t>> keys;
    for (int i = 0; i < 3; ++i) keys.emplace_back(kKeys[i], kKeyLens[i]);
    std::string err;
    auto r = Keyring::make(keys, &err);
    if (r == nullptr) std::abort();
    return r;
  }();
  return k.get();
}

FilterConfig make_config(bool lists) {
  FilterConfig c;
  c.ports = {7946, 8301};
  c.sources = 64;
  c.per_source = {1000, 50};
  c.tcp_connections = {10, 5};
  c.egress_bytes_per_sec = 100000;
  c.egress_burst_bytes = 20000;
  if (lists) {
    std::string err;
    const std::vector<std::string> allow = {"10.0.0.0/8", "fd00::/8", "::ffff:192.168.0.0/112"};
    const std::vector<std::string> plain = {"10.0.0.0/24", "fd00::/64"};
    c.allow = *CidrSet::parse(allow, &err);
    c.plaintext_allow = *CidrSet::parse(plain, &err);
  }
  return c;
}

struct Pair {
  FilterConfig cfg;
  FilterLcore a;
  FilterLcore b;
  std::uint64_t calls = 0;
  explicit Pair(bool lists) : cfg(make_config(lists)), a(cfg, 7), b(cfg, 7) {}
};

Pair& pair(bool lists) {
  static Pair plain(false);
  static Pair listed(true);
  return lists ? listed : plain;
}

void put16(std::vector<std::uint8_t>& b, std::size_t at, std::size_t v) {
  b[at] = static_cast<std::uint8_t>(v >> 8);
  b[at + 1] = static_cast<std::uint8_t>(v);
}

// A well-formed frame from 10.0.0.2:7946 (fd00::2, or its v4-mapped form) to port 7946.
std::vector<std::uint8_t> wrap(const std::uint8_t* payload, std::size_t n, bool v6, bool vlan) {
  const std::size_t l2 = vlan ? 18 : 14;
  const std::size_t l3 = v6 ? 40 : 20;
  std::vector<std::uint8_t> f(l2 + l3 + 8 + n, 0);
  f[0] = 2;
  f[6] = 2;
  if (vlan) put16(f, 12, 0x8100);
  put16(f, l2 - 2, v6 ? 0x86DD : 0x0800);
  std::uint8_t* ip = f.data() + l2;
  if (v6) {
    ip[0] = 0x60;
    put16(f, l2 + 4, 8 + n);
    ip[6] = 17;
    ip[8] = 0xfd;
    ip[23] = 2;
    ip[24] = 0xfd;
    ip[39] = 1;
  } else {
    ip[0] = 0x45;
    put16(f, l2 + 2, 20 + 8 + n);
    ip[9] = 17;
    ip[12] = 10;
    ip[15] = 2;
    ip[16] = 10;
    ip[19] = 1;
  }
  put16(f, l2 + l3, 7946);
  put16(f, l2 + l3 + 2, 7946);
  put16(f, l2 + l3 + 4, 8 + n);
  if (n != 0) std::memcpy(f.data() + l2 + l3 + 8, payload, n);
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 70000) return 0;
  if (!gw::crypto::ipsecmb_gcm_available()) return 0;
  const std::uint8_t mode = data[0];
  const bool outbound = (mode & 1) != 0;
  const Keyring* keys = (mode & 2) != 0 ? keyring() : nullptr;
  Pair& p = pair((mode & 4) != 0);
  std::vector<std::uint8_t> frame =
      (mode & 8) != 0 ? wrap(data + 1, size - 1, (mode & 16) != 0, (mode & 32) != 0)
                      : std::vector<std::uint8_t>(data + 1, data + size);
  if (frame.size() > 0xffffffffu) return 0;
  const std::vector<std::uint8_t> before = frame;
  const std::uint32_t len = static_cast<std::uint32_t>(frame.size());
  const std::uint64_t now = ++p.calls * 1'000'000ULL;
  if (outbound) {
    const FrameVerdict va = p.a.outbound(frame.data(), len, now);
    const FrameVerdict vb = p.b.outbound(frame.data(), len, now);
    if (va != vb) std::abort();
    if (va != FrameVerdict::kToNetwork && va != FrameVerdict::kDropEgressBudget) std::abort();
  } else {
    const FilterResult ra = p.a.inbound(frame.data(), len, keys, now);
    const FilterResult rb = p.b.inbound(frame.data(), len, keys, now);
    if (ra.verdict != rb.verdict || ra.ml != rb.ml) std::abort();
    if (ra.verdict == FrameVerdict::kToNetwork || ra.verdict == FrameVerdict::kDropEgressBudget) std::abort();
    if (static_cast<std::size_t>(ra.verdict) >= gw::dp::ml::kFrameVerdictCount) std::abort();
    if (ra.verdict == FrameVerdict::kToAgent && !gw::dp::ml::accepted(ra.ml)) std::abort();
    if (ra.verdict == FrameVerdict::kDropInspected && gw::dp::ml::accepted(ra.ml)) std::abort();
  }
  if (frame != before) std::abort();
  std::uint64_t counted = 0;
  for (const std::uint64_t n : p.a.counters().frames) counted += n;
  if (counted != p.calls) std::abort();
  std::uint64_t inspected = 0;
  for (const std::uint64_t n : p.a.counters().ml) inspected += n;
  if (inspected > p.calls) std::abort();
  return 0;
}
