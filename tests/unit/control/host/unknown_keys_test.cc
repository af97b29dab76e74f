// control/host/unknown_keys.h: the control lcore names who sends under key
// ids our keyring lacks, in the log at most once a minute, and counts the
// senders by kind for the alert. Injected clock and resolver.
#include "control/host/unknown_keys.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gw::cp {
namespace {

constexpr std::uint64_t kS = 1'000'000'000ULL;
constexpr std::uint64_t kT0 = 1000 * kS;

dp::UnknownKeySighting sighting(std::uint32_t key_id, std::uint8_t host) {
  dp::UnknownKeySighting s;
  s.key_id = key_id;
  s.suite = 1;
  s.from.ip = {10, 0, 0, host};
  s.from.ip_len = 4;
  s.from.port = 7946;
  return s;
}

// 10.0.0.2 is member gw-b (dead in our view), 10.0.0.1 our seed.
UnknownKeyWatch::Who resolve(const dp::Endpoint& e) {
  UnknownKeyWatch::Who w;
  if (e.ip[3] == 2) {
    w.kind = UnknownKeyWatch::Kind::kMember;
    w.name = "gw-b";
    w.state = "dead";
  } else if (e.ip[3] == 1) {
    w.kind = UnknownKeyWatch::Kind::kSeed;
  }
  return w;
}

bool has(const std::vector<std::string>& lines, const std::string& what) {
  for (const std::string& l : lines) {
    if (l.find(what) != std::string::npos) return true;
  }
  return false;
}

TEST(UnknownKeyWatch, AMemberSendingUnderAKeyWeLackIsNamedAtOnce) {
  UnknownKeyWatch w;
  w.add(sighting(0x0000abcd, 2), kT0, resolve);
  const auto lines = w.report(kT0, resolve, {0x11111111}, 1, false);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has(lines, "member gw-b (10.0.0.2:7946, dead) sends under key id 0000abcd")) << lines[0];
  EXPECT_TRUE(has(lines, "keyring [11111111] lacks")) << lines[0];
  EXPECT_TRUE(has(lines, "missed a key rotation")) << lines[0];
  EXPECT_EQ(w.senders(kT0).member, 1u);
}

TEST(UnknownKeyWatch, WhatANodeAloneHearsFromItsSeedIsOneLineWithKeyIdsAndSources) {
  UnknownKeyWatch w;
  w.add(sighting(0x2222aaaa, 1), kT0, resolve);
  w.add(sighting(0x2222aaaa, 3), kT0, resolve);
  w.add(sighting(0x3333bbbb, 3), kT0, resolve);
  const auto lines = w.report(kT0, resolve, {0x11111111}, 5, /*alone=*/true);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has(lines, "key id(s) 2222aaaa 3333bbbb from 10.0.0.1:7946 (seed), 10.0.0.3:7946")) << lines[0];
  EXPECT_TRUE(has(lines, "(5 drop_unknown_key since the start), while alone")) << lines[0];
  const UnknownKeyWatch::Senders s = w.senders(kT0);
  EXPECT_EQ(s.seed, 1u);
  EXPECT_EQ(s.other, 1u);  // 10.0.0.3 once, under two key ids
  EXPECT_EQ(s.member, 0u);
}

TEST(UnknownKeyWatch, AtMostOneReportAMinuteAndOnlyWhenSomethingWasHeard) {
  UnknownKeyWatch w;
  w.add(sighting(7, 2), kT0, resolve);
  EXPECT_EQ(w.report(kT0, resolve, {1}, 1, false).size(), 1u);
  // Heard again within the minute: said at the minute, not before.
  w.add(sighting(7, 2), kT0 + 10 * kS, resolve);
  EXPECT_TRUE(w.report(kT0 + 30 * kS, resolve, {1}, 2, false).empty());
  EXPECT_EQ(w.report(kT0 + 60 * kS, resolve, {1}, 2, false).size(), 1u);
  // Nothing heard since: silent from then on.
  EXPECT_TRUE(w.report(kT0 + 200 * kS, resolve, {1}, 2, false).empty());
  // The gauge forgets a sender kWindowNs after it was last heard.
  EXPECT_EQ(w.senders(kT0 + 10 * kS + UnknownKeyWatch::kWindowNs).member, 1u);
  EXPECT_EQ(w.senders(kT0 + 11 * kS + UnknownKeyWatch::kWindowNs).member, 0u);
}

TEST(UnknownKeyWatch, SpoofedSourcesAreBoundedAndTheReportStaysShort) {
  UnknownKeyWatch w;
  for (int i = 0; i < 1000; ++i) {
    dp::UnknownKeySighting s = sighting(9, static_cast<std::uint8_t>(i % 250 + 3));
    s.from.port = static_cast<std::uint16_t>(i);
    w.add(s, kT0 + static_cast<std::uint64_t>(i), resolve);
  }
  EXPECT_EQ(w.senders(kT0 + 1000).other, UnknownKeyWatch::kMaxSenders);
  const auto lines = w.report(kT0 + 1000, resolve, {1}, 1000, false);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has(lines, "and " + std::to_string(UnknownKeyWatch::kMaxSenders - UnknownKeyWatch::kMaxNamed) + " more"))
      << lines[0];
  EXPECT_LT(lines[0].size(), 600u);
}

TEST(UnknownKeyWatch, Ipv6SourcesAreBracketed) {
  dp::Endpoint e;
  e.ip = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  e.ip_len = 16;
  e.port = 7946;
  EXPECT_EQ(endpoint_text(e), "[fd00::2]:7946");
}

}  // namespace
}  // namespace gw::cp
