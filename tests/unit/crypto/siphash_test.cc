// The inlined and batched header-MAC SipHash must equal libsodium's
// crypto_shorthash_siphash24 bit for bit, or every header would be refused
// (or, worse, a different function would guard the ladder).
#include "crypto/siphash.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include <array>
#include <bit>
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

// SipHash-c-d as the paper defines it, for any round counts: checked against
// libsodium at 2-4, it then defines what SipHash-1-3 (the table hash,
// issue 51) must give.
std::uint64_t reference_siphash(int c, int d, const SipKey& k, const std::uint8_t* in, std::size_t len) {
  std::uint64_t v0 = k.k0 ^ 0x736f6d6570736575ULL, v1 = k.k1 ^ 0x646f72616e646f6dULL;
  std::uint64_t v2 = k.k0 ^ 0x6c7967656e657261ULL, v3 = k.k1 ^ 0x7465646279746573ULL;
  const auto round = [&] {
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
  };
  std::vector<std::uint8_t> m(in, in + len);
  const std::size_t pad = 8 - len % 8;
  m.insert(m.end(), pad, 0);
  m.back() = static_cast<std::uint8_t>(len);
  for (std::size_t i = 0; i < m.size(); i += 8) {
    const std::uint64_t w = load_le64(m.data() + i);
    v3 ^= w;
    for (int r = 0; r < c; ++r) round();
    v0 ^= w;
  }
  v2 ^= 0xff;
  for (int r = 0; r < d; ++r) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

TEST(SipHash, TableHashIsSipHash13) {
  std::mt19937_64 rng(0x5135);
  for (int t = 0; t < 200; ++t) {
    const KeyRaw key = random_bytes<KeyRaw>(rng);
    const SipKey k = SipKey::from_bytes(key.data());
    std::vector<std::uint8_t> msg(static_cast<std::size_t>(rng() % 40));
    for (auto& b : msg) b = static_cast<std::uint8_t>(rng());
    // The reference is the reference: 2-4 equals libsodium.
    std::array<std::uint8_t, crypto_shorthash_siphash24_BYTES> out{};
    crypto_shorthash_siphash24(out.data(), msg.data(), msg.size(), key.data());
    ASSERT_EQ(reference_siphash(2, 4, k, msg.data(), msg.size()), load_le64(out.data()));
    EXPECT_EQ(siphash13(k, msg.data(), msg.size()), reference_siphash(1, 3, k, msg.data(), msg.size()));
    // The two-word form is the 16-byte message.
    const std::uint64_t a = rng(), b = rng();
    std::array<std::uint8_t, 16> words{};
    for (int i = 0; i < 8; ++i) {
      words[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(a >> (8 * i));
      words[static_cast<std::size_t>(8 + i)] = static_cast<std::uint8_t>(b >> (8 * i));
    }
    EXPECT_EQ(siphash13_2w(k, a, b), reference_siphash(1, 3, k, words.data(), words.size()));
  }
}

TEST(SipHash, BatchOfZeroWritesNothing) {
  std::uint64_t out = 42;
  siphash24_40_batch(nullptr, nullptr, &out, 0);
  EXPECT_EQ(out, 42u);
}

}  // namespace
}  // namespace gw::crypto
