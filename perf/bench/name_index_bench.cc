// The chosen-collision attack on the engine's name index (issue 51 item 7),
// measured both ways in one run: N names whose FNV-1a hashes share their low
// 16 bits (what the index placed names by before), looked up
//   - in an index placed by FNV-1a, as the pool's was (linear probing, at
//     most half full): every name in one probe run;
//   - in the pool itself, placed by its keyed hash;
// and, for scale, N ordinary names ("node-<i>") in the pool. Prints lookups
// per second and the mean slots read per lookup.
//
//   name_index_bench [N=4000] [ROUNDS=20]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "control/engine/identity.h"

namespace {

using gw::cp::engine::IdentityPool;
using gw::cp::engine::Name;

std::vector<std::string> colliding(std::size_t want, std::uint16_t target) {
  constexpr std::uint32_t kP = 0x01b3;
  std::uint32_t inv = 1;
  for (int i = 0; i < 5; ++i) inv = (inv * (2 - kP * inv)) & 0xFFFF;
  std::vector<std::string> out;
  for (std::uint32_t prefix = 0; out.size() < want; ++prefix) {
    const std::string p = "attacker-" + std::to_string(prefix) + "-";
    const auto s0 = static_cast<std::uint32_t>(IdentityPool::fnv1a(p) & 0xFFFF);
    for (std::uint32_t b3 = 0; b3 < 256 && out.size() < want; ++b3) {
      const std::uint32_t s2 = ((target * inv) & 0xFFFF) ^ b3;
      for (std::uint32_t b2 = 0; b2 < 256 && out.size() < want; ++b2) {
        const std::uint32_t s1 = ((s2 * inv) & 0xFFFF) ^ b2;
        const std::uint32_t b1 = ((s1 * inv) & 0xFFFF) ^ s0;
        if (b1 >= 256) continue;
        out.push_back(p + static_cast<char>(b1) + static_cast<char>(b2) + static_cast<char>(b3));
      }
    }
  }
  return out;
}

// The old placement: FNV-1a home slot, upper 32 bits as the slot tag.
struct FnvIndex {
  struct Slot {
    std::uint32_t tag = 0;
    std::int32_t idx = -1;
  };
  std::vector<Slot> slots;
  const std::vector<std::string>* names = nullptr;
  std::size_t probes = 0;

  explicit FnvIndex(const std::vector<std::string>& n) : names(&n) {
    std::size_t size = 64;
    while (size < 2 * (n.size() + 1)) size *= 2;
    slots.resize(size);
    for (std::size_t k = 0; k < n.size(); ++k) {
      const std::uint64_t h = IdentityPool::fnv1a(n[k]);
      std::size_t i = h & (size - 1);
      while (slots[i].idx >= 0) i = (i + 1) & (size - 1);
      slots[i] = Slot{static_cast<std::uint32_t>(h >> 32), static_cast<std::int32_t>(k)};
    }
  }
  int find(const std::string& s) {
    const std::uint64_t h = IdentityPool::fnv1a(s);
    for (std::size_t i = h & (slots.size() - 1);; i = (i + 1) & (slots.size() - 1)) {
      ++probes;
      if (slots[i].idx < 0) return -1;
      if (slots[i].tag == static_cast<std::uint32_t>(h >> 32) && (*names)[slots[i].idx] == s) return slots[i].idx;
    }
  }
};

template <typename F>
double per_second(std::size_t lookups, F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(lookups) / s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 4000;
  const std::size_t rounds = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 20;
  const std::vector<std::string> bad = colliding(n, 0x5A5A);
  std::vector<std::string> plain;
  for (std::size_t i = 0; i < n; ++i) plain.push_back("node-" + std::to_string(i));
  IdentityPool& pool = gw::cp::engine::identities();
  std::vector<Name> held;
  for (const auto& s : bad) held.emplace_back(s);
  for (const auto& s : plain) held.emplace_back(s);

  std::size_t found = 0;
  FnvIndex fnv(bad);
  const double fnv_rate = per_second(n * rounds, [&] {
    for (std::size_t r = 0; r < rounds; ++r)
      for (const auto& s : bad) found += fnv.find(s) >= 0;
  });
  const double keyed_rate = per_second(n * rounds, [&] {
    for (std::size_t r = 0; r < rounds; ++r)
      for (const auto& s : bad) found += pool.find_name(s) != IdentityPool::kNone;
  });
  const double plain_rate = per_second(n * rounds, [&] {
    for (std::size_t r = 0; r < rounds; ++r)
      for (const auto& s : plain) found += pool.find_name(s) != IdentityPool::kNone;
  });
  std::size_t keyed_probes = 0;
  for (const auto& s : bad) keyed_probes += pool.name_probes(s);
  std::printf("names=%zu rounds=%zu found=%zu\n", n, rounds, found);
  std::printf("colliding names, FNV-placed index (before): %12.0f lookups/s, %8.1f slots/lookup\n", fnv_rate,
              static_cast<double>(fnv.probes) / static_cast<double>(n * rounds));
  std::printf("colliding names, keyed index (now):         %12.0f lookups/s, %8.1f slots/lookup\n", keyed_rate,
              static_cast<double>(keyed_probes) / static_cast<double>(n));
  std::printf("ordinary names, keyed index (now):          %12.0f lookups/s\n", plain_rate);
  return found == 3 * n * rounds ? 0 : 1;
}
