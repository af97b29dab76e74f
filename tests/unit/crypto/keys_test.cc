#include "crypto/keys.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "crypto/datagram.h"

namespace gw::crypto {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "gwkeysXXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

KeyBytes key_of(std::uint8_t fill) {
  KeyBytes k{};
  k.fill(fill);
  return k;
}

std::vector<Suite> suites() {
  std::vector<Suite> s{Suite::kChaCha20Poly1305};
  if (aes256gcm_available()) s.push_back(Suite::kAes256Gcm);
  return s;
}

void write_raw(const std::string& path, std::size_t size, mode_t mode) {
  std::ofstream(path, std::ios::binary) << std::string(size, 'k');
  ::chmod(path.c_str(), mode);
}

class CryptoTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(init()); }
};

TEST_F(CryptoTest, ClusterIdIsStableAndNameSensitive) {
  EXPECT_EQ(derive_cluster_id("prod"), derive_cluster_id("prod"));
  EXPECT_NE(derive_cluster_id("prod"), derive_cluster_id("prod2"));
  EXPECT_NE(derive_cluster_id(""), derive_cluster_id("prod"));
}

// The receiver these tests seal for and open as.
Receiver me() {
  const std::uint8_t ip[4] = {10, 0, 0, 1};
  return receiver_of(ip, 4, 7946);
}

// Issue 17, item 5: a datagram is bound to its receiver. Sealed for B, it
// carries B's tag (so A refuses it from the header) and does not open as A
// even when the tags collide (the whole identity is associated data).
TEST_F(CryptoTest, ADatagramSealedForOneReceiverDoesNotOpenAsAnother) {
  for (Suite suite : suites()) {
    const Key key(key_of(5), suite);
    NonceSource nonces(8);
    const std::uint8_t b_ip[4] = {10, 0, 0, 2};
    const Receiver a = me();
    const Receiver b = receiver_of(b_ip, 4, 7946);
    ASSERT_NE(a.tag, b.tag);
    const std::string msg = "for b";
    std::vector<std::uint8_t> buf(128);
    const std::size_t n =
        seal_datagram(key, {1, PriorityClass::kGossip, 0, b}, nonces, reinterpret_cast<const std::uint8_t*>(msg.data()),
                      msg.size(), buf.data(), buf.size());
    WireHeader h;
    ASSERT_EQ(parse_header(buf.data(), n, &h), HeaderStatus::kOk);
    EXPECT_EQ(h.receiver, b.tag);
    EXPECT_TRUE(key.verify_header_mac(buf.data()));
    Receiver a_with_b_tag = a;  // a tag collision: the AEAD still refuses
    a_with_b_tag.tag = b.tag;
    auto copy = buf;
    EXPECT_FALSE(key.open_in_place(copy.data(), h.nonce, copy.data() + kHeaderBytes, h.payload_len, a_with_b_tag));
    // Another port is another receiver too.
    const Receiver b_other_port = receiver_of(b_ip, 4, 7947);
    copy = buf;
    EXPECT_FALSE(key.open_in_place(copy.data(), h.nonce, copy.data() + kHeaderBytes, h.payload_len, b_other_port));
    copy = buf;
    EXPECT_TRUE(key.open_in_place(copy.data(), h.nonce, copy.data() + kHeaderBytes, h.payload_len, b));
  }
}

TEST_F(CryptoTest, KeyIdDependsOnKey) {
  EXPECT_EQ(derive_key_id(key_of(1)), derive_key_id(key_of(1)));
  EXPECT_NE(derive_key_id(key_of(1)), derive_key_id(key_of(2)));
  EXPECT_EQ(Key(key_of(1), Suite::kChaCha20Poly1305).id(), derive_key_id(key_of(1)));
}

TEST_F(CryptoTest, SealOpenRoundTripInPlaceForEverySuite) {
  for (Suite suite : suites()) {
    const Key key(key_of(7), suite);
    NonceSource nonces(42);
    const std::string msg = "alive node-a incarnation 3";
    std::vector<std::uint8_t> buf(512);
    const SealParams params{derive_cluster_id("c"), PriorityClass::kUrgent, 1234, me()};
    const std::size_t n = seal_datagram(key, params, nonces, reinterpret_cast<const std::uint8_t*>(msg.data()),
                                        msg.size(), buf.data(), buf.size());
    ASSERT_EQ(n, kHeaderBytes + msg.size() + kTagBytes);

    WireHeader h;
    ASSERT_EQ(parse_header(buf.data(), n, &h), HeaderStatus::kOk);
    EXPECT_EQ(h.suite, suite);
    EXPECT_EQ(h.key_id, key.id());
    EXPECT_EQ(h.cls, PriorityClass::kUrgent);
    EXPECT_TRUE(key.verify_header_mac(buf.data()));
    // The ciphertext does not contain the plaintext.
    EXPECT_EQ(std::string(buf.begin() + kHeaderBytes, buf.begin() + kHeaderBytes + msg.size()).find("alive"),
              std::string::npos);
    ASSERT_TRUE(key.open_in_place(buf.data(), h.nonce, buf.data() + kHeaderBytes, h.payload_len, me()));
    EXPECT_EQ(std::string(buf.begin() + kHeaderBytes, buf.begin() + kHeaderBytes + msg.size()), msg);
  }
}

TEST_F(CryptoTest, EveryTamperedByteIsRejected) {
  for (Suite suite : suites()) {
    const Key key(key_of(9), suite);
    NonceSource nonces(1);
    const std::string msg = "ping seq 1";
    std::vector<std::uint8_t> good(256);
    const std::size_t n =
        seal_datagram(key, {11, PriorityClass::kProbe, 5, me()}, nonces,
                      reinterpret_cast<const std::uint8_t*>(msg.data()), msg.size(), good.data(), good.size());
    good.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      auto d = good;
      d[i] ^= 0x01;
      WireHeader h;
      if (parse_header(d.data(), d.size(), &h) != HeaderStatus::kOk) continue;  // refused earlier
      const bool mac_ok = key.verify_header_mac(d.data());
      const bool open_ok = key.open_in_place(d.data(), h.nonce, d.data() + kHeaderBytes, h.payload_len, me());
      // Header bytes before the MAC are covered by the MAC; everything by the AEAD.
      if (i < kMacOffset) {
        EXPECT_FALSE(mac_ok) << "byte " << i;
      }
      EXPECT_FALSE(open_ok) << "byte " << i;
    }
  }
}

TEST_F(CryptoTest, WrongKeyCannotOpen) {
  const Key k1(key_of(1), Suite::kChaCha20Poly1305);
  const Key k2(key_of(2), Suite::kChaCha20Poly1305);
  NonceSource nonces(3);
  std::vector<std::uint8_t> buf(128);
  const std::uint8_t pt[4] = {1, 2, 3, 4};
  const std::size_t n = seal_datagram(k1, {1, PriorityClass::kGossip, 0, me()}, nonces, pt, 4, buf.data(), buf.size());
  WireHeader h;
  ASSERT_EQ(parse_header(buf.data(), n, &h), HeaderStatus::kOk);
  EXPECT_FALSE(k2.verify_header_mac(buf.data()));
  EXPECT_FALSE(k2.open_in_place(buf.data(), h.nonce, buf.data() + kHeaderBytes, h.payload_len, me()));
}

TEST_F(CryptoTest, SealRefusesWhatDoesNotFit) {
  const Key k(key_of(1), Suite::kChaCha20Poly1305);
  NonceSource nonces(3);
  std::vector<std::uint8_t> buf(kHeaderBytes + 10 + kTagBytes - 1);
  std::vector<std::uint8_t> pt(10);
  EXPECT_EQ(seal_datagram(k, {}, nonces, pt.data(), pt.size(), buf.data(), buf.size()), 0u);
}

TEST_F(CryptoTest, NoncesNeverRepeatAndEpochChangesOnWrap) {
  NonceSource nonces(99);
  const Nonce a = nonces.next();
  const Nonce b = nonces.next();
  EXPECT_NE(a, b);
  nonces.set_counter_for_test(UINT32_MAX);
  const std::uint64_t old_epoch = nonces.epoch();
  const Nonce c = nonces.next();
  EXPECT_NE(nonces.epoch(), old_epoch);
  EXPECT_EQ(c[11], 0);  // counter restarted under the new epoch
  NonceSource r1, r2;   // random epochs
  EXPECT_NE(r1.epoch(), r2.epoch());
}

TEST_F(CryptoTest, KeyringPrimaryRotationAndRemoval) {
  Keyring ring;
  const Key k1(key_of(1), Suite::kChaCha20Poly1305);
  const Key k2(key_of(2), Suite::kChaCha20Poly1305);
  ring.add(k1, true);
  ring.add(k2, false);
  EXPECT_EQ(ring.size(), 2u);
  ASSERT_NE(ring.primary(), nullptr);
  EXPECT_EQ(ring.primary()->id(), k1.id());
  EXPECT_NE(ring.find(k2.id()), nullptr);
  EXPECT_EQ(ring.find(12345), nullptr);
  EXPECT_THROW(ring.add(k1, false), KeyError);
  EXPECT_THROW(ring.remove(k1.id()), KeyError);  // primary
  ring.set_primary(k2.id());
  ring.remove(k1.id());
  EXPECT_EQ(ring.size(), 1u);
  EXPECT_EQ(ring.find(k1.id()), nullptr);
  EXPECT_EQ(ring.primary()->id(), k2.id());
  EXPECT_THROW(ring.set_primary(k1.id()), KeyError);
}

TEST_F(CryptoTest, KeyringIsBounded) {
  Keyring ring;
  for (std::uint8_t i = 0; i < Keyring::kMaxKeys; ++i) ring.add(Key(key_of(i), Suite::kChaCha20Poly1305), false);
  EXPECT_THROW(ring.add(Key(key_of(200), Suite::kChaCha20Poly1305), false), KeyError);
}

TEST_F(CryptoTest, KeygenWritesPrivateKeyThatLoads) {
  TempDir dir;
  const std::string path = dir.file("k.key");
  const std::uint32_t id = write_key_file(path, false);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 32);
  EXPECT_EQ(derive_key_id(load_key_file(path)), id);
  // No overwrite without asking.
  EXPECT_THROW(write_key_file(path, false), KeyError);
  EXPECT_EQ(derive_key_id(load_key_file(path)), id);
  const std::uint32_t id2 = write_key_file(path, true);
  EXPECT_NE(id2, id);
}

void expect_key_error(const std::string& path, const std::string& fragment) {
  try {
    load_key_file(path);
    FAIL() << "expected KeyError for " << path;
  } catch (const KeyError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

TEST_F(CryptoTest, BadKeyFilesNameTheFileAndTheProblem) {
  TempDir dir;
  expect_key_error(dir.file("missing.key"), "No such file");
  write_raw(dir.file("world.key"), 32, 0644);
  expect_key_error(dir.file("world.key"), "chmod 600");
  write_raw(dir.file("group.key"), 32, 0640);
  expect_key_error(dir.file("group.key"), "0640");
  write_raw(dir.file("short.key"), 31, 0600);
  expect_key_error(dir.file("short.key"), "31 bytes");
  write_raw(dir.file("long.key"), 33, 0600);
  expect_key_error(dir.file("long.key"), "33 bytes");
  expect_key_error(dir.file(""), "not a regular file");
  if (::geteuid() != 0) {  // root reads anything
    write_raw(dir.file("noread.key"), 32, 0200);
    expect_key_error(dir.file("noread.key"), "Permission denied");
  }
}

TEST(KeyIdText, EightLowercaseHexDigitsWithLeadingZeros) {
  EXPECT_EQ(key_id_text(0x0a1b2c3d), "0a1b2c3d");
  EXPECT_EQ(key_id_text(0), "00000000");
  EXPECT_EQ(key_id_text(0xFFFFFFFFu), "ffffffff");
}

}  // namespace
}  // namespace gw::crypto
