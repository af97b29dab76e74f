// HandoffRings as the control lcore sees it (no EAL: the rings are plain
// memory): one ring per worker and class, release by runs of one ring.
#include "dataplane/handoff_rings.h"

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
  // Per ring, 4 records plus two of one cache line each (32 + 32 bytes).
  EXPECT_EQ(rings.bytes(), 2u * crypto::kClassCount * 6u * 64u);

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

}  // namespace
}  // namespace gw::dp
