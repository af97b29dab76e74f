// AES-256-GCM through ipsec-mb against libsodium's (issue 19): the same key,
// nonce, associated data and plaintext give the same bytes, so gateways on
// either implementation interoperate; and both meet the published vectors.
#include "crypto/aes_gcm.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include <array>
#include <string>
#include <vector>

#include "crypto/datagram.h"
#include "crypto/keys.h"
#include "crypto/nonce.h"

namespace gw::crypto {
namespace {

std::vector<std::uint8_t> hex(const std::string& s) {
  if (s.empty()) return {};  // sodium_hex2bin's output may not be null
  std::vector<std::uint8_t> out(s.size() / 2);
  std::size_t n = 0;
  EXPECT_EQ(sodium_hex2bin(out.data(), out.size(), s.data(), s.size(), nullptr, &n, nullptr), 0);
  out.resize(n);
  return out;
}

class AesGcmTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(init()); }
  void SetUp() override {
    if (!ipsecmb_gcm_available() || crypto_aead_aes256gcm_is_available() != 1) {
      GTEST_SKIP() << "this CPU has no AES-NI/PCLMULQDQ";
    }
  }
};

struct Vector {
  const char* key;
  const char* iv;
  const char* aad;
  const char* pt;
  const char* ct;
  const char* tag;
};

// The AES-256 cases of McGrew and Viega, "The Galois/Counter Mode of
// Operation" (test cases 13-16, 96-bit IVs), which ipsec-mb's own GCM
// tests carry too; each is also checked against libsodium's one-shot
// crypto_aead_aes256gcm_encrypt.
const Vector kVectors[] = {
    {"0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000", "", "", "",
     "530f8afbc74536b9a963b4f1c4cb738b"},
    {"0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000", "",
     "00000000000000000000000000000000", "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"},
    {"feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", "",
     "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b1"
     "6aedf5aa0de657ba637b391aafd255",
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5"
     "f61e6393ba7a0abcc9f662898015ad",
     "b094dac5d93471bdec1a502270e3cc6c"},
    {"feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
     "feedfacedeadbeeffeedfacedeadbeefabaddad2",
     "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b1"
     "6aedf5aa0de657ba637b39",
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5"
     "f61e6393ba7a0abcc9f662",
     "76fc6ece0f4e1768cddf8853bb2d551b"},
};

TEST_F(AesGcmTest, BothImplementationsMeetTheVectors) {
  for (const Vector& v : kVectors) {
    SCOPED_TRACE(v.tag);
    const auto key = hex(v.key);
    const auto iv = hex(v.iv);
    const auto aad = hex(v.aad);
    const auto pt = hex(v.pt);
    auto expect = hex(v.ct);
    const auto tag = hex(v.tag);
    expect.insert(expect.end(), tag.begin(), tag.end());

    // ipsec-mb, through our wrapper.
    IpsecMbGcm k;
    ASSERT_TRUE(ipsecmb_gcm_expand(key.data(), &k));
    std::vector<std::uint8_t> out(pt.size() + 16);
    ipsecmb_gcm_seal(k, iv.data(), aad.data(), aad.size(), pt.data(), pt.size(), out.data(), out.data() + pt.size());
    EXPECT_EQ(out, expect);
    std::vector<std::uint8_t> back = expect;
    ASSERT_TRUE(
        ipsecmb_gcm_open(k, iv.data(), aad.data(), aad.size(), back.data(), pt.size(), back.data() + pt.size()));
    EXPECT_EQ(std::vector<std::uint8_t>(back.begin(), back.begin() + static_cast<long>(pt.size())), pt);

    // libsodium.
    std::vector<std::uint8_t> s(pt.size() + 16);
    unsigned long long n = 0;
    crypto_aead_aes256gcm_encrypt(s.data(), &n, pt.data(), pt.size(), aad.data(), aad.size(), nullptr, iv.data(),
                                  key.data());
    EXPECT_EQ(s, expect);
    ipsecmb_gcm_clear(&k);
  }
}

TEST_F(AesGcmTest, ATamperedTagOrCiphertextFailsAndIsWiped) {
  const auto key = hex(kVectors[3].key);
  const auto iv = hex(kVectors[3].iv);
  const auto aad = hex(kVectors[3].aad);
  auto ct = hex(kVectors[3].ct);
  const auto tag = hex(kVectors[3].tag);
  IpsecMbGcm k;
  ASSERT_TRUE(ipsecmb_gcm_expand(key.data(), &k));
  for (std::size_t bit = 0; bit < (ct.size() + tag.size()) * 8; bit += 7) {
    std::vector<std::uint8_t> c = ct;
    std::vector<std::uint8_t> t = tag;
    if (bit / 8 < c.size()) {
      c[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    } else {
      t[bit / 8 - c.size()] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    }
    EXPECT_FALSE(ipsecmb_gcm_open(k, iv.data(), aad.data(), aad.size(), c.data(), c.size(), t.data())) << bit;
    EXPECT_EQ(c, std::vector<std::uint8_t>(c.size(), 0)) << "a forgery's decryption must not stay readable";
  }
  std::vector<std::uint8_t> bad_aad = aad;
  bad_aad[0] ^= 1;
  std::vector<std::uint8_t> c = ct;
  EXPECT_FALSE(ipsecmb_gcm_open(k, iv.data(), bad_aad.data(), bad_aad.size(), c.data(), c.size(), tag.data()));
}

TEST_F(AesGcmTest, ClearWipesTheExpandedKey) {
  KeyBytes raw{};
  raw.fill(0x5a);
  IpsecMbGcm k;
  ASSERT_TRUE(ipsecmb_gcm_expand(raw.data(), &k));
  bool any = false;
  for (std::uint8_t b : k.key_data) any = any || b != 0;
  ASSERT_TRUE(any);
  ipsecmb_gcm_clear(&k);
  for (std::uint8_t b : k.key_data) ASSERT_EQ(b, 0);
  EXPECT_EQ(k.enc, nullptr);
  EXPECT_EQ(k.dec, nullptr);
}

Receiver receiver() {
  const std::uint8_t ip[4] = {10, 0, 0, 1};
  return receiver_of(ip, sizeof ip, 7946);
}

// Whole datagrams, every payload size a gateway carries (limits.max_payload_bytes
// is at most 1934): sealed by one implementation, byte-identical to the
// other's, and opened by the other.
TEST_F(AesGcmTest, DatagramsInteroperateAtEverySize) {
  KeyBytes raw{};
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<std::uint8_t>(i * 13 + 5);
  const Key sodium(raw, Suite::kAes256Gcm, AesGcmImpl::kLibsodium);
  const Key mb(raw, Suite::kAes256Gcm, AesGcmImpl::kIpsecMb);
  ASSERT_EQ(sodium.aes_impl(), AesGcmImpl::kLibsodium);
  ASSERT_EQ(mb.aes_impl(), AesGcmImpl::kIpsecMb);
  EXPECT_EQ(Key(raw, Suite::kAes256Gcm).aes_impl(), AesGcmImpl::kIpsecMb) << "kBest must pick ipsec-mb here";
  SealParams p;
  p.cluster_id = derive_cluster_id("interop");
  p.timestamp = 1700000000;
  p.to = receiver();
  constexpr std::size_t kMax = 1934;
  std::vector<std::uint8_t> pt(kMax);
  for (std::size_t i = 0; i < pt.size(); ++i) pt[i] = static_cast<std::uint8_t>(i * 31 + 7);
  std::vector<std::uint8_t> a(kHeaderBytes + kMax + kTagBytes);
  std::vector<std::uint8_t> b(a.size());
  for (std::size_t len = 0; len <= kMax; ++len) {
    NonceSource na(len + 1);
    NonceSource nb(len + 1);
    const std::size_t n = seal_datagram(sodium, p, na, pt.data(), len, a.data(), a.size());
    ASSERT_EQ(n, kHeaderBytes + len + kTagBytes);
    ASSERT_EQ(seal_datagram(mb, p, nb, pt.data(), len, b.data(), b.size()), n);
    ASSERT_TRUE(std::equal(a.begin(), a.begin() + static_cast<long>(n), b.begin())) << "size " << len;
    WireHeader h;
    ASSERT_EQ(parse_header(a.data(), n, &h), HeaderStatus::kOk);
    // libsodium's datagram opened by ipsec-mb, and the other way round.
    ASSERT_TRUE(mb.open_in_place(a.data(), h.nonce, a.data() + kHeaderBytes, h.payload_len, p.to)) << len;
    ASSERT_TRUE(std::equal(pt.begin(), pt.begin() + static_cast<long>(len), a.begin() + kHeaderBytes));
    ASSERT_TRUE(sodium.open_in_place(b.data(), h.nonce, b.data() + kHeaderBytes, h.payload_len, p.to)) << len;
    ASSERT_TRUE(std::equal(pt.begin(), pt.begin() + static_cast<long>(len), b.begin() + kHeaderBytes));
  }
}

TEST_F(AesGcmTest, OneFlippedBitOrAnotherReceiverFailsInBoth) {
  KeyBytes raw{};
  raw.fill(3);
  const Key sodium(raw, Suite::kAes256Gcm, AesGcmImpl::kLibsodium);
  const Key mb(raw, Suite::kAes256Gcm, AesGcmImpl::kIpsecMb);
  SealParams p;
  p.to = receiver();
  NonceSource nonces(9);
  std::vector<std::uint8_t> pt(300, 0xab);
  std::vector<std::uint8_t> d(kHeaderBytes + pt.size() + kTagBytes);
  const std::size_t n = seal_datagram(mb, p, nonces, pt.data(), pt.size(), d.data(), d.size());
  ASSERT_EQ(n, d.size());
  WireHeader h;
  ASSERT_EQ(parse_header(d.data(), n, &h), HeaderStatus::kOk);
  const std::uint8_t other_ip[4] = {10, 0, 0, 2};
  const Receiver other = receiver_of(other_ip, sizeof other_ip, 7946);
  for (const Key* k : {&sodium, &mb}) {
    for (std::size_t at = kHeaderBytes; at < n; at += 37) {
      std::vector<std::uint8_t> c = d;
      c[at] ^= 0x10;
      EXPECT_FALSE(k->open_in_place(c.data(), h.nonce, c.data() + kHeaderBytes, h.payload_len, p.to)) << at;
    }
    std::vector<std::uint8_t> c = d;
    EXPECT_FALSE(k->open_in_place(c.data(), h.nonce, c.data() + kHeaderBytes, h.payload_len, other));
    c = d;
    EXPECT_TRUE(k->open_in_place(c.data(), h.nonce, c.data() + kHeaderBytes, h.payload_len, p.to));
  }
}

TEST_F(AesGcmTest, ImplementationNamesSayWhatRuns) {
  const std::string aes = aes256gcm_impl_name();
  EXPECT_EQ(aes.rfind("ipsec-mb ", 0), 0u) << aes;
  EXPECT_EQ(chacha20poly1305_impl_name().rfind("libsodium ", 0), 0u);
}

// AES-128/192-GCM for memberlist's keys (issue 54): the GCM specification's
// test cases 2 (AES-128) and 8 (AES-192): zero key, zero 96-bit IV, one zero
// block; and open_to leaves its input as it was.
TEST_F(AesGcmTest, Aes128And192MeetTheGcmSpecVectors) {
  struct Case {
    std::size_t key_len;
    const char* ct;
    const char* tag;
  };
  for (const Case& c : {Case{16, "0388dace60b6a392f328c2b971b2fe78", "ab6e47d42cec13bdf53a67b21257bddf"},
                        Case{24, "98e7247c07f0fe411c267e4384b0f600", "2ff58d80033927ab8ef4d4587514f0fb"}}) {
    const std::vector<std::uint8_t> key(c.key_len, 0), iv(12, 0), pt(16, 0);
    IpsecMbGcm k;
    ASSERT_TRUE(ipsecmb_gcm_expand_len(key.data(), key.size(), &k));
    std::vector<std::uint8_t> ct(16), tag(16);
    ipsecmb_gcm_seal(k, iv.data(), nullptr, 0, pt.data(), pt.size(), ct.data(), tag.data());
    EXPECT_EQ(ct, hex(c.ct)) << c.key_len;
    EXPECT_EQ(tag, hex(c.tag)) << c.key_len;
    const std::vector<std::uint8_t> sealed = ct;
    std::vector<std::uint8_t> out(16, 0xee);
    EXPECT_TRUE(ipsecmb_gcm_open_to(k, iv.data(), nullptr, 0, ct.data(), ct.size(), out.data(), tag.data()));
    EXPECT_EQ(out, pt);
    EXPECT_EQ(ct, sealed);
    tag[0] ^= 1;
    EXPECT_FALSE(ipsecmb_gcm_open_to(k, iv.data(), nullptr, 0, ct.data(), ct.size(), out.data(), tag.data()));
    ipsecmb_gcm_clear(&k);
  }
  IpsecMbGcm k;
  const std::vector<std::uint8_t> key(20, 0);
  EXPECT_FALSE(ipsecmb_gcm_expand_len(key.data(), key.size(), &k));
}

TEST(Crc32Ieee, CheckValue) {
  const char* s = "123456789";
  EXPECT_EQ(crc32_ieee(reinterpret_cast<const std::uint8_t*>(s), 9), 0xCBF43926u);
  EXPECT_EQ(crc32_ieee(nullptr, 0), 0u);
}

}  // namespace
}  // namespace gw::crypto
