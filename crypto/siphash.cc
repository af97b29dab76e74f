#include "crypto/siphash.h"

// The lane vectors below never cross a call boundary (always_inline), so
// the compilers' note that their calling convention depends on the ISA is
// moot here.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace gw::crypto {
namespace {

// Eight 64-bit lanes (GCC/Clang vector extension). Compiled three times:
// with AVX-512 (one zmm register per state word, native 64-bit rotates),
// with AVX2 (two ymm registers) and for the baseline ISA.
using Lanes = std::uint64_t __attribute__((vector_size(8 * kSipBatch)));

template <int R>
[[gnu::always_inline]] inline Lanes rotl(Lanes v) noexcept {
  return (v << R) | (v >> (64 - R));
}

struct LaneState {
  Lanes v0, v1, v2, v3;

  [[gnu::always_inline]] void round() noexcept {
    v0 += v1;
    v1 = rotl<13>(v1);
    v1 ^= v0;
    v0 = rotl<32>(v0);
    v2 += v3;
    v3 = rotl<16>(v3);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl<21>(v3);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl<17>(v1);
    v1 ^= v2;
    v2 = rotl<32>(v2);
  }
  [[gnu::always_inline]] void absorb(Lanes m) noexcept {
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
};

// A vector built from one value per lane, as a tree of pairs joined by
// shuffles: inserting lanes one by one makes a chain as long as the vector,
// and writing them to memory to load the vector back stalls on store
// forwarding.
using Pair = std::uint64_t __attribute__((vector_size(16)));
using Quad = std::uint64_t __attribute__((vector_size(32)));
static_assert(kSipBatch == 8, "make_lanes builds eight lanes");

template <typename F>
[[gnu::always_inline]] inline Lanes make_lanes(F f) noexcept {
  const Pair p0 = {f(0), f(1)};
  const Pair p1 = {f(2), f(3)};
  const Pair p2 = {f(4), f(5)};
  const Pair p3 = {f(6), f(7)};
  const Quad q0 = __builtin_shufflevector(p0, p1, 0, 1, 2, 3);
  const Quad q1 = __builtin_shufflevector(p2, p3, 0, 1, 2, 3);
  return __builtin_shufflevector(q0, q1, 0, 1, 2, 3, 4, 5, 6, 7);
}

// Unused lanes hash a copy of lane 0; their results are not written.
[[gnu::always_inline]] inline void batch_body(const SipKey* const* keys_in, const std::uint8_t* const* in_in,
                                              std::uint64_t* out, std::size_t n) noexcept {
  const SipKey* keys[kSipBatch];
  const std::uint8_t* in[kSipBatch];
  for (std::size_t l = 0; l < kSipBatch; ++l) {
    keys[l] = keys_in[l < n ? l : 0];
    in[l] = in_in[l < n ? l : 0];
  }
  const Lanes k0 = make_lanes([&](std::size_t l) { return keys[l]->k0; });
  const Lanes k1 = make_lanes([&](std::size_t l) { return keys[l]->k1; });
  LaneState s{k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL, k0 ^ 0x6c7967656e657261ULL,
              k1 ^ 0x7465646279746573ULL};
  for (std::size_t w = 0; w < 5; ++w) {
    s.absorb(make_lanes([&](std::size_t l) { return load_le64(in[l] + 8 * w); }));
  }
  Lanes last{};
  last += std::uint64_t{40} << 56;
  s.absorb(last);
  s.v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) s.round();
  const Lanes h = s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
  if (n == kSipBatch) {
    std::memcpy(out, &h, sizeof h);  // one vector store
    return;
  }
  std::uint64_t all[kSipBatch];
  std::memcpy(all, &h, sizeof h);
  for (std::size_t l = 0; l < n; ++l) out[l] = all[l];
}

void batch_generic(const SipKey* const* keys, const std::uint8_t* const* in, std::uint64_t* out,
                   std::size_t n) noexcept {
  batch_body(keys, in, out, n);
}

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512vl"))) void batch_avx512(const SipKey* const* keys, const std::uint8_t* const* in,
                                                              std::uint64_t* out, std::size_t n) noexcept {
  batch_body(keys, in, out, n);
}

__attribute__((target("avx2"))) void batch_avx2(const SipKey* const* keys, const std::uint8_t* const* in,
                                                std::uint64_t* out, std::size_t n) noexcept {
  batch_body(keys, in, out, n);
}
#endif

}  // namespace

std::vector<SipBatchImpl> siphash_batch_impls() {
  std::vector<SipBatchImpl> all;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) all.push_back({"avx512", batch_avx512});
  if (__builtin_cpu_supports("avx2")) all.push_back({"avx2", batch_avx2});
#endif
  all.push_back({"generic", batch_generic});
  return all;
}

namespace {
// The fastest this CPU runs, chosen during static initialisation, before any
// worker runs.
const SipBatchImpl kChoice = siphash_batch_impls().front();
}  // namespace

void siphash24_40_batch(const SipKey* const* keys, const std::uint8_t* const* in, std::uint64_t* out,
                        std::size_t n) noexcept {
  if (n != 0) kChoice.fn(keys, in, out, n);
}

const char* siphash_batch_impl() noexcept { return kChoice.name; }

}  // namespace gw::crypto
