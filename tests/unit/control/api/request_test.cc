// The control API's request parser: every command, and the ways a request
// can be wrong. Whatever the bytes, parse_request returns a request or an
// error, never throws.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "control/api/request.h"

namespace gw::cp::api {
namespace {

template <typename T>
const T& as(const ParseResult& r) {
  EXPECT_TRUE(r.request.has_value()) << r.error;
  return std::get<T>(*r.request);
}

std::string error_of(std::string_view line) {
  const ParseResult r = parse_request(line);
  EXPECT_FALSE(r.request.has_value()) << line;
  return r.error;
}

// Issue 17: {"cmd":"stats","cmd":"leave"} used to run the leave (the last
// key wins in nlohmann). Duplicate keys are refused, at any depth.
TEST(ApiRequest, DuplicateKeysAreRefused) {
  EXPECT_NE(error_of(R"({"cmd":"stats","cmd":"leave"})").find("duplicate key \"cmd\""), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"tags","op":"set","tags":{"a":"1","a":"2"}})").find("duplicate key \"a\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"members","state":"alive","state":"dead"})").find("duplicate"), std::string::npos);
  // The same key in two different objects is fine.
  const ParseResult ok = parse_request(R"({"cmd":"members"})");
  EXPECT_TRUE(ok.request.has_value()) << ok.error;
}

TEST(ApiRequest, Members) {
  auto r = parse_request(R"({"cmd":"members"})");
  EXPECT_FALSE(as<MembersRequest>(r).state.has_value());
  r = parse_request(R"({"cmd":"members","state":"suspect","tag":"role=control-plane"})");
  EXPECT_EQ(*as<MembersRequest>(r).state, "suspect");
  EXPECT_EQ(as<MembersRequest>(r).tag->first, "role");
  EXPECT_EQ(as<MembersRequest>(r).tag->second, "control-plane");
  EXPECT_NE(error_of(R"({"cmd":"members","state":"zombie"})").find("state"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"members","tag":"novalue"})").find("key=value"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"members","extra":1})").find("unknown field 'extra'"), std::string::npos);
}

TEST(ApiRequest, Keys) {
  const std::string hex(64, 'a');
  auto r = parse_request(R"({"cmd":"keys","op":"install","key":")" + hex + R"(","primary":true})");
  const auto& inst = as<KeysInstallRequest>(r);
  EXPECT_TRUE(inst.primary);
  EXPECT_EQ(inst.key[0], 0xaa);
  EXPECT_EQ(inst.key[31], 0xaa);
  EXPECT_EQ(inst.scope, Scope::kNode);
  EXPECT_NE(error_of(R"({"cmd":"keys","op":"install","key":"abc"})").find("64 hex"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"keys","op":"install","key":")" + std::string(63, 'a') + R"(g"})").find("64 hex"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"keys","op":"install","key":")" + hex + R"(","primary":"yes"})").find("primary"),
            std::string::npos);
  r = parse_request(R"({"cmd":"keys","op":"use","id":"0A1b2C3d"})");
  EXPECT_EQ(as<KeysUseRequest>(r).id, 0x0a1b2c3du);
  r = parse_request(R"({"cmd":"keys","op":"remove","id":"ffffffff"})");
  EXPECT_EQ(as<KeysRemoveRequest>(r).id, 0xffffffffu);
  EXPECT_NE(error_of(R"({"cmd":"keys","op":"use","id":"123"})").find("8 hex"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"keys","op":"use","id":12345678})").find("string"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"keys","op":"use","id":"12345678","scope":"galaxy"})").find("scope"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"keys","op":"rotate"})").find("list, install, use or remove"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"keys"})").find("missing field 'op'"), std::string::npos);
  (void)as<KeysListRequest>(parse_request(R"({"cmd":"keys","op":"list"})"));
}

// Issue 51: a cluster-wide change carries the operator's signature.
TEST(ApiRequest, ClusterWideChangesCarryTheOperatorSignature) {
  const std::string sig(128, 'b');
  auto r = parse_request(
      R"({"cmd":"keys","op":"use","id":"0a1b2c3d","scope":"cluster","issued_ns":"1800000000123456789","signature":")" +
      sig + R"("})");
  const auto& use = as<KeysUseRequest>(r);
  EXPECT_EQ(use.scope, Scope::kCluster);
  EXPECT_EQ(use.auth.issued_unix_ns, 1800000000123456789ULL);
  EXPECT_EQ(use.auth.signature[0], 0xbb);
  EXPECT_EQ(use.auth.signature[63], 0xbb);
  // Unsigned: parsed, and refused by the cluster-wide change with its reason.
  r = parse_request(R"({"cmd":"keys","op":"remove","id":"0a1b2c3d","scope":"cluster"})");
  EXPECT_EQ(as<KeysRemoveRequest>(r).auth.signature, (std::array<std::uint8_t, 64>{}));
  EXPECT_NE(error_of(R"({"cmd":"keys","op":"use","id":"0a1b2c3d","scope":"cluster","signature":")" + sig + R"("})")
                .find("issued_ns"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"keys","op":"use","id":"0a1b2c3d","scope":"cluster","issued_ns":"12","signature":"ab"})")
                .find("128 hex"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"keys","op":"use","id":"0a1b2c3d","scope":"cluster","issued_ns":12,"signature":")" +
                     sig + R"("})")
                .find("string"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"keys","op":"use","id":"0a1b2c3d","issued_ns":"12","signature":")" + sig + R"("})")
                .find("scope cluster only"),
            std::string::npos);
}

TEST(ApiRequest, JoinAddresses) {
  auto r = parse_request(R"({"cmd":"join","address":"10.1.2.3:7946"})");
  EXPECT_EQ(as<JoinRequest>(r).ip, "10.1.2.3");
  EXPECT_EQ(as<JoinRequest>(r).port, 7946);
  r = parse_request(R"({"cmd":"join","address":"[fd00::1]:1"})");
  EXPECT_EQ(as<JoinRequest>(r).ip, "fd00::1");
  EXPECT_EQ(as<JoinRequest>(r).port, 1);
  for (const char* bad : {"10.1.2.3", "10.1.2.3:0", "10.1.2.3:65536", "host:80", "fd00::1:80", "[fd00::1]80",
                          "[fd00::1]:", ":80", "10.1.2.3:8a", "1.2.3.4:123456"}) {
    EXPECT_NE(error_of(std::string(R"({"cmd":"join","address":")") + bad + "\"}").find("IP:PORT"), std::string::npos)
        << bad;
  }
}

TEST(ApiRequest, Tags) {
  auto r = parse_request(R"({"cmd":"tags","op":"set","tags":{"role":"db","zone":"a b"}})");
  ASSERT_EQ(as<TagsSetRequest>(r).tags.size(), 2u);
  EXPECT_EQ(as<TagsSetRequest>(r).tags[1].second, "a b");
  r = parse_request(R"({"cmd":"tags","op":"unset","keys":["role"]})");
  EXPECT_EQ(as<TagsUnsetRequest>(r).keys.at(0), "role");
  EXPECT_NE(error_of(R"({"cmd":"tags","op":"set","tags":{}})").find("non-empty"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"tags","op":"set","tags":{"a":1}})").find("strings"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"tags","op":"set","tags":{"a b":"x"}})").find("tag keys"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"tags","op":"set","tags":{"a":")" + std::string(257, 'v') + "\"}}").find("values"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"tags","op":"unset","keys":"role"})").find("list"), std::string::npos);
}

TEST(ApiRequest, SimpleCommands) {
  (void)as<StatsRequest>(parse_request(R"({"cmd":"stats"})"));
  (void)as<LeaveRequest>(parse_request(R"({"cmd":"leave"})"));
  EXPECT_EQ(as<LogLevelRequest>(parse_request(R"({"cmd":"log-level","level":"debug"})")).level, "debug");
  EXPECT_NE(error_of(R"({"cmd":"log-level","level":"loud"})").find("level must be"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"stats","verbose":true})").find("unknown field"), std::string::npos);
}

TEST(ApiRequest, NotARequest) {
  EXPECT_EQ(error_of(""), "request is not valid JSON");
  EXPECT_EQ(error_of("{"), "request is not valid JSON");
  EXPECT_EQ(error_of("[1,2]"), "request must be a JSON object");
  EXPECT_EQ(error_of("{}"), "missing field 'cmd'");
  EXPECT_EQ(error_of(R"({"cmd":5})"), "field 'cmd' must be a string");
  EXPECT_NE(error_of(R"({"cmd":"reboot"})").find("unknown cmd 'reboot'"), std::string::npos);
  // An unprintable command name is not echoed back.
  EXPECT_EQ(error_of("{\"cmd\":\"\\u0001\\u0002\"}").find('\x01'), std::string::npos);
  EXPECT_EQ(error_of(std::string(kMaxRequestBytes + 1, ' ')), "request too large");
}

TEST(ApiRequest, RandomBytesNeverThrow) {
  std::mt19937_64 rng(42);
  const std::string seed = R"({"cmd":"keys","op":"install","key":")" + std::string(64, 'b') + R"(","scope":"node"})";
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s = seed;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) s[rng() % s.size()] = static_cast<char>(rng() & 0xff);
    const ParseResult r = parse_request(s);
    EXPECT_NE(r.request.has_value(), !r.error.empty());
    parsed += r.request.has_value() ? 1 : 0;
  }
  EXPECT_LT(parsed, 20000);  // most mutations break something
}

TEST(ApiRequest, KeyIdText) {
  EXPECT_EQ(parse_key_id("0a1b2c3d"), 0x0a1b2c3du);
  EXPECT_FALSE(parse_key_id("0a1b2c3").has_value());
  EXPECT_FALSE(parse_key_id("0a1b2c3x").has_value());
}

TEST(ApiRequest, ErrorReplyIsOneLine) {
  const std::string r = error_reply("bad\nthing \xff");
  EXPECT_EQ(r.find('\n'), std::string::npos);
  EXPECT_NE(r.find("\"ok\":false"), std::string::npos);
}

TEST(ApiRequest, ErrorReplyCarriesItsExitStatus) {
  EXPECT_NE(error_reply("refused").find("\"status\":1"), std::string::npos);
  EXPECT_NE(error_reply("bad", kStatusBadInput).find("\"status\":2"), std::string::npos);
}

TEST(ApiRequest, InfoForceLeaveMonitor) {
  (void)as<InfoRequest>(parse_request(R"({"cmd":"info"})"));
  EXPECT_EQ(as<ForceLeaveRequest>(parse_request(R"({"cmd":"force-leave","node":"n-3"})")).node, "n-3");
  EXPECT_NE(error_of(R"({"cmd":"force-leave"})").find("node"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"force-leave","node":""})").find("node must be"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"force-leave","node":"a b"})").find("node must be"), std::string::npos);
  const auto m = as<MonitorRequest>(parse_request(R"({"cmd":"monitor","since":42,"level":"warn"})"));
  EXPECT_EQ(m.since, 42u);
  EXPECT_EQ(m.level, "warn");
  EXPECT_EQ(as<MonitorRequest>(parse_request(R"({"cmd":"monitor"})")).level, "info");
  EXPECT_NE(error_of(R"({"cmd":"monitor","since":-1})").find("since"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"monitor","level":"off"})").find("level must be"), std::string::npos);
  EXPECT_NE(error_of(R"({"cmd":"info","x":1})").find("unknown field"), std::string::npos);
}

}  // namespace
}  // namespace gw::cp::api
