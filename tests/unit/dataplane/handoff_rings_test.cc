// HandoffRings as the control lcore sees it (no EAL: the rings are plain
// memory): one ring per worker and class, release by runs of one ring.
#include "dataplane/handoff_rings.h"

#include "config/loader.h"

#include <gtest/gtest.h>

#include <atomic>

#include "dataplane/port.h"

namespace gw::dp {
namespace {

TEST(HandoffRings, OneRingPerWorkerAndClassReleasedInDequeueOrder) {
  HandoffRings rings(2, 4, 32);
  EXPECT_EQ(rings.worker_count(), 2u);
  EXPECT_NE(rings.ring(0, crypto::PriorityClass::kGossip), rings.ring(1, crypto::PriorityClass::kGossip));
  EXPECT_NE(rings.ring(0, crypto::PriorityClass::kGossip), rings.ring(0, crypto::PriorityClass::kUrgent));
  // Per ring, 4 records plus two of two cache lines each (48-byte header + 32 bytes).
  EXPECT_EQ(rings.bytes(), 2u * crypto::kClassCount * 6u * 128u);

  const std::array<std::uint8_t, 3 + PayloadRing::kReadPast> buf{1, 2, 3};
  const std::uint8_t* p = buf.data();
  PayloadRing* r = rings.ring(1, crypto::PriorityClass::kProbe);
  for (std::uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(r->push(p, 3, Endpoint{}, i));
  r->publish();
  EXPECT_FALSE(r->push(p, 3, Endpoint{}, 9));
  EXPECT_EQ(rings.depth(1, crypto::PriorityClass::kProbe), 4u);
  EXPECT_EQ(rings.depth(0, crypto::PriorityClass::kProbe), 0u);

  std::array<Handoff, 8> out;
  ASSERT_EQ(rings.dequeue(1, crypto::PriorityClass::kProbe, out.data(), 3), 3u);
  EXPECT_EQ(out[2].key_id, 2u);
  rings.release(out.data(), 3);
  EXPECT_EQ(rings.depth(1, crypto::PriorityClass::kProbe), 1u);
  for (std::uint32_t i = 0; i < 3; ++i) EXPECT_TRUE(r->push(p, 3, Endpoint{}, 10 + i));
  EXPECT_FALSE(r->push(p, 3, Endpoint{}, 99));
}

TEST(HandoffRings, ProducersDoneFollowsTheWatchedFlags) {
  HandoffRings rings(1, 64, 64);
  std::atomic<bool> a{false};
  std::atomic<bool> b{false};
  rings.watch({&a, &b});
  EXPECT_FALSE(rings.producers_done());
  a = true;
  EXPECT_FALSE(rings.producers_done());
  b = true;
  EXPECT_TRUE(rings.producers_done());
}

TEST(HandoffRings, BadSizeIsASetupErrorNamingTheOption) {
  try {
    HandoffRings rings(1, 100, 64);
    FAIL() << "a ring of 100 slots was created";
  } catch (const SetupError& e) {
    EXPECT_NE(std::string(e.what()).find("rings.size"), std::string::npos) << e.what();
  }
}

// Issue 17, item 3: the same datagram accepted by two workers (each has its
// own windows) is served once; reordering across classes (the control lcore
// drains urgent first) is not mistaken for a replay.
TEST(HandoffRings, TheOnceOnlyCheckServesADatagramOnceWhicheverWorkerItCameThrough) {
  HandoffRings rings(2, 8, 32);
  rings.check_once(64, 30, 1);
  const std::array<std::uint8_t, 3 + PayloadRing::kReadPast> buf{1, 2, 3};
  const ReplayStamp a{0xE1, 5000, 1'700'000'000};
  const ReplayStamp b{0xE1, 5001, 1'700'000'000};
  const ReplayStamp old{0xE1, 1, 1'700'000'000};  // same sender, 5000 counters earlier, lower class
  rings.ring(0, crypto::PriorityClass::kUrgent)->push(buf.data(), 3, Endpoint{}, 7, a);
  rings.ring(0, crypto::PriorityClass::kUrgent)->push(buf.data(), 3, Endpoint{}, 7, b);
  rings.ring(0, crypto::PriorityClass::kUrgent)->publish();
  rings.ring(1, crypto::PriorityClass::kUrgent)->push(buf.data(), 3, Endpoint{}, 7, a);  // the copy
  rings.ring(1, crypto::PriorityClass::kUrgent)->publish();
  rings.ring(0, crypto::PriorityClass::kBulk)->push(buf.data(), 3, Endpoint{}, 7, old);
  rings.ring(0, crypto::PriorityClass::kBulk)->publish();

  std::array<Handoff, 8> out;
  ASSERT_EQ(rings.dequeue(0, crypto::PriorityClass::kUrgent, out.data(), 8), 2u);
  EXPECT_EQ(out[0].once, Once::kFirst);
  EXPECT_EQ(out[1].once, Once::kFirst);
  EXPECT_EQ(out[0].stamp.counter, 5000u);
  EXPECT_EQ(out[0].stamp.epoch, 0xE1u);
  EXPECT_EQ(out[0].stamp.timestamp, 1'700'000'000u);
  rings.release(out.data(), 2);
  ASSERT_EQ(rings.dequeue(1, crypto::PriorityClass::kUrgent, out.data(), 8), 1u);
  EXPECT_EQ(out[0].once, Once::kReplay);
  rings.release(out.data(), 1);
  ASSERT_EQ(rings.dequeue(0, crypto::PriorityClass::kBulk, out.data(), 8), 1u);
  EXPECT_EQ(out[0].once, Once::kFirst);
  rings.release(out.data(), 1);
  // Released like any other: the ring that held the copy has room again.
  EXPECT_EQ(rings.depth(1, crypto::PriorityClass::kUrgent), 0u);
}

// The config loader's memory estimate (config::memory_needed) matches what
// the dataplane reserves: the rings exactly, the tables at least.
TEST(HandoffRings, TheConfigMemoryEstimateMatchesTheRings) {
  config::Config c;
  c.lcores.workers = {1, 2};
  c.rings.size = 64;
  c.limits.max_payload_bytes = 1400;
  const HandoffRings rings(2, 64, 1400 - 16);
  EXPECT_EQ(config::memory_needed(c).rings, rings.bytes());
  static_assert(sizeof(ReplayTable::Entry) <= 168, "config::memory_needed counts 168 bytes per replay window");
  static_assert(sizeof(FailedHeaders) <= 4096 * 32 + 64, "and 32 bytes per failed-header slot");
}

}  // namespace
}  // namespace gw::dp
