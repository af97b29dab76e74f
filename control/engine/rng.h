// The engine's only source of randomness: a seeded xoshiro256** (seeded through
// splitmix64). Own shuffle and bounded draws so results do not depend on the
// standard library's distribution implementations.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace gw::cp::engine {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& word : s_) word = splitmix64(seed);
  }

  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n); n == 0 returns 0. Rejection keeps it unbiased.
  std::uint64_t uniform(std::uint64_t n) {
    if (n == 0) return 0;
    const std::uint64_t limit = UINT64_MAX - (UINT64_MAX % n);
    std::uint64_t x = next();
    while (x >= limit) x = next();
    return x % n;
  }

  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) {
      const std::size_t j = static_cast<std::size_t>(uniform(i));
      std::swap(v[i - 1], v[j]);
    }
  }

  // Advances x and returns the next splitmix64 output (also a good 64-bit mixer).
  static std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  std::uint64_t s_[4] = {};
};

}  // namespace gw::cp::engine
