// SipHash-2-4 (Aumasson and Bernstein) of exactly the kMacOffset (40) header
// bytes, inlined for the worker's hot path: the header MAC is checked for
// every packet that names one of our keys, forged floods included, and a
// library call with a generic length loop cost more than the hash itself.
// The output equals libsodium's crypto_shorthash_siphash24 over the same
// bytes and key (tests/unit/crypto/siphash_test.cc checks it against
// libsodium on random keys and headers); libsodium still seals headers.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace gw::crypto {

// Little-endian 64-bit load, as SipHash reads its key and message.
inline std::uint64_t load_le64(const std::uint8_t* p) noexcept {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

// A SipHash key as the two 64-bit words the rounds use.
struct SipKey {
  std::uint64_t k0 = 0;
  std::uint64_t k1 = 0;

  static SipKey from_bytes(const std::uint8_t* key16) noexcept { return {load_le64(key16), load_le64(key16 + 8)}; }
};

namespace detail {

struct SipState {
  std::uint64_t v0, v1, v2, v3;

  void round() noexcept {
    v0 += v1;
    v1 = std::rotl(v1, 13);
    v1 ^= v0;
    v0 = std::rotl(v0, 32);
    v2 += v3;
    v3 = std::rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = std::rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = std::rotl(v1, 17);
    v1 ^= v2;
    v2 = std::rotl(v2, 32);
  }
  void absorb(std::uint64_t m) noexcept {
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
};

}  // namespace detail

// SipHash-2-4 of the 40 bytes at `in` (five whole words, then the length block).
inline std::uint64_t siphash24_40(const SipKey& k, const std::uint8_t* in) noexcept {
  detail::SipState s{k.k0 ^ 0x736f6d6570736575ULL, k.k1 ^ 0x646f72616e646f6dULL, k.k0 ^ 0x6c7967656e657261ULL,
                     k.k1 ^ 0x7465646279746573ULL};
  for (int i = 0; i < 5; ++i) s.absorb(load_le64(in + 8 * i));
  s.absorb(std::uint64_t{40} << 56);  // no tail bytes: the last block is the length alone
  s.v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

// SipHash-1-3 (one compression round, three finalisation rounds: the
// variant Rust's HashMap and CPython use for hash-flooding resistance) of
// two 64-bit words, for hash tables keyed by attacker-chosen bytes: the
// workers' per-sender tables and the engine's name index. Keyed with a
// per-process (per-lcore) random key, so nobody who does not know the key can
// choose inputs that crowd one slot. Not a MAC: the header MAC above is
// SipHash-2-4.
inline std::uint64_t siphash13_2w(const SipKey& k, std::uint64_t m0, std::uint64_t m1) noexcept {
  detail::SipState s{k.k0 ^ 0x736f6d6570736575ULL, k.k1 ^ 0x646f72616e646f6dULL, k.k0 ^ 0x6c7967656e657261ULL,
                     k.k1 ^ 0x7465646279746573ULL};
  const auto absorb1 = [&s](std::uint64_t m) {
    s.v3 ^= m;
    s.round();
    s.v0 ^= m;
  };
  absorb1(m0);
  absorb1(m1);
  absorb1(std::uint64_t{16} << 56);
  s.v2 ^= 0xff;
  s.round();
  s.round();
  s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

// SipHash-1-3 of `len` bytes at `in` (the reference algorithm: whole words,
// then the tail and the length in the last word).
inline std::uint64_t siphash13(const SipKey& k, const std::uint8_t* in, std::size_t len) noexcept {
  detail::SipState s{k.k0 ^ 0x736f6d6570736575ULL, k.k1 ^ 0x646f72616e646f6dULL, k.k0 ^ 0x6c7967656e657261ULL,
                     k.k1 ^ 0x7465646279746573ULL};
  const auto absorb1 = [&s](std::uint64_t m) {
    s.v3 ^= m;
    s.round();
    s.v0 ^= m;
  };
  std::size_t i = 0;
  for (; i + 8 <= len; i += 8) absorb1(load_le64(in + i));
  std::uint64_t last = std::uint64_t{len & 0xff} << 56;
  for (std::size_t j = 0; i + j < len; ++j) last |= std::uint64_t{in[i + j]} << (8 * j);
  absorb1(last);
  s.v2 ^= 0xff;
  s.round();
  s.round();
  s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

// The same hash for up to kSipBatch headers at once, each under its own key:
// out[i] = siphash24_40(*keys[i], in[i]) for i < n. One header's 16 rounds
// are a chain of dependent adds and rotates; hashing a burst's headers side
// by side in vector lanes (AVX-512 or AVX2 where the CPU has them, chosen
// once at start-up) runs those chains in parallel. n <= kSipBatch.
inline constexpr std::size_t kSipBatch = 8;
void siphash24_40_batch(const SipKey* const* keys, const std::uint8_t* const* in, std::uint64_t* out,
                        std::size_t n) noexcept;

// Which implementation siphash24_40_batch uses on this CPU: "avx512", "avx2" or "generic".
const char* siphash_batch_impl() noexcept;

// Every implementation this CPU can run, fastest first (the batch function
// uses the first; tests check each against libsodium).
struct SipBatchImpl {
  const char* name;
  void (*fn)(const SipKey* const* keys, const std::uint8_t* const* in, std::uint64_t* out, std::size_t n) noexcept;
};
std::vector<SipBatchImpl> siphash_batch_impls();

}  // namespace gw::crypto
