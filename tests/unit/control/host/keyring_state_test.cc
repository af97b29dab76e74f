// control/host/keyring_state.h: the keyring persisted to control.state_dir.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "control/host/keyring_state.h"

namespace gw::cp {
namespace {

namespace fs = std::filesystem;

crypto::KeyBytes key_bytes(std::uint8_t fill) {
  crypto::KeyBytes k{};
  k.fill(fill);
  return k;
}

class KeyringStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(crypto::init());
    char tmpl[] = "/tmp/gw-keyring-state-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/state";  // does not exist yet: save creates it
  }
  void TearDown() override { fs::remove_all(root_); }

  void write_state(const std::string& text, mode_t mode = 0600) {
    fs::create_directories(dir_);
    const std::string path = dir_ + "/" + kKeyringStateFile;
    { std::ofstream(path) << text; }
    ::chmod(path.c_str(), mode);
  }
  std::string error_of_load() {
    try {
      (void)load_keyring_state(dir_, crypto::Suite::kChaCha20Poly1305);
    } catch (const crypto::KeyError& e) {
      return e.what();
    }
    return "";
  }

  std::string root_;
  std::string dir_;
};

TEST_F(KeyringStateTest, NothingStoredIsNotAnError) {
  EXPECT_FALSE(load_keyring_state(dir_, crypto::Suite::kChaCha20Poly1305).has_value());
}

TEST_F(KeyringStateTest, RoundTripKeepsKeysAndPrimaryWithOwnerOnlyModes) {
  crypto::Keyring ring;
  KeyMaterial material;
  for (std::uint8_t f : {1, 2, 3}) {
    const crypto::Key k(key_bytes(f), crypto::Suite::kChaCha20Poly1305);
    ring.add(k, f == 2);
    material[k.id()] = key_bytes(f);
  }
  save_keyring_state(dir_, ring, material);
  struct stat st {};
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir_ + "/" + kKeyringStateFile).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(fs::exists(dir_ + "/" + kKeyringStateFile + ".tmp"));

  const auto back = load_keyring_state(dir_, crypto::Suite::kChaCha20Poly1305);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->ring.ids(), ring.ids());
  EXPECT_EQ(back->ring.primary()->id(), ring.primary()->id());
  EXPECT_EQ(back->material, material);

  // Replacing it is atomic: the new ring, nothing half-written left over.
  crypto::Keyring smaller;
  const crypto::Key k2(key_bytes(2), crypto::Suite::kChaCha20Poly1305);
  smaller.add(k2, true);
  save_keyring_state(dir_, smaller, material);
  const auto again = load_keyring_state(dir_, crypto::Suite::kChaCha20Poly1305);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->ring.ids(), std::vector<std::uint32_t>{k2.id()});
}

TEST_F(KeyringStateTest, BadFilesAreRefusedNamingTheFile) {
  const std::string k1(64, 'a');
  const std::string k2(64, 'b');
  struct Case {
    std::string text;
    mode_t mode;
    std::string fragment;
  };
  const Case cases[] = {
      {R"({"version":1,"primary":")" + k1 + R"(","keys":[")" + k1 + R"("]})", 0644, "readable by group or others"},
      {"not json", 0600, "not a JSON object"},
      {R"({"version":2,"primary":")" + k1 + R"(","keys":[")" + k1 + R"("]})", 0600, "unknown version"},
      {R"({"version":1,"keys":[")" + k1 + R"("]})", 0600, "no primary"},
      {R"({"version":1,"primary":")" + k1 + R"(","keys":[]})", 0600, "no keys"},
      {R"({"version":1,"primary":")" + k1 + R"(","keys":["abc"]})", 0600, "64 hex digits"},
      {R"({"version":1,"primary":")" + k1 + R"(","keys":[")" + k2 + R"("]})", 0600, "primary is not among"},
      {R"({"version":1,"primary":")" + k1 + R"(","keys":[")" + k1 + R"(",")" + k1 + R"("]})", 0600, "twice"},
  };
  for (const Case& c : cases) {
    write_state(c.text, c.mode);
    const std::string err = error_of_load();
    EXPECT_NE(err.find(c.fragment), std::string::npos) << c.text << " -> " << err;
    EXPECT_NE(err.find(kKeyringStateFile), std::string::npos) << err;
  }
}

TEST_F(KeyringStateTest, AFifoIsRefusedWithoutHanging) {
  fs::create_directories(dir_);
  ASSERT_EQ(::mkfifo((dir_ + "/" + kKeyringStateFile).c_str(), 0600), 0);
  EXPECT_NE(error_of_load().find("not a regular file"), std::string::npos);
}

TEST_F(KeyringStateTest, ThePersisterWritesAtFirstAndAtEachChangeOnly) {
  crypto::Keyring ring;
  KeyMaterial material;
  const crypto::Key k1(key_bytes(1), crypto::Suite::kChaCha20Poly1305);
  const crypto::Key k2(key_bytes(2), crypto::Suite::kChaCha20Poly1305);
  ring.add(k1, true);
  material[k1.id()] = key_bytes(1);
  material[k2.id()] = key_bytes(2);
  KeyringPersister p(dir_);
  p.sync(ring, material);
  EXPECT_EQ(p.counters().writes, 1u);  // once at start, though nothing changed yet
  p.sync(ring, material);
  EXPECT_EQ(p.counters().writes, 1u);
  ring.add(k2, false);  // a key added
  p.sync(ring, material);
  EXPECT_EQ(p.counters().writes, 2u);
  ring.set_primary(k2.id());  // the primary moved
  p.sync(ring, material);
  EXPECT_EQ(p.counters().writes, 3u);
  const auto back = load_keyring_state(dir_, crypto::Suite::kChaCha20Poly1305);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->ring.primary()->id(), k2.id());
  EXPECT_EQ(p.counters().write_errors, 0u);
}

TEST_F(KeyringStateTest, APersisterThatCannotWriteCountsItOnceAndTriesAgainAtTheNextChange) {
  fs::create_directories(root_);
  { std::ofstream(root_ + "/file") << "x"; }
  KeyringPersister p(root_ + "/file/state");  // a directory under a regular file: never writable
  crypto::Keyring ring;
  KeyMaterial material;
  const crypto::Key k1(key_bytes(1), crypto::Suite::kChaCha20Poly1305);
  ring.add(k1, true);
  material[k1.id()] = key_bytes(1);
  p.sync(ring, material);
  p.sync(ring, material);  // not retried in a loop
  EXPECT_EQ(p.counters().write_errors, 1u);
  const crypto::Key k2(key_bytes(2), crypto::Suite::kChaCha20Poly1305);
  ring.add(k2, false);
  material[k2.id()] = key_bytes(2);
  p.sync(ring, material);
  EXPECT_EQ(p.counters().write_errors, 2u);
  EXPECT_EQ(p.counters().writes, 0u);
}

}  // namespace
}  // namespace gw::cp
