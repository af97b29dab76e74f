// Hashing for the workers' bounded per-sender tables (replay windows, token
// buckets): a 64-bit finaliser (MurmurHash3's fmix64) that spreads keys over
// the table. Not keyed: table placement only; an attacker who crowds one
// slot only evicts within the bounded table, which is counted.
#pragma once

#include <cstdint>

namespace gw::dp {

constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDULL;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ULL;
  return x ^ (x >> 33);
}

}  // namespace gw::dp
