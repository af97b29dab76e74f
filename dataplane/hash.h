// Hashing for the workers' bounded per-sender tables (replay windows, token
// buckets, failed headers, learned neighbours). Their keys are bytes a
// sender chooses (nonce epochs, source addresses), so slot placement is a
// keyed hash (SipHash-1-3, crypto/siphash.h) under a random key drawn per
// lcore at start (random_table_seed): without the key nobody can choose
// keys that crowd one slot or one probe run (issue 51). mix64 stays for
// what is not attacker-chosen.
#pragma once

#include <cstdint>

#include "crypto/siphash.h"

namespace gw::dp {

constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDULL;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ULL;
  return x ^ (x >> 33);
}

// A table's hash key from its 64-bit seed (two splitmix64 outputs): tests
// pass small seeds, the gateway random ones (random_table_seed).
inline crypto::SipKey table_key(std::uint64_t seed) noexcept {
  const auto next = [&seed]() {
    std::uint64_t z = (seed += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  const std::uint64_t k0 = next();
  return crypto::SipKey{k0, next()};
}

// The keyed hash of two words under `key`.
inline std::uint64_t keyed_hash(const crypto::SipKey& key, std::uint64_t a, std::uint64_t b) noexcept {
  return crypto::siphash13_2w(key, a, b);
}

// 64 random bits from the kernel (libsodium), for table seeds. Start-up only.
std::uint64_t random_table_seed() noexcept;

}  // namespace gw::dp
