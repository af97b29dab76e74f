// control/gateway/control_api.h: the control API's commands on the control
// lcore, without EAL or a socket (the integration test drives it through
// gossipctl). Membership disabled here: the commands that need the engine
// must say so; the keys and the process commands work without it.
#include "control/gateway/control_api.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "crypto/keys.h"

namespace gw::cp {
namespace {

using Json = nlohmann::json;

crypto::KeyBytes key_bytes(std::uint8_t fill) {
  crypto::KeyBytes k{};
  k.fill(fill);
  return k;
}

std::string hex(const crypto::KeyBytes& k) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  for (std::uint8_t b : k) {
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

class ControlApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(crypto::init());
    auto first = std::make_unique<dp::DataplaneSnapshot>();
    const crypto::Key k1(key_bytes(1), crypto::Suite::kChaCha20Poly1305);
    first->keys.add(k1, true);
    first->key_material[k1.id()] = key_bytes(1);
    k1_ = k1.id();
    snapshots_ = std::make_unique<dp::SnapshotExchange>(1, std::move(first));
    ControlApi::Context ctx;
    ctx.snapshots = snapshots_.get();
    ctx.suite = crypto::Suite::kChaCha20Poly1305;
    ctx.stats_json = [] { return std::string(R"({"totals":{"rx_total":42}})"); };
    ctx.request_stop = [this] { ++stops_; };
    api_ = std::make_unique<ControlApi>(ctx);
  }

  Json ask(const std::string& line) {
    std::string out;
    api_->handle(line, 1'000'000'000ULL, 1'700'000'000U, [&out](std::string r) { out = std::move(r); });
    EXPECT_FALSE(out.empty()) << line << ": no immediate reply";
    return Json::parse(out);
  }

  std::unique_ptr<dp::SnapshotExchange> snapshots_;
  std::unique_ptr<ControlApi> api_;
  std::uint32_t k1_ = 0;
  int stops_ = 0;
};

TEST_F(ControlApiTest, BadInputIsAnErrorWithStatusTwoAndCounted) {
  for (const char* line : {"", "not json", R"({"cmd":"nope"})", R"({"cmd":"keys","op":"use","id":"xyz"})"}) {
    const Json r = ask(line);
    EXPECT_FALSE(r["ok"].get<bool>()) << line;
    EXPECT_EQ(r["status"].get<int>(), 2) << line;
  }
  EXPECT_EQ(api_->counters().bad_requests, 4u);
  EXPECT_EQ(api_->counters().requests, 4u);
}

TEST_F(ControlApiTest, CommandsThatNeedTheEngineSayMembershipIsDisabled) {
  for (const char* line : {R"({"cmd":"members"})", R"({"cmd":"tags","op":"set","tags":{"a":"b"}})"}) {
    const Json r = ask(line);
    EXPECT_FALSE(r["ok"].get<bool>()) << line;
    EXPECT_NE(r["error"].get<std::string>().find("membership is disabled"), std::string::npos) << line;
    EXPECT_EQ(r["status"].get<int>(), 1) << line;
  }
  EXPECT_EQ(api_->counters().failed, 2u);
}

TEST_F(ControlApiTest, StatsAreTheCounterDocumentAndLeaveAsksForAStop) {
  const Json s = ask(R"({"cmd":"stats"})");
  EXPECT_EQ(s["stats"]["totals"]["rx_total"].get<int>(), 42);
  EXPECT_EQ(stops_, 0);
  EXPECT_TRUE(ask(R"({"cmd":"leave"})")["leaving"].get<bool>());
  EXPECT_EQ(stops_, 1);
}

TEST_F(ControlApiTest, NodeKeyChangesPublishASnapshotEachAndAreIdempotent) {
  const crypto::Key k2(key_bytes(2), crypto::Suite::kChaCha20Poly1305);
  char text[9];
  std::snprintf(text, sizeof text, "%08x", k2.id());
  const std::uint64_t v0 = snapshots_->current().version;

  Json r = ask(R"({"cmd":"keys","op":"install","key":")" + hex(key_bytes(2)) + R"("})");
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_EQ(r["keys"].size(), 2u);
  EXPECT_EQ(snapshots_->current().version, v0 + 1);
  EXPECT_NE(snapshots_->current().keys.find(k2.id()), nullptr);

  // Installing it again succeeds and changes nothing a worker would see twice.
  EXPECT_TRUE(ask(R"({"cmd":"keys","op":"install","key":")" + hex(key_bytes(2)) + R"("})")["ok"].get<bool>());

  r = ask(std::string(R"({"cmd":"keys","op":"use","id":")") + text + R"("})");
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_EQ(r["primary"].get<std::string>(), text);
  EXPECT_EQ(snapshots_->current().keys.primary()->id(), k2.id());

  // The primary cannot be removed; the old key can.
  r = ask(std::string(R"({"cmd":"keys","op":"remove","id":")") + text + R"("})");
  EXPECT_FALSE(r["ok"].get<bool>());
  char old[9];
  std::snprintf(old, sizeof old, "%08x", k1_);
  r = ask(std::string(R"({"cmd":"keys","op":"remove","id":")") + old + R"("})");
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_EQ(snapshots_->current().keys.find(k1_), nullptr);
  EXPECT_EQ(snapshots_->current().keys.size(), 1u);
  EXPECT_GE(api_->counters().key_changes, 3u);
  EXPECT_EQ(api_->counters().failed, 1u);

  const Json list = ask(R"({"cmd":"keys","op":"list"})");
  ASSERT_EQ(list["keys"].size(), 1u);
  EXPECT_TRUE(list["keys"][0]["primary"].get<bool>());
}

}  // namespace
}  // namespace gw::cp
