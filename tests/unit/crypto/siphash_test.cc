// The inlined and batched header-MAC SipHash must equal libsodium's
// crypto_shorthash_siphash24 bit for bit, or every header would be refused
// (or, worse, a different function would guard the ladder).
#include "crypto/siphash.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include <array>
#include <cstdint>
#include <iostream>
#include <random>
#include <vector>

namespace gw::crypto {
namespace {

using Header40 = std::array<std::uint8_t, 40>;
using KeyRaw = std::array<std::uint8_t, crypto_shorthash_siphash24_KEYBYTES>;

std::uint64_t libsodium_mac(const KeyRaw& key, const Header40& in) {
  std::array<std::uint8_t, crypto_shorthash_siphash24_BYTES> out{};
  crypto_shorthash_siphash24(out.data(), in.data(), in.size(), key.data());
  return load_le64(out.data());
}

template <typename T>
T random_bytes(std::mt19937_64& rng) {
  T t{};
  for (auto& b : t) b = static_cast<std::uint8_t>(rng());
  return t;
}

TEST(SipHash, MatchesTheReferenceVector) {
  // The SipHash paper's test key 00..0f read as two little-endian words,
  // and the 40-byte message 00..27 hashed as libsodium hashes it.
  KeyRaw key{};
  for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<std::uint8_t>(i);
  const SipKey k = SipKey::from_bytes(key.data());
  EXPECT_EQ(k.k0, 0x0706050403020100ULL);
  EXPECT_EQ(k.k1, 0x0f0e0d0c0b0a0908ULL);
  Header40 in{};
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint8_t>(i);
  EXPECT_EQ(siphash24_40(k, in.data()), libsodium_mac(key, in));
}

TEST(SipHash, ScalarEqualsLibsodiumOnRandomKeysAndHeaders) {
  ASSERT_GE(sodium_init(), 0);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const auto key = random_bytes<KeyRaw>(rng);
    const auto in = random_bytes<Header40>(rng);
    ASSERT_EQ(siphash24_40(SipKey::from_bytes(key.data()), in.data()), libsodium_mac(key, in)) << "case " << i;
  }
}

TEST(SipHash, BatchEqualsLibsodiumForEveryBatchSizeAndMixedKeys) {
  std::mt19937_64 rng(11);
  std::cout << "batch implementation: " << siphash_batch_impl() << "\n";
  for (int round = 0; round < 2000; ++round) {
    const std::size_t n = 1 + static_cast<std::size_t>(round) % kSipBatch;
    std::vector<KeyRaw> raw(n);
    std::vector<SipKey> keys(n);
    std::vector<Header40> in(n);
    std::vector<const SipKey*> kp(n);
    std::vector<const std::uint8_t*> ip(n);
    for (std::size_t l = 0; l < n; ++l) {
      // Some lanes share a key, as packets of one sender do.
      raw[l] = (l > 0 && rng() % 3 == 0) ? raw[l - 1] : random_bytes<KeyRaw>(rng);
      keys[l] = SipKey::from_bytes(raw[l].data());
      in[l] = random_bytes<Header40>(rng);
      kp[l] = &keys[l];
      ip[l] = in[l].data();
    }
    std::array<std::uint64_t, kSipBatch + 1> out{};
    out.fill(0xA5A5A5A5A5A5A5A5ULL);
    siphash24_40_batch(kp.data(), ip.data(), out.data(), n);
    for (std::size_t l = 0; l < n; ++l) {
      ASSERT_EQ(out[l], libsodium_mac(raw[l], in[l])) << "round " << round << " lane " << l << " of " << n;
    }
    // Nothing is written past the n results.
    for (std::size_t l = n; l < out.size(); ++l) ASSERT_EQ(out[l], 0xA5A5A5A5A5A5A5A5ULL);
  }
}

TEST(SipHash, EveryImplementationThisCpuRunsEqualsLibsodium) {
  std::mt19937_64 rng(13);
  const auto impls = siphash_batch_impls();
  ASSERT_FALSE(impls.empty());
  EXPECT_STREQ(impls.back().name, "generic");
  for (const SipBatchImpl& impl : impls) {
    for (std::size_t n = 1; n <= kSipBatch; ++n) {
      std::array<KeyRaw, kSipBatch> raw;
      std::array<SipKey, kSipBatch> keys;
      std::array<Header40, kSipBatch> in;
      std::array<const SipKey*, kSipBatch> kp;
      std::array<const std::uint8_t*, kSipBatch> ip;
      for (std::size_t l = 0; l < n; ++l) {
        raw[l] = random_bytes<KeyRaw>(rng);
        keys[l] = SipKey::from_bytes(raw[l].data());
        in[l] = random_bytes<Header40>(rng);
        kp[l] = &keys[l];
        ip[l] = in[l].data();
      }
      std::array<std::uint64_t, kSipBatch> out{};
      impl.fn(kp.data(), ip.data(), out.data(), n);
      for (std::size_t l = 0; l < n; ++l) {
        ASSERT_EQ(out[l], libsodium_mac(raw[l], in[l])) << impl.name << " lane " << l << " of " << n;
      }
    }
  }
}

TEST(SipHash, BatchOfZeroWritesNothing) {
  std::uint64_t out = 42;
  siphash24_40_batch(nullptr, nullptr, &out, 0);
  EXPECT_EQ(out, 42u);
}

}  // namespace
}  // namespace gw::crypto
