// The keyring file watch (control/filter/keyring_watch.h): a change of the
// file is loaded once, a broken file keeps the keyring and is reported once
// per change, SIGHUP forces a load, and nothing is looked at between polls.
#include "control/filter/keyring_watch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace gw::cp::filter {
namespace {

namespace ml = dp::ml;
constexpr std::uint64_t kSec = KeyringWatch::kPollNs;

// The test's "file format": one key per line, its length in bytes ("16",
// "32"); anything else is an error. Counts its calls.
struct FakeLoader {
  int calls = 0;
  std::unique_ptr<ml::Keyring> operator()(const std::string& path, std::string* error) {
    ++calls;
    std::ifstream in(path);
    std::vector<std::vector<std::uint8_t>> keys;
    std::string line;
    while (std::getline(in, line)) {
      if (line != "16" && line != "32") {
        *error = "bad line '" + line + "'";
        return nullptr;
      }
      keys.emplace_back(std::stoul(line), std::uint8_t{7});
    }
    std::vector<std::span<const std::uint8_t>> views(keys.begin(), keys.end());
    return ml::Keyring::make(views, error);
  }
};

class KeyringWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gw-kw-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "keyring").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // Written through a new file and a rename, as agents do: a new inode even
  // when size and mtime would match.
  void write(const std::string& text) {
    const std::string tmp = path_ + ".new";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, path_);
  }
  KeyringWatch make(FakeLoader& loader, std::uint64_t now) {
    return KeyringWatch(path_, [&loader](const std::string& p, std::string* e) { return loader(p, e); },
                        stamp_file(path_), now);
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(KeyringWatchTest, UnchangedFileIsNotReadAndPollsWaitASecond) {
  write("16\n");
  FakeLoader loader;
  KeyringWatch w = make(loader, 0);
  std::unique_ptr<ml::Keyring> next;
  std::string error;
  EXPECT_EQ(w.poll(kSec, false, &next, &error), KeyringWatch::Outcome::kUnchanged);
  write("16\n32\n");
  // Changed, but the second has not passed since the last look.
  EXPECT_EQ(w.poll(kSec + 1, false, &next, &error), KeyringWatch::Outcome::kUnchanged);
  EXPECT_EQ(loader.calls, 0);
  ASSERT_EQ(w.poll(2 * kSec, false, &next, &error), KeyringWatch::Outcome::kLoaded);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->size(), 2u);
  EXPECT_EQ(loader.calls, 1);
  EXPECT_EQ(w.poll(3 * kSec, false, &next, &error), KeyringWatch::Outcome::kUnchanged);
  EXPECT_EQ(loader.calls, 1);
  EXPECT_EQ(w.counters().loaded, 1u);
  EXPECT_EQ(w.counters().failed, 0u);
}

TEST_F(KeyringWatchTest, BrokenFileIsReportedOnceAndAFixLoads) {
  write("16\n");
  FakeLoader loader;
  KeyringWatch w = make(loader, 0);
  std::unique_ptr<ml::Keyring> next;
  std::string error;
  write("sixteen\n");
  EXPECT_EQ(w.poll(kSec, false, &next, &error), KeyringWatch::Outcome::kFailed);
  EXPECT_EQ(error, "bad line 'sixteen'");
  EXPECT_EQ(next, nullptr);
  // Not tried (nor reported) again while it stays the same.
  EXPECT_EQ(w.poll(2 * kSec, false, &next, &error), KeyringWatch::Outcome::kUnchanged);
  EXPECT_EQ(loader.calls, 1);
  write("32\n");
  ASSERT_EQ(w.poll(3 * kSec, false, &next, &error), KeyringWatch::Outcome::kLoaded);
  EXPECT_EQ(next->size(), 1u);
  EXPECT_EQ(next->key_len(0), 32u);
  EXPECT_EQ(w.counters().loaded, 1u);
  EXPECT_EQ(w.counters().failed, 1u);
}

TEST_F(KeyringWatchTest, MissingFileFailsOnceThenReappears) {
  write("16\n");
  FakeLoader loader;
  KeyringWatch w = make(loader, 0);
  std::unique_ptr<ml::Keyring> next;
  std::string error;
  std::filesystem::remove(path_);
  EXPECT_EQ(w.poll(kSec, false, &next, &error), KeyringWatch::Outcome::kFailed);
  EXPECT_NE(error.find("missing"), std::string::npos) << error;
  EXPECT_EQ(w.poll(2 * kSec, false, &next, &error), KeyringWatch::Outcome::kUnchanged);
  write("16\n");
  EXPECT_EQ(w.poll(3 * kSec, false, &next, &error), KeyringWatch::Outcome::kLoaded);
  EXPECT_EQ(w.counters().failed, 1u);
  EXPECT_EQ(loader.calls, 1);  // a missing file is not handed to the loader
}

TEST_F(KeyringWatchTest, ForceLoadsAnUnchangedFileAtOnce) {
  write("16\n");
  FakeLoader loader;
  KeyringWatch w = make(loader, 0);
  std::unique_ptr<ml::Keyring> next;
  std::string error;
  ASSERT_EQ(w.poll(1, true, &next, &error), KeyringWatch::Outcome::kLoaded);  // SIGHUP, well within the second
  EXPECT_EQ(next->size(), 1u);
  EXPECT_EQ(w.counters().loaded, 1u);
}

}  // namespace
}  // namespace gw::cp::filter
