// control/host/keyring_state.h: the keyring persisted to control.state_dir.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
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
  p.sync(ring, material, 0);
  EXPECT_EQ(p.counters().writes, 1u);  // once at start, though nothing changed yet
  p.sync(ring, material, 1);
  EXPECT_EQ(p.counters().writes, 1u);
  ring.add(k2, false);  // a key added
  p.sync(ring, material, 2);
  EXPECT_EQ(p.counters().writes, 2u);
  ring.set_primary(k2.id());  // the primary moved
  p.sync(ring, material, 3);
  EXPECT_EQ(p.counters().writes, 3u);
  const auto back = load_keyring_state(dir_, crypto::Suite::kChaCha20Poly1305);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->ring.primary()->id(), k2.id());
  EXPECT_EQ(p.counters().write_errors, 0u);
  // A change saved by save_now() is not written again by sync().
  crypto::Keyring only2;
  only2.add(k2, true);
  EXPECT_EQ(p.save_now(only2, material), "");
  p.sync(only2, material, 4);
  EXPECT_EQ(p.counters().writes, 4u);
}

// Issue 52 item 5: a write that failed is retried (with backoff) until the
// file holds the running keyring; save_now() says why it failed.
TEST_F(KeyringStateTest, AWriteThatFailedIsRetriedWithBackoffUntilItSucceeds) {
  fs::create_directories(root_);
  const std::string blocker = root_ + "/state";
  { std::ofstream(blocker) << "x"; }  // a regular file where the directory should be
  KeyringPersister p(blocker);
  crypto::Keyring ring;
  KeyMaterial material;
  const crypto::Key k1(key_bytes(1), crypto::Suite::kChaCha20Poly1305);
  ring.add(k1, true);
  material[k1.id()] = key_bytes(1);
  EXPECT_NE(p.save_now(ring, material).find("not a directory"), std::string::npos);
  EXPECT_EQ(p.counters().write_errors, 1u);
  constexpr std::uint64_t kS = 1'000'000'000ULL;
  p.sync(ring, material, 100 * kS);  // tried, failed: next in 1 s
  EXPECT_EQ(p.counters().write_errors, 2u);
  p.sync(ring, material, 100 * kS + kS / 2);  // not yet
  EXPECT_EQ(p.counters().write_errors, 2u);
  p.sync(ring, material, 101 * kS);  // failed again: next in 2 s
  EXPECT_EQ(p.counters().write_errors, 3u);
  p.sync(ring, material, 102 * kS);
  EXPECT_EQ(p.counters().write_errors, 3u);
  fs::remove(blocker);  // the operator fixed it
  p.sync(ring, material, 103 * kS);
  EXPECT_EQ(p.counters().writes, 1u);
  const auto back = load_keyring_state(blocker, crypto::Suite::kChaCha20Poly1305);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->ring.ids(), ring.ids());
  p.sync(ring, material, 200 * kS);
  EXPECT_EQ(p.counters().writes, 1u);  // saved: nothing more to do
}

// Issue 52 item 6: one rule for control.state_dir, at start (create) and in
// `gossipctl config check` (no side effects).
TEST_F(KeyringStateTest, TheStateDirectoryMustBeOneWeCanWrite) {
  auto error_of = [](const std::string& dir, bool create) -> std::string {
    try {
      check_state_dir(dir, create);
    } catch (const crypto::KeyError& e) {
      return e.what();
    }
    return "";
  };
  // Missing, with a parent we can write: config check passes, the start creates it 0700.
  EXPECT_EQ(error_of(dir_, false), "");
  EXPECT_FALSE(fs::exists(dir_));
  EXPECT_EQ(error_of(dir_, true), "");
  struct stat st {};
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(error_of(dir_ + "/", true), "");
  // Missing parent: both refuse, naming the directory.
  const std::string orphan = root_ + "/no/such/state";
  for (bool create : {false, true}) {
    const std::string err = error_of(orphan, create);
    EXPECT_NE(err.find("control.state_dir '" + orphan + "'"), std::string::npos) << err;
    EXPECT_NE(err.find(create ? "cannot create it" : "nor does its parent"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(root_ + "/no"));
  }
  // Under a regular file, and a regular file itself.
  { std::ofstream(root_ + "/file") << "x"; }
  EXPECT_NE(error_of(root_ + "/file/state", true).find("under a regular file"), std::string::npos);
  EXPECT_NE(error_of(root_ + "/file/state", false).find("under a regular file"), std::string::npos);
  EXPECT_NE(error_of(root_ + "/file", false).find("not a directory"), std::string::npos);
}

// Not writable (mode 0500): root may write anyway, so the check runs as
// nobody when the test runs as root.
TEST_F(KeyringStateTest, AStateDirectoryWeCannotWriteIsRefused) {
  fs::create_directories(dir_);
  ASSERT_EQ(::chmod(root_.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0500), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::geteuid() == 0 && ::setresuid(65534, 65534, 65534) != 0) ::_exit(3);
    int code = 1;
    try {
      check_state_dir(dir_, true);
    } catch (const crypto::KeyError& e) {
      code = std::string(e.what()).find("not writable: Permission denied") != std::string::npos ? 0 : 2;
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: accepted, 2: another message, 3: could not drop root";
  ::chmod(dir_.c_str(), 0700);
}

TEST_F(KeyringStateTest, TagsRoundTripInOrderAndBadFilesAreRefused) {
  EXPECT_FALSE(load_tags_state(dir_).has_value());
  save_tags_state(dir_, {{"zone", "b"}, {"rack", "12"}, {"empty", ""}});
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/" + kTagsStateFile).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const auto back = load_tags_state(dir_);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, (std::vector<std::pair<std::string, std::string>>{{"zone", "b"}, {"rack", "12"}, {"empty", ""}}));
  save_tags_state(dir_, {});
  ASSERT_TRUE(load_tags_state(dir_).has_value());
  EXPECT_TRUE(load_tags_state(dir_)->empty());  // every tag unset: kept as none, not as the config's
  const std::string path = dir_ + "/" + kTagsStateFile;
  for (const char* bad : {"[]", R"({"version":2,"tags":[]})", R"({"version":1,"tags":[["a"]]})",
                          R"({"version":1,"tags":[["","x"]]})", R"({"version":1,"tags":[["a","x"],["a","y"]]})"}) {
    { std::ofstream(path) << bad; }
    ::chmod(path.c_str(), 0600);
    std::string err;
    try {
      (void)load_tags_state(dir_);
    } catch (const crypto::KeyError& e) {
      err = e.what();
    }
    EXPECT_NE(err.find(kTagsStateFile), std::string::npos) << bad << " -> " << err;
  }
}

}  // namespace
}  // namespace gw::cp
