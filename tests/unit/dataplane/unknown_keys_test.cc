// dataplane/api/unknown_keys.h: the worker's sample of who sends under key
// ids we lack, handed to the control lcore without locks. Pure, no EAL.
#include "dataplane/api/unknown_keys.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <utility>

namespace gw::dp {
namespace {

UnknownKeySighting sighting(std::uint32_t key_id, std::uint8_t host, std::uint16_t port = 7946) {
  UnknownKeySighting s;
  s.key_id = key_id;
  s.suite = 1;
  s.from.ip = {10, 0, 0, host};
  s.from.ip_len = 4;
  s.from.port = port;
  return s;
}

TEST(UnknownKeySample, DistinctSightingsAreTakenOnceAndTheNextSampleStartsEmpty) {
  UnknownKeySample sample;
  std::array<UnknownKeySighting, UnknownKeySample::kSlots> got;
  EXPECT_EQ(sample.take(got), 0u);  // nothing heard
  sample.note(sighting(0xabcd, 2));
  sample.note(sighting(0xabcd, 2));  // the same again: one entry
  sample.note(sighting(0xabcd, 3));
  sample.note(sighting(0x1234, 2));  // another key from the same source
  ASSERT_EQ(sample.take(got), 3u);
  EXPECT_EQ(got[0], sighting(0xabcd, 2));
  EXPECT_EQ(got[1], sighting(0xabcd, 3));
  EXPECT_EQ(got[2], sighting(0x1234, 2));
  // Taken: nothing new until the worker hears more.
  EXPECT_EQ(sample.take(got), 0u);
  sample.note(sighting(0xabcd, 2));  // heard again after the take: a new sample
  ASSERT_EQ(sample.take(got), 1u);
  EXPECT_EQ(got[0], sighting(0xabcd, 2));
}

TEST(UnknownKeySample, AFullSampleOnlyComparesUntilTaken) {
  UnknownKeySample sample;
  for (std::uint8_t h = 1; h <= 40; ++h) sample.note(sighting(7, h));
  EXPECT_FALSE(sample.wants());  // full and not taken: the worker skips it
  std::array<UnknownKeySighting, UnknownKeySample::kSlots> got;
  ASSERT_EQ(sample.take(got), UnknownKeySample::kSlots);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], sighting(7, static_cast<std::uint8_t>(i + 1)));
  EXPECT_TRUE(sample.wants());  // taken: a new sample may start
}

// One worker noting while the control lcore takes: every sighting taken is
// one the worker noted, whole (key id and port were written together), and
// each sample holds distinct ones.
TEST(UnknownKeySample, ConcurrentTakesSeeWholeSightingsOnly) {
  UnknownKeySample sample;
  std::atomic<bool> stop{false};
  std::thread worker([&] {
    std::uint32_t i = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const std::uint32_t k = i++ % 64;
      if (sample.wants())
        sample.note(sighting(0x10000 + k, static_cast<std::uint8_t>(k), static_cast<std::uint16_t>(k)));
    }
  });
  std::array<UnknownKeySighting, UnknownKeySample::kSlots> got;
  std::size_t taken = 0;
  // Until a few thousand sightings went across (the worker thread may be
  // scheduled late on a busy machine: the rounds only bound a hang).
  for (std::uint64_t round = 0; taken < 4000 && round < 2'000'000'000ULL; ++round) {
    const std::size_t n = sample.take(got);
    if (n == 0) std::this_thread::yield();
    std::set<std::uint32_t> ids;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t k = got[i].key_id - 0x10000;
      ASSERT_LT(k, 64u);
      ASSERT_EQ(got[i].from.port, k) << "a torn sighting";
      ASSERT_EQ(got[i].from.ip[3], k) << "a torn sighting";
      ASSERT_TRUE(ids.insert(k).second) << "a sighting twice in one sample";
    }
    taken += n;
  }
  stop.store(true);
  worker.join();
  EXPECT_GE(taken, 4000u);
}

}  // namespace
}  // namespace gw::dp
