// memberlist.keyring_file (config/ml_keyring.h): the Serf/Consul keyring
// file's JSON and base64, and the errors an operator sees for a bad one.
#include "config/ml_keyring.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

namespace gw::config {
namespace {

// "0123456789abcdef" (16 bytes), 24 and 32 bytes of the same pattern.
constexpr const char* k16 = "MDEyMzQ1Njc4OWFiY2RlZg==";
constexpr const char* k24 = "MDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1u";
constexpr const char* k32 = "MDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1ub3BxcnN0dXY=";

std::vector<std::uint8_t> bytes(std::string_view s) { return {s.begin(), s.end()}; }

std::string parse_error(std::string_view json) {
  std::string error;
  const std::optional<MlKeys> keys = parse_ml_keyring(json, &error);
  EXPECT_FALSE(keys.has_value()) << json;
  EXPECT_FALSE(error.empty()) << json;
  return error;
}

TEST(MlKeyring, ParsesSerfsFormatPrimaryFirst) {
  std::string error;
  const std::optional<MlKeys> keys =
      parse_ml_keyring(std::string("[\"") + k32 + "\", \"" + k16 + "\",\n \"" + k24 + "\"]\n", &error);
  ASSERT_TRUE(keys.has_value()) << error;
  ASSERT_EQ(keys->size(), 3u);
  EXPECT_EQ((*keys)[0], bytes("0123456789abcdefghijklmnopqrstuv"));
  EXPECT_EQ((*keys)[1], bytes("0123456789abcdef"));
  EXPECT_EQ((*keys)[2], bytes("0123456789abcdefghijklmn"));
}

TEST(MlKeyring, ADuplicateKeyIsKeptOnceAtItsFirstPlace) {
  std::string error;
  const std::optional<MlKeys> keys =
      parse_ml_keyring(std::string("[\"") + k16 + "\",\"" + k32 + "\",\"" + k16 + "\"]", &error);
  ASSERT_TRUE(keys.has_value()) << error;
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ((*keys)[0].size(), 16u);
  EXPECT_EQ((*keys)[1].size(), 32u);
}

TEST(MlKeyring, BadFilesNameWhatIsWrong) {
  EXPECT_NE(parse_error("").find("not valid JSON"), std::string::npos);
  EXPECT_NE(parse_error("[\"abc\"").find("not valid JSON"), std::string::npos);
  EXPECT_NE(parse_error("{\"keys\": []}").find("got a JSON object"), std::string::npos);
  EXPECT_NE(parse_error("\"MDEyMzQ1Njc4OWFiY2RlZg==\"").find("got a JSON string"), std::string::npos);
  EXPECT_NE(parse_error("[]").find("no keys"), std::string::npos);
  EXPECT_NE(parse_error(std::string("[\"") + k16 + "\", 7]").find("key [1]: expected a base64 string, got a JSON number"),
            std::string::npos);
  EXPECT_NE(parse_error("[\"not base64!\"]").find("key [0]: not standard padded base64"), std::string::npos);
  // Unpadded (Go's RawStdEncoding) and URL-safe are not what Serf writes.
  EXPECT_NE(parse_error("[\"MDEyMzQ1Njc4OWFiY2RlZg\"]").find("key [0]: not standard padded base64"), std::string::npos);
  EXPECT_NE(parse_error("[\"MDEyMzQ1Njc4OWFiY2RlZg=\"]").find("key [0]"), std::string::npos);
  // 15 and 33 bytes.
  EXPECT_NE(parse_error("[\"MDEyMzQ1Njc4OWFiY2Rl\"]").find("key [0]: 15 bytes"), std::string::npos);
  EXPECT_NE(parse_error("[\"MDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3\"]").find("key [0]: 33 bytes"),
            std::string::npos);
  EXPECT_NE(parse_error("[\"" + std::string(65, 'A') + "\"]").find("key [0]: too long"), std::string::npos);
  EXPECT_NE(parse_error(std::string("[\"") + k16 + "\", \"\"]").find("key [1]: 0 bytes"), std::string::npos);
}

TEST(MlKeyring, AtMostSixteenDistinctKeys) {
  // Sixteen distinct 16-byte keys: "0123456789abcdeX" for X in A..P.
  const char* tails[] = {"QQ==", "Qg==", "Qw==", "RA==", "RQ==", "Rg==", "Rw==", "SA==",
                         "SQ==", "Sg==", "Sw==", "TA==", "TQ==", "Tg==", "Tw==", "UA==", "UQ=="};
  std::string json = "[";
  for (int i = 0; i < 16; ++i) json += std::string(i ? "," : "") + "\"MDEyMzQ1Njc4OWFiY2Rl" + tails[i] + "\"";
  std::string error;
  const std::optional<MlKeys> sixteen = parse_ml_keyring(json + "]", &error);
  ASSERT_TRUE(sixteen.has_value()) << error;
  EXPECT_EQ(sixteen->size(), 16u);
  EXPECT_EQ(sixteen->back(), bytes("0123456789abcdeP"));
  EXPECT_NE(parse_error(json + ",\"MDEyMzQ1Njc4OWFiY2Rl" + tails[16] + "\"]").find("more than 16 keys"),
            std::string::npos);
}

class MlKeyringFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "gw_mlkeyring_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const std::string& f : files_) ::unlink(f.c_str());
    ::rmdir(dir_.c_str());
  }
  std::string write(const std::string& name, const std::string& text, mode_t mode) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    EXPECT_EQ(::chmod(path.c_str(), mode), 0);
    files_.push_back(path);
    return path;
  }
  std::string dir_;
  std::vector<std::string> files_;
};

TEST_F(MlKeyringFile, LoadsAPrivateFileWithoutWarning) {
  const std::string path = write("local.keyring", std::string("[\"") + k24 + "\"]\n", 0600);
  std::string error, warning = "stale";
  const std::optional<MlKeys> keys = load_ml_keyring(path, &error, &warning);
  ASSERT_TRUE(keys.has_value()) << error;
  EXPECT_EQ(keys->size(), 1u);
  EXPECT_TRUE(warning.empty()) << warning;
}

TEST_F(MlKeyringFile, AGroupReadableFileLoadsWithAWarning) {
  const std::string path = write("local.keyring", std::string("[\"") + k24 + "\"]\n", 0644);
  std::string error, warning;
  ASSERT_TRUE(load_ml_keyring(path, &error, &warning).has_value()) << error;
  EXPECT_NE(warning.find("0644"), std::string::npos) << warning;
  EXPECT_NE(warning.find("chmod 600"), std::string::npos) << warning;
}

TEST_F(MlKeyringFile, ErrorsNameThePath) {
  std::string error;
  EXPECT_FALSE(load_ml_keyring(dir_ + "/absent", &error).has_value());
  EXPECT_NE(error.find(dir_ + "/absent"), std::string::npos) << error;
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;

  EXPECT_FALSE(load_ml_keyring(dir_, &error).has_value());
  EXPECT_NE(error.find("not a regular file"), std::string::npos) << error;

  const std::string bad = write("bad.keyring", "[\"zz\"]", 0600);
  EXPECT_FALSE(load_ml_keyring(bad, &error).has_value());
  EXPECT_NE(error.find(bad), std::string::npos) << error;
  EXPECT_NE(error.find("key [0]"), std::string::npos) << error;

  const std::string big = write("big.keyring", std::string(kMaxMlKeyringFileBytes + 1, ' '), 0600);
  EXPECT_FALSE(load_ml_keyring(big, &error).has_value());
  EXPECT_NE(error.find("larger than"), std::string::npos) << error;

  if (::geteuid() != 0) {  // root reads a mode-0000 file anyway
    const std::string locked = write("locked.keyring", std::string("[\"") + k16 + "\"]", 0000);
    EXPECT_FALSE(load_ml_keyring(locked, &error).has_value());
    EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace gw::config
