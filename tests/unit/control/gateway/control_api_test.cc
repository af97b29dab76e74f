// control/gateway/control_api.h: the control API's commands on the control
// lcore, without EAL or a socket (the integration test drives it through
// gossipctl). Membership disabled here: the commands that need the engine
// must say so; the keys and the process commands work without it.
#include "control/gateway/control_api.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "control/codec.h"
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
    api_->handle(line, 1'000'000'000ULL, 1'700'000'000U, [&out](std::string reply) { out = std::move(reply); });
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

// ---- with a save that fails (control.state_dir) and a stop that takes time ----

TEST_F(ControlApiTest, AKeyChangeThatCannotBeSavedIsRefusedAndNotPublished) {
  ControlApi::Context ctx;
  ctx.snapshots = snapshots_.get();
  ctx.suite = crypto::Suite::kChaCha20Poly1305;
  std::string fail_with = "control.state_dir '/x': not a directory";
  int saves = 0;
  ctx.keyring_saver = [&](const crypto::Keyring&, const std::map<std::uint32_t, crypto::KeyBytes>&) {
    ++saves;
    return fail_with;
  };
  api_ = std::make_unique<ControlApi>(ctx);
  const std::uint64_t v0 = snapshots_->current().version;
  Json r = ask(R"({"cmd":"keys","op":"install","key":")" + hex(key_bytes(2)) + R"("})");
  EXPECT_FALSE(r["ok"].get<bool>()) << r.dump();
  EXPECT_EQ(r["status"].get<int>(), 1);
  EXPECT_NE(r["error"].get<std::string>().find("could not be saved: control.state_dir '/x': not a directory"),
            std::string::npos)
      << r.dump();
  EXPECT_EQ(snapshots_->current().version, v0);  // the workers never saw it
  EXPECT_EQ(snapshots_->current().keys.size(), 1u);
  // Once it can be saved, the same command goes through.
  fail_with.clear();
  r = ask(R"({"cmd":"keys","op":"install","key":")" + hex(key_bytes(2)) + R"("})");
  EXPECT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_EQ(snapshots_->current().keys.size(), 2u);
  EXPECT_EQ(saves, 2);
}

TEST_F(ControlApiTest, LeaveIsAnsweredOnceTheLeaveWentOut) {
  ControlApi::Context ctx;
  ctx.snapshots = snapshots_.get();
  cp::StopPhase phase = cp::StopPhase::kRunning;
  ctx.stop_phase = [&] { return phase; };
  ctx.request_stop = [&] {
    ++stops_;
    phase = cp::StopPhase::kLeaving;
  };
  ctx.leave_timeout_ms = 3000;
  api_ = std::make_unique<ControlApi>(ctx);
  std::string out;
  api_->handle(R"({"cmd":"leave"})", 1'000'000'000ULL, 1'700'000'000U,
               [&out](std::string reply) { out = std::move(reply); });
  EXPECT_EQ(stops_, 1);
  EXPECT_TRUE(out.empty()) << "answered before the leave went out: " << out;
  api_->poll(1'100'000'000ULL);
  EXPECT_TRUE(out.empty());
  phase = cp::StopPhase::kLeft;
  api_->poll(1'250'000'000ULL);
  ASSERT_FALSE(out.empty());
  const Json r = Json::parse(out);
  EXPECT_TRUE(r["ok"].get<bool>()) << out;
  EXPECT_TRUE(r["left"].get<bool>()) << out;
  EXPECT_EQ(r["took_ms"].get<int>(), 250);

  // A leave that ran out of time says so (exit 1).
  out.clear();
  phase = cp::StopPhase::kRunning;
  api_->handle(R"({"cmd":"leave"})", 2'000'000'000ULL, 1'700'000'000U,
               [&out](std::string reply) { out = std::move(reply); });
  phase = cp::StopPhase::kLeaveTimedOut;
  api_->poll(5'000'000'000ULL);
  const Json t = Json::parse(out);
  EXPECT_FALSE(t["ok"].get<bool>()) << out;
  EXPECT_EQ(t["status"].get<int>(), 1);
  EXPECT_NE(t["error"].get<std::string>().find("membership.leave_timeout_ms (3000 ms)"), std::string::npos) << out;
}

// ---- with the membership engine ----

struct RecordingSink : dp::DatagramSink {
  std::vector<dp::Endpoint> to;
  bool send(const dp::Endpoint& e, crypto::PriorityClass, const std::uint8_t*, std::size_t) noexcept override {
    to.push_back(e);
    return true;
  }
  std::size_t sent_to(const cp::engine::Address& a) const {
    std::size_t n = 0;
    for (const dp::Endpoint& e : to) n += cp::to_engine_address(e) == a ? 1 : 0;
    return n;
  }
};

cp::engine::Address address(std::uint8_t i) { return cp::engine::Address{{10, 0, 0, i}, 7946}; }

// Issue 52 item 2: a join through an address nobody answers at used to
// replace the configured seeds until a restart; it adds to them.
TEST_F(ControlApiTest, AManualJoinAddsToTheConfiguredSeedsAndNeverReplacesThem) {
  cp::EngineHost::Options o;
  o.engine = cp::engine::EngineConfig::lan();
  o.engine.name = "n0";
  o.engine.addr = address(100);
  o.seeds = {address(5)};
  o.snapshots = snapshots_.get();
  o.rng_seed = 3;
  o.shaper.bytes_per_sec = 0;
  RecordingSink sink;
  constexpr std::uint64_t kS = 1'000'000'000ULL;
  std::uint64_t now = 1000 * kS;
  cp::EngineHost host(o, sink, now);
  host.start(now, 1'700'000'000U);
  EXPECT_EQ(sink.sent_to(address(5)), 1u);  // the configured seed's join

  ControlApi::Context ctx;
  ctx.host = &host;
  ctx.snapshots = snapshots_.get();
  api_ = std::make_unique<ControlApi>(ctx);
  std::string out;
  api_->handle(R"({"cmd":"join","address":"10.0.0.9:7946"})", now, 1'700'000'000U,
               [&out](std::string reply) { out = std::move(reply); });
  host.poll(now, 1'700'000'000U);
  EXPECT_EQ(sink.sent_to(address(9)), 1u);
  EXPECT_EQ(sink.sent_to(address(5)), 2u) << "the manual join's round did not ask the configured seed";
  // Nobody answers: the join fails after its bound...
  now += ControlApi::kJoinTimeoutNs;
  host.poll(now, 1'700'000'000U);
  api_->poll(now);
  ASSERT_FALSE(out.empty());
  EXPECT_FALSE(Json::parse(out)["ok"].get<bool>()) << out;
  // ... and the retries keep asking the configured seed as well.
  const std::size_t before = sink.sent_to(address(5));
  for (int i = 0; i < 600; ++i) host.poll(now += kS / 10, 1'700'000'000U);
  EXPECT_GT(sink.sent_to(address(5)), before) << "the configured seed was dropped from the retries";
  EXPECT_GT(sink.sent_to(address(9)), 1u);
  EXPECT_EQ(host.seeds().size(), 2u);
}

// Issue 52 item 7: tags changed at run time are saved (control.state_dir)
// before they are gossiped; tags that cannot be saved are refused.
TEST_F(ControlApiTest, TagsAreSavedBeforeTheyChangeAndRefusedWhenTheyCannotBe) {
  cp::EngineHost::Options o;
  o.engine = cp::engine::EngineConfig::lan();
  o.engine.name = "n0";
  o.engine.addr = address(100);
  o.engine.tags = {{"zone", "a"}};
  o.snapshots = snapshots_.get();
  o.shaper.bytes_per_sec = 0;
  RecordingSink sink;
  cp::EngineHost host(o, sink, 1'000'000'000ULL);
  ControlApi::Context ctx;
  ctx.host = &host;
  ctx.snapshots = snapshots_.get();
  std::vector<cp::engine::Tag> saved;
  std::string fail_with;
  ctx.save_tags = [&](const std::vector<cp::engine::Tag>& tags) {
    if (fail_with.empty()) saved = tags;
    return fail_with;
  };
  api_ = std::make_unique<ControlApi>(ctx);
  Json r = ask(R"({"cmd":"tags","op":"set","tags":{"rack":"12"}})");
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_EQ(saved.size(), 2u);
  EXPECT_EQ(saved[0].key, "zone");
  EXPECT_EQ(saved[1].key, "rack");
  EXPECT_EQ(saved[1].value, "12");
  const std::uint64_t incarnation = host.engine().incarnation();
  fail_with = "tags state '/x/tags.json.tmp': cannot create: Read-only file system";
  r = ask(R"({"cmd":"tags","op":"unset","keys":["zone"]})");
  EXPECT_FALSE(r["ok"].get<bool>()) << r.dump();
  EXPECT_NE(r["error"].get<std::string>().find("tags not changed: they could not be saved"), std::string::npos);
  EXPECT_EQ(host.engine().incarnation(), incarnation);  // nothing gossiped
  EXPECT_EQ(host.engine().member("n0")->tags().size(), 2u);
}

}  // namespace
}  // namespace gw::cp
