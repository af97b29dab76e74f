#include "control/host/egress_shaper.h"

#include <gtest/gtest.h>

#include <vector>

namespace gw::cp {
namespace {

using crypto::PriorityClass;
constexpr std::uint64_t kMs = 1'000'000;

struct RecordingSink : dp::DatagramSink {
  struct Sent {
    PriorityClass cls;
    std::size_t len;
  };
  std::vector<Sent> sent;
  bool refuse = false;
  bool send(const dp::Endpoint&, PriorityClass cls, const std::uint8_t*, std::size_t len) noexcept override {
    if (refuse) return false;
    sent.push_back({cls, len});
    return true;
  }
};

dp::Endpoint peer() {
  dp::Endpoint e;
  e.ip_len = 4;
  e.ip[0] = 10;
  e.port = 7946;
  return e;
}

bool submit(EgressShaper& s, PriorityClass c, std::size_t len, std::uint64_t now) {
  const std::vector<std::uint8_t> bytes(len, 0xAB);
  return s.submit(peer(), c, bytes.data(), bytes.size(), now);
}

TEST(EgressShaper, WithinBudgetEverythingGoesAtOnce) {
  RecordingSink sink;
  EgressShaper s({1'000'000, 10'000, 100'000}, sink, 0);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(submit(s, PriorityClass::kGossip, 1000, 0));
  EXPECT_EQ(sink.sent.size(), 10u);
  EXPECT_EQ(s.counters()[2].deferred, 0u);
  EXPECT_EQ(s.counters()[2].sent_bytes, 10'000u);
}

TEST(EgressShaper, SustainedRateNeverExceedsTheBudget) {
  RecordingSink sink;
  const std::uint64_t rate = 100'000;  // bytes per second
  EgressShaper s({rate, 5'000, 10'000'000}, sink, 0);
  // Offer 10x the budget for 10 virtual seconds.
  std::uint64_t now = 0;
  for (int step = 0; step < 1000; ++step) {
    now = static_cast<std::uint64_t>(step) * 10 * kMs;
    for (int i = 0; i < 10; ++i) submit(s, PriorityClass::kGossip, 1000, now);
    s.release(now);
  }
  std::uint64_t bytes = 0;
  for (const auto& x : sink.sent) bytes += x.len;
  // At most the burst plus rate * elapsed.
  EXPECT_LE(bytes, 5'000 + rate * 10);
  EXPECT_GE(bytes, rate * 9);  // and the budget is actually used
  EXPECT_GT(s.counters()[2].deferred, 0u);
}

TEST(EgressShaper, UrgentGoesFirstWhenBudgetIsShort) {
  RecordingSink sink;
  EgressShaper s({10'000, 1'000, 1'000'000}, sink, 0);
  submit(s, PriorityClass::kBulk, 1000, 0);    // uses the whole burst
  submit(s, PriorityClass::kBulk, 1000, 0);    // waits
  submit(s, PriorityClass::kGossip, 1000, 0);  // waits
  submit(s, PriorityClass::kUrgent, 1000, 0);  // waits, but is next
  ASSERT_EQ(sink.sent.size(), 1u);
  s.release(100 * kMs);  // 1000 bytes of budget
  ASSERT_EQ(sink.sent.size(), 2u);
  EXPECT_EQ(sink.sent[1].cls, PriorityClass::kUrgent);
  s.release(200 * kMs);
  ASSERT_EQ(sink.sent.size(), 3u);
  EXPECT_EQ(sink.sent[2].cls, PriorityClass::kGossip);
  s.release(300 * kMs);
  EXPECT_EQ(sink.sent[3].cls, PriorityClass::kBulk);
  EXPECT_EQ(s.counters()[0].deferred, 1u);
  EXPECT_EQ(s.counters()[3].deferred, 1u);
}

TEST(EgressShaper, FullQueueDropsTheLowestClassFirst) {
  RecordingSink sink;
  EgressShaper s({1, 1, 3'000}, sink, 0);    // next to no budget, room for three
  submit(s, PriorityClass::kBulk, 1000, 0);  // the full bucket lets one through, then debt
  ASSERT_EQ(sink.sent.size(), 1u);
  submit(s, PriorityClass::kBulk, 1000, 0);
  submit(s, PriorityClass::kBulk, 1000, 0);
  submit(s, PriorityClass::kGossip, 1000, 0);
  EXPECT_EQ(s.queued_bytes(), 3'000u);
  EXPECT_TRUE(submit(s, PriorityClass::kUrgent, 1000, 0));  // evicts a bulk one
  EXPECT_EQ(s.counters()[3].dropped, 1u);
  EXPECT_TRUE(submit(s, PriorityClass::kUrgent, 1000, 0));  // evicts the other bulk
  EXPECT_TRUE(submit(s, PriorityClass::kProbe, 1000, 0));   // evicts the gossip
  EXPECT_EQ(s.counters()[3].dropped, 2u);
  EXPECT_EQ(s.counters()[2].dropped, 1u);
  EXPECT_TRUE(submit(s, PriorityClass::kUrgent, 1000, 0));  // evicts the probe
  EXPECT_EQ(s.counters()[1].dropped, 1u);
  // Nothing lower left: an urgent newcomer is refused, never an urgent queued one.
  EXPECT_FALSE(submit(s, PriorityClass::kUrgent, 1000, 0));
  EXPECT_EQ(s.queued(PriorityClass::kUrgent), 3u);
  EXPECT_EQ(s.counters()[0].dropped, 1u);
  EXPECT_LE(s.queued_bytes(), 3'000u);
  EXPECT_EQ(s.counters()[1].depth_max, 1u);
}

TEST(EgressShaper, OversizedDatagramGoesWhenTheBucketIsFull) {
  RecordingSink sink;
  EgressShaper s({1'000, 500, 100'000}, sink, 0);
  submit(s, PriorityClass::kBulk, 2'000, 0);
  EXPECT_EQ(sink.sent.size(), 1u);  // a full bucket lets it through, with a debt
  submit(s, PriorityClass::kBulk, 100, 0);
  EXPECT_EQ(sink.sent.size(), 1u);
  s.release(1'000 * kMs);  // the debt is not yet paid back
  EXPECT_EQ(sink.sent.size(), 1u);
  s.release(3'000 * kMs);
  EXPECT_EQ(sink.sent.size(), 2u);
}

TEST(EgressShaper, ZeroRateMeansUnlimited) {
  RecordingSink sink;
  EgressShaper s({0, 0, 1'000'000}, sink, 0);
  for (int i = 0; i < 100; ++i) submit(s, PriorityClass::kBulk, 1400, 0);
  EXPECT_EQ(sink.sent.size(), 100u);
}

TEST(EgressShaper, RefusalsByTheTransmitPathAreCounted) {
  RecordingSink sink;
  sink.refuse = true;
  EgressShaper s({0, 0, 1'000'000}, sink, 0);
  submit(s, PriorityClass::kProbe, 100, 0);
  EXPECT_EQ(s.counters()[1].refused, 1u);
  EXPECT_EQ(s.counters()[1].depth, 0u);
}

}  // namespace
}  // namespace gw::cp
