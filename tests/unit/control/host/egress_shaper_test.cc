#include "control/host/egress_shaper.h"

#include <gtest/gtest.h>

#include <vector>

namespace gw::cp {
namespace {

using crypto::PriorityClass;
constexpr std::uint64_t kMs = 1'000'000;

// The payload: an id the test gives each datagram, so it can see which went
// out, which were given back, in what order.
using Id = int;
using Shaper = EgressShaper<Id>;

struct RecordingSink : ShaperSink<Id> {
  struct Sent {
    PriorityClass cls;
    std::size_t len;
    Id id;
  };
  std::vector<Sent> sent;
  std::vector<Id> evicted_ids;
  bool refuse = false;
  bool send(const dp::Endpoint&, PriorityClass cls, Id& id, std::size_t len) noexcept override {
    if (refuse) return false;
    sent.push_back({cls, len, id});
    return true;
  }
  void evicted(PriorityClass, Id& id) noexcept override { evicted_ids.push_back(id); }
};

dp::Endpoint peer() {
  dp::Endpoint e;
  e.ip_len = 4;
  e.ip[0] = 10;
  e.port = 7946;
  return e;
}

bool submit(Shaper& s, PriorityClass c, std::size_t len, std::uint64_t now, Id id = 0) {
  return s.submit(peer(), c, Id{id}, len, now);
}

TEST(EgressShaper, WithinBudgetEverythingGoesAtOnce) {
  RecordingSink sink;
  Shaper s({1'000'000, 10'000, 100'000}, sink, 0);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(submit(s, PriorityClass::kGossip, 1000, 0));
  EXPECT_EQ(sink.sent.size(), 10u);
  EXPECT_EQ(s.counters()[2].deferred, 0u);
  EXPECT_EQ(s.counters()[2].sent_bytes, 10'000u);
}

TEST(EgressShaper, SustainedRateNeverExceedsTheBudget) {
  RecordingSink sink;
  const std::uint64_t rate = 100'000;  // bytes per second
  Shaper s({rate, 5'000, 10'000'000}, sink, 0);
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
  Shaper s({10'000, 1'000, 1'000'000}, sink, 0);
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
  Shaper s({1, 1, 3'000}, sink, 0);          // next to no budget, room for three
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

TEST(EgressShaper, NothingWaitsLongerThanItsMaximumAge) {
  RecordingSink sink;
  // 1,000 B/s, a 1,000-byte bucket, a queue far larger than the budget drains
  // in a second, and a 2 s age bound: the queue is bounded in time too.
  Shaper s({1'000, 1'000, 1'000'000, 2'000 * kMs}, sink, 0);
  ASSERT_TRUE(submit(s, PriorityClass::kGossip, 1'000, 0, 1));  // the bucket lets it out
  ASSERT_EQ(sink.sent.size(), 1u);
  for (int i = 2; i <= 5; ++i) ASSERT_TRUE(submit(s, PriorityClass::kGossip, 1'000, 0, i));
  ASSERT_TRUE(submit(s, PriorityClass::kUrgent, 1'000, 500 * kMs, 6));
  // At 1.5 s the urgent one has gone (ahead of the gossip), the gossip waits.
  s.release(1'500 * kMs);
  ASSERT_EQ(sink.sent.size(), 2u);
  EXPECT_EQ(sink.sent[1].id, 6);
  // Past 2 s of age the four gossip datagrams queued at 0 are stale: dropped
  // before the refill could let one out, counted as expired (not as dropped
  // for space), their payloads given back.
  s.release(2'001 * kMs);
  EXPECT_EQ(s.counters()[2].expired, 4u);
  EXPECT_EQ(s.counters()[2].dropped, 0u);
  EXPECT_EQ(s.counters()[2].sent, 1u);
  EXPECT_EQ(s.counters()[0].expired, 0u);
  EXPECT_EQ(s.queued(PriorityClass::kGossip), 0u);
  EXPECT_EQ(s.queued_bytes(), 0u);
  EXPECT_EQ(sink.evicted_ids, (std::vector<Id>{2, 3, 4, 5}));
  EXPECT_EQ(s.next_release_ns(2'001 * kMs), Shaper::kNever);
  // A submission expires what is stale even when nothing was released since.
  ASSERT_TRUE(submit(s, PriorityClass::kBulk, 5'000, 3'000 * kMs, 7));  // debt: 4,000 B
  ASSERT_TRUE(submit(s, PriorityClass::kBulk, 100, 3'000 * kMs, 8));
  ASSERT_TRUE(submit(s, PriorityClass::kProbe, 100, 5'500 * kMs, 9));
  EXPECT_EQ(s.counters()[3].expired, 1u);
  EXPECT_EQ(s.queued(PriorityClass::kBulk), 0u);
}

TEST(EgressShaper, AZeroMaximumAgeKeepsEverythingUntilItGoes) {
  RecordingSink sink;
  Shaper s({1'000, 1'000, 1'000'000, 0}, sink, 0);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(submit(s, PriorityClass::kGossip, 1'000, 0, i));
  s.release(60'000 * kMs);  // a full bucket: one goes
  s.release(61'000 * kMs);
  s.release(62'000 * kMs);
  s.release(63'000 * kMs);
  EXPECT_EQ(sink.sent.size(), 4u);
  EXPECT_EQ(s.counters()[2].expired, 0u);
}

TEST(EgressShaper, OversizedDatagramGoesWhenTheBucketIsFull) {
  RecordingSink sink;
  Shaper s({1'000, 500, 100'000}, sink, 0);
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
  Shaper s({0, 0, 1'000'000}, sink, 0);
  for (int i = 0; i < 100; ++i) submit(s, PriorityClass::kBulk, 1400, 0);
  EXPECT_EQ(sink.sent.size(), 100u);
}

TEST(EgressShaper, RefusalsByTheTransmitPathAreCounted) {
  RecordingSink sink;
  sink.refuse = true;
  Shaper s({0, 0, 1'000'000}, sink, 0);
  submit(s, PriorityClass::kProbe, 100, 0);
  EXPECT_EQ(s.counters()[1].refused, 1u);
  EXPECT_EQ(s.counters()[1].depth, 0u);
}

// The payload is the caller's: each goes out once, in order, or comes back
// evicted; a refused newcomer is never taken.
TEST(EgressShaper, PayloadsGoOutOrComeBackExactlyOnce) {
  RecordingSink sink;
  Shaper s({1, 1, 3'000, 0}, sink, 0);  // no age bound: its waits are long
  EXPECT_TRUE(submit(s, PriorityClass::kBulk, 1000, 0, 1));  // out at once, then debt
  EXPECT_TRUE(submit(s, PriorityClass::kBulk, 1000, 0, 2));
  EXPECT_TRUE(submit(s, PriorityClass::kGossip, 1000, 0, 3));
  EXPECT_TRUE(submit(s, PriorityClass::kGossip, 1000, 0, 4));
  EXPECT_TRUE(submit(s, PriorityClass::kUrgent, 1000, 0, 5));  // evicts 2 (bulk)
  EXPECT_TRUE(submit(s, PriorityClass::kUrgent, 1000, 0, 6));  // evicts 4, the newest gossip
  EXPECT_TRUE(submit(s, PriorityClass::kUrgent, 1000, 0, 7));  // evicts 3
  Id refused = 8;
  EXPECT_FALSE(s.submit(peer(), PriorityClass::kUrgent, std::move(refused), 1000, 0));
  EXPECT_EQ(refused, 8);  // not taken
  EXPECT_EQ(sink.evicted_ids, (std::vector<Id>{2, 4, 3}));
  for (std::uint64_t k = 1; k <= 3; ++k) s.release(k * 2'000'000 * kMs);  // a full bucket each time
  std::vector<Id> out;
  for (const auto& x : sink.sent) out.push_back(x.id);
  EXPECT_EQ(out, (std::vector<Id>{1, 5, 6, 7}));
  EXPECT_EQ(s.queued_bytes(), 0u);
}

// next_release_ns names the moment release() lets the head datagram out:
// not a nanosecond is missing at that time, and one ns before it is too early.
TEST(EgressShaper, NextReleaseIsWhenTheHeadBecomesAffordable) {
  RecordingSink sink;
  Shaper s({10'000, 1'000, 1'000'000}, sink, 0);  // 10 bytes per ms
  EXPECT_EQ(s.next_release_ns(0), Shaper::kNever);
  submit(s, PriorityClass::kBulk, 1000, 0, 1);  // the whole burst
  submit(s, PriorityClass::kBulk, 500, 0, 2);
  submit(s, PriorityClass::kProbe, 300, 0, 3);  // the head: highest class waiting
  ASSERT_EQ(sink.sent.size(), 1u);
  const std::uint64_t at = s.next_release_ns(0);
  EXPECT_EQ(at, 30 * kMs + 1);                // 300 bytes at 10 per ms, and one ns against rounding
  EXPECT_EQ(s.next_release_ns(5 * kMs), at);  // asking changes nothing
  s.release(at - 1000);                       // 0.01 bytes short
  EXPECT_EQ(sink.sent.size(), 1u);
  s.release(at);
  ASSERT_EQ(sink.sent.size(), 2u);
  EXPECT_EQ(sink.sent[1].id, 3);
  // The bulk one next: 500 more bytes, 50 ms.
  const std::uint64_t bulk_at = s.next_release_ns(at);
  EXPECT_GE(bulk_at, at + 50 * kMs);
  EXPECT_LE(bulk_at, at + 50 * kMs + 2);
  s.release(bulk_at - 1000);
  EXPECT_EQ(sink.sent.size(), 2u);
  // Already affordable (no release since): now.
  EXPECT_EQ(s.next_release_ns(bulk_at + 1), bulk_at + 1);
  s.release(bulk_at);
  EXPECT_EQ(sink.sent.size(), 3u);
  EXPECT_EQ(s.next_release_ns(bulk_at), Shaper::kNever);
}

TEST(EgressShaper, NextReleaseOfAnOversizedDatagramIsAFullBucket) {
  RecordingSink sink;
  Shaper s({1'000, 500, 100'000}, sink, 0);      // 1 byte per ms
  submit(s, PriorityClass::kBulk, 2'000, 0, 1);  // goes, leaving a debt of 1500
  submit(s, PriorityClass::kBulk, 2'000, 0, 2);
  // It needs a full bucket (500), not 2000: 2000 ms to get back to 500.
  EXPECT_EQ(s.next_release_ns(0), 2'000 * kMs + 1);
  s.release(2'000 * kMs + 1);
  EXPECT_EQ(sink.sent.size(), 2u);
}

TEST(EgressShaper, UnlimitedNeverKeepsAnythingWaiting) {
  RecordingSink sink;
  Shaper s({0, 0, 1'000'000}, sink, 0);
  submit(s, PriorityClass::kBulk, 1400, 0, 1);
  EXPECT_EQ(s.next_release_ns(0), Shaper::kNever);
  EXPECT_EQ(sink.sent.size(), 1u);
}

}  // namespace
}  // namespace gw::cp
