// dataplane/memberlist/filter_setup.h: a config in mode: memberlist turned
// into the filter's settings and keyring.
#include "dataplane/memberlist/filter_setup.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "config/loader.h"
#include "crypto/aes_gcm.h"

namespace gw::dp::ml {
namespace {

bool has(const CidrSet& s, std::initializer_list<std::uint8_t> ip) { return s.contains(ip.begin(), ip.size()); }

TEST(FilterSetup, EveryFieldReachesTheFilterConfig) {
  const config::Config c = config::parse_config(
      "mode: memberlist\n"
      "memberlist:\n"
      "  ports: [7946, 8301]\n"
      "  allow_cidrs: [10.0.0.0/8]\n"
      "  allow_plaintext_cidrs: ['fd00::/8']\n"
      "  label: dc1\n"
      "  per_source_pps: 50\n"
      "  per_source_burst: 60\n"
      "  sources: 1024\n"
      "  tcp_connections_per_sec: 2\n"
      "  tcp_connections_burst: 3\n"
      "  egress_bytes_per_sec: 100000\n"
      "  egress_burst_bytes: 20000\n"
      "  max_inflated: 4096\n"
      "  max_name: 64\n"
      "  max_probe_messages: 2\n"
      "  agent_udp_port: 8301\n",
      "test.yaml", "/etc/gossipgw");
  std::string error;
  const std::optional<FilterConfig> f = make_filter_config(c, &error);
  ASSERT_TRUE(f.has_value()) << error;
  EXPECT_EQ(f->ports, (std::vector<std::uint16_t>{7946, 8301}));
  EXPECT_TRUE(has(f->allow, {10, 9, 8, 7}));
  EXPECT_FALSE(has(f->allow, {11, 0, 0, 1}));
  EXPECT_TRUE(has(f->plaintext_allow, {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9}));
  EXPECT_FALSE(has(f->plaintext_allow, {10, 9, 8, 7}));
  EXPECT_EQ(f->label, "dc1");
  EXPECT_EQ(f->per_source.rate_pps, 50u);
  EXPECT_EQ(f->per_source.burst, 60u);
  EXPECT_EQ(f->sources, 1024u);
  EXPECT_EQ(f->tcp_connections.rate_pps, 2u);
  EXPECT_EQ(f->tcp_connections.burst, 3u);
  EXPECT_EQ(f->egress_bytes_per_sec, 100000u);
  EXPECT_EQ(f->egress_burst_bytes, 20000u);
  EXPECT_EQ(f->inspect.max_inflated, 4096u);
  EXPECT_EQ(f->inspect.max_name, 64u);
  EXPECT_EQ(f->inspect.max_probe_messages, 2u);
  EXPECT_EQ(f->inspect.agent_port, 8301u);
}

TEST(FilterSetup, DefaultsMatchFilterH) {
  const config::Config c = config::parse_config("mode: memberlist\n", "test.yaml", "/etc/gossipgw");
  std::string error;
  const std::optional<FilterConfig> f = make_filter_config(c, &error);
  ASSERT_TRUE(f.has_value()) << error;
  const FilterConfig d;
  EXPECT_EQ(f->ports, d.ports);
  EXPECT_TRUE(f->allow.empty());
  EXPECT_TRUE(f->plaintext_allow.empty());
  EXPECT_EQ(f->per_source.rate_pps, d.per_source.rate_pps);
  EXPECT_EQ(f->per_source.burst, d.per_source.burst);
  EXPECT_EQ(f->sources, d.sources);
  EXPECT_EQ(f->tcp_connections.rate_pps, d.tcp_connections.rate_pps);
  EXPECT_EQ(f->tcp_connections.burst, d.tcp_connections.burst);
  EXPECT_EQ(f->egress_bytes_per_sec, d.egress_bytes_per_sec);
  EXPECT_EQ(f->egress_burst_bytes, d.egress_burst_bytes);
  EXPECT_EQ(f->inspect.max_inflated, d.inspect.max_inflated);
  EXPECT_EQ(f->inspect.max_name, d.inspect.max_name);
  EXPECT_EQ(f->inspect.max_probe_messages, d.inspect.max_probe_messages);
  EXPECT_EQ(f->inspect.agent_port, d.inspect.agent_port);
}

TEST(FilterSetup, ABadPrefixNamesItsField) {
  // The loader refuses these; a Config built in code can still carry one.
  config::Config c;
  c.mode = config::Mode::kMemberlist;
  c.memberlist.allow_plaintext_cidrs = {"10.0.0.0/8", "10.0.0.0/40"};
  std::string error;
  EXPECT_FALSE(make_filter_config(c, &error).has_value());
  EXPECT_EQ(error.rfind("memberlist.allow_plaintext_cidrs[1]: ", 0), 0u) << error;
  c.memberlist.allow_cidrs = {"nope"};
  EXPECT_FALSE(make_filter_config(c, &error).has_value());
  EXPECT_EQ(error.rfind("memberlist.allow_cidrs[0]: ", 0), 0u) << error;
}

class FilterKeyring : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!crypto::ipsecmb_gcm_available()) GTEST_SKIP() << "no AES-NI: ipsec-mb cannot run here";
    std::string tmpl = ::testing::TempDir() + "gw_filter_setup_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!file_.empty()) ::unlink(file_.c_str());
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  std::string dir_, file_;
};

TEST_F(FilterKeyring, NoFileIsAPlaintextCluster) {
  config::Config c;
  c.mode = config::Mode::kMemberlist;
  std::string error;
  const std::unique_ptr<Keyring> k = load_filter_keyring(c, &error);
  ASSERT_NE(k, nullptr) << error;
  EXPECT_TRUE(k->empty());
}

TEST_F(FilterKeyring, ARelativeFileIsReadFromTheConfigsDirectory) {
  file_ = dir_ + "/local.keyring";
  std::ofstream(file_) << "[\"MDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1ub3BxcnN0dXY=\", \"MDEyMzQ1Njc4OWFiY2RlZg==\"]";
  ASSERT_EQ(::chmod(file_.c_str(), 0640), 0);
  config::Config c;
  c.mode = config::Mode::kMemberlist;
  c.base_dir = dir_;
  c.memberlist.keyring_file = "local.keyring";
  std::string error, warning;
  const std::unique_ptr<Keyring> k = load_filter_keyring(c, &error, &warning);
  ASSERT_NE(k, nullptr) << error;
  ASSERT_EQ(k->size(), 2u);
  EXPECT_EQ(k->key_len(0), 32u);
  EXPECT_EQ(k->key_len(1), 16u);
  EXPECT_NE(warning.find("chmod 600"), std::string::npos) << warning;

  c.memberlist.keyring_file = "absent.keyring";
  EXPECT_EQ(load_filter_keyring(c, &error), nullptr);
  EXPECT_EQ(error.rfind("memberlist.keyring_file: ", 0), 0u) << error;
  EXPECT_NE(error.find(dir_ + "/absent.keyring"), std::string::npos) << error;
}

}  // namespace
}  // namespace gw::dp::ml
