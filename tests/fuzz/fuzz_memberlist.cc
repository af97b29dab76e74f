// Fuzz target: one memberlist UDP packet through the memberlist inspector
// (dataplane/memberlist/inspect.h, issue 54). The first byte picks how the
// rest is offered:
//   0: as a packet to a plaintext cluster (every parser reached directly),
//   1: as a packet to a cluster with a keyring of three fixed keys (the
//      label, version and length checks; bit 7 of the byte: allow_plaintext),
//   2: as a plaintext that this target seals with the keyring's second key
//      (fixed nonce; bit 7: version 0 with PKCS7 padding, else version 1;
//      bit 6: with the label "dc1"), so the fuzzer reaches everything after
//      the AES-GCM open.
// Invariants beyond "no crash": a verdict in range; the packet is never
// written; the same bytes give the same result twice; an accepted packet
// carries at most one probe message (ping, indirect ping, ack, nack); in
// mode 2 an accepted packet was opened by key 1, and sealing never changes
// the verdict a plaintext gets (mode 0 and mode 2 agree, but for a plaintext
// that starts with the label byte).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "crypto/aes_gcm.h"
#include "dataplane/memberlist/inspect.h"

namespace {

using gw::dp::ml::Config;
using gw::dp::ml::Keyring;
using gw::dp::ml::Result;
using gw::dp::ml::Scratch;
using gw::dp::ml::Verdict;

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

bool known(const void*, const gw::base::Address& a) noexcept {
  return a.ip.size() == 4 && a.ip[0] == 10 && a.ip[1] == 0 && a.ip[2] == 0 && a.port == 7946;
}

gw::base::Address sender() {
  gw::base::Address a;
  a.ip = {10, 0, 0, 2};
  a.port = 7946;
  return a;
}

Result check(const std::uint8_t* p, std::size_t n, const Config& cfg, Scratch& s) {
  const std::vector<std::uint8_t> before(p, p + n);
  const Result r = gw::dp::ml::inspect(p, n, sender(), cfg, s);
  if (static_cast<std::size_t>(r.verdict) >= gw::dp::ml::kVerdictCount) std::abort();
  if (n != 0 && std::memcmp(before.data(), p, n) != 0) std::abort();
  const Result again = gw::dp::ml::inspect(p, n, sender(), cfg, s);
  if (again.verdict != r.verdict || again.key_index != r.key_index || again.messages != r.messages ||
      again.types != r.types) {
    std::abort();
  }
  if (gw::dp::ml::accepted(r.verdict)) {
    const unsigned probes =
        ((r.types >> 0) & 1u) + ((r.types >> 1) & 1u) + ((r.types >> 2) & 1u) + ((r.types >> 11) & 1u);
    if (probes > 1 || r.messages == 0) std::abort();
  }
  return r;
}

std::vector<std::uint8_t> seal(const std::uint8_t* p, std::size_t n, bool vsn0, bool label) {
  std::vector<std::uint8_t> msg(p, p + n);
  if (vsn0) {
    const std::size_t pad = 16 - n % 16;
    msg.insert(msg.end(), pad, static_cast<std::uint8_t>(pad));
  }
  std::vector<std::uint8_t> out;
  if (label) out = {244, 3, 'd', 'c', '1'};
  out.push_back(vsn0 ? 0 : 1);
  const std::size_t nonce_at = out.size();
  for (int i = 0; i < 12; ++i) out.push_back(static_cast<std::uint8_t>(i));
  const std::size_t ct_at = out.size();
  out.resize(ct_at + msg.size() + 16);
  gw::crypto::ipsecmb_gcm_seal(keyring()->key(1), out.data() + nonce_at,
                               label ? reinterpret_cast<const std::uint8_t*>("dc1") : nullptr, label ? 3 : 0,
                               msg.data(), msg.size(), out.data() + ct_at, out.data() + ct_at + msg.size());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || !gw::crypto::ipsecmb_gcm_available()) return 0;
  const std::uint8_t mode = data[0];
  const std::uint8_t* p = data + 1;
  const std::size_t n = size - 1;
  Config cfg;
  cfg.max_inflated = 8192;  // small, so the fuzzer meets the limit often
  cfg.is_known_member = known;
  static Scratch scratch(Config{});
  switch (mode & 3) {
    case 0:
    default:
      check(p, n, cfg, scratch);
      break;
    case 1:
      cfg.keyring = keyring();
      cfg.allow_plaintext = (mode & 0x80) != 0;
      cfg.label = (mode & 0x40) != 0 ? "dc1" : "";
      check(p, n, cfg, scratch);
      break;
    case 2: {
      const bool vsn0 = (mode & 0x80) != 0;
      const bool label = (mode & 0x40) != 0;
      const std::vector<std::uint8_t> sealed = seal(p, n, vsn0, label);
      const Result plain = check(p, n, cfg, scratch);
      cfg.keyring = keyring();
      cfg.label = label ? "dc1" : "";
      const Result r = check(sealed.data(), sealed.size(), cfg, scratch);
      if (gw::dp::ml::accepted(r.verdict) && r.key_index != 1) std::abort();
      // Sealing is transparent: the plaintext verdict comes through (an empty
      // plaintext is too short either way), except for a plaintext that
      // starts with the label byte, which only the outer packet may carry.
      if (n != 0 && p[0] == gw::dp::ml::kLabelByte) break;
      if (r.verdict != plain.verdict || r.messages != plain.messages || r.types != plain.types) std::abort();
      break;
    }
  }
  return 0;
}
