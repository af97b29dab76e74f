#include "dataplane/api/snapshot.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

namespace gw::dp {
namespace {

SourceAddress v4(std::uint8_t last) {
  SourceAddress s;
  s.ip = {10, 0, 0, last};
  s.ip_len = 4;
  return s;
}

// A snapshot that says which version it was built as, in its contents, so a
// reader can tell a freed or torn one from the real thing.
std::unique_ptr<DataplaneSnapshot> build(std::uint8_t members) {
  auto s = std::make_unique<DataplaneSnapshot>();
  for (std::uint8_t i = 1; i <= members; ++i) s->known_members.push_back(v4(i));
  return s;
}

TEST(Snapshot, IsKnownFindsExactAddressesOnly) {
  DataplaneSnapshot s;
  s.known_members = {v4(2), v4(7), v4(9)};
  EXPECT_TRUE(s.is_known(v4(7)));
  EXPECT_FALSE(s.is_known(v4(8)));
  SourceAddress six;
  six.ip = {10, 0, 0, 7};
  six.ip_len = 16;  // same bytes, other family
  EXPECT_FALSE(s.is_known(six));
}

TEST(SnapshotExchange, PublishAdoptAndReclaimOnlyWhatNoWorkerHolds) {
  SnapshotExchange x(2, build(1));
  EXPECT_EQ(x.current().version, 1u);
  EXPECT_EQ(x.retained(), 1u);

  const DataplaneSnapshot* w0 = x.adopt(0);
  EXPECT_EQ(w0->version, 1u);
  // Worker 1 has not adopted anything yet: it may hold version 1 from an
  // earlier load, so version 1 must survive.
  EXPECT_EQ(x.publish(build(2)), 2u);
  EXPECT_EQ(x.retained(), 2u);
  EXPECT_FALSE(x.all_adopted());

  w0 = x.adopt(0);
  const DataplaneSnapshot* w1 = x.adopt(1);
  EXPECT_EQ(w0->version, 2u);
  EXPECT_EQ(w1, w0);
  EXPECT_TRUE(x.all_adopted());
  x.reclaim();
  EXPECT_EQ(x.retained(), 1u);  // version 1 freed

  // Worker 1 stays on version 2 while two more are published: 2 is kept
  // (and still intact), 3 and 4 are kept behind it.
  x.publish(build(3));
  w0 = x.adopt(0);
  x.publish(build(4));
  w0 = x.adopt(0);
  EXPECT_EQ(w0->version, 4u);
  x.reclaim();
  EXPECT_EQ(x.retained(), 3u);
  EXPECT_EQ(w1->version, 2u);
  EXPECT_EQ(w1->known_members.size(), 2u);
  EXPECT_TRUE(w1->is_known(v4(2)));

  // Once worker 1 moves on, everything older than 4 goes.
  w1 = x.adopt(1);
  EXPECT_EQ(w1->version, 4u);
  EXPECT_TRUE(w1->is_known(v4(4)));
  x.reclaim();
  EXPECT_EQ(x.retained(), 1u);

  // A stopped worker pins nothing.
  x.retire_reader(0);
  x.publish(build(5));
  EXPECT_EQ(x.retained(), 2u);  // worker 1 still on 4
  x.adopt(1);
  x.reclaim();
  EXPECT_EQ(x.retained(), 1u);
  EXPECT_TRUE(x.all_adopted());
}

TEST(SnapshotExchange, AdoptingTheSameVersionAgainChangesNothing) {
  SnapshotExchange x(1, build(1));
  const DataplaneSnapshot* a = x.adopt(0);
  const DataplaneSnapshot* b = x.adopt(0);
  EXPECT_EQ(a, b);
  x.reclaim();
  EXPECT_EQ(x.retained(), 1u);
}

// A reader thread adopts while the control thread publishes and reclaims.
// Every snapshot the reader sees must be whole (its contents match its
// version) until it adopts the next; under ASan a premature free would be a
// use-after-free here. Bounded by counts, not by time.
TEST(SnapshotExchange, ConcurrentReaderNeverSeesAFreedSnapshot) {
  constexpr std::uint64_t kPublishes = 3000;
  auto make = [](std::uint64_t n) {
    auto s = std::make_unique<DataplaneSnapshot>();
    for (std::uint64_t i = 0; i < n % 5 + 1; ++i) s->known_members.push_back(v4(static_cast<std::uint8_t>(n % 200)));
    return s;
  };
  SnapshotExchange x(1, make(1));
  std::atomic<bool> bad{false};
  std::atomic<std::uint64_t> reader_at{0};
  std::thread reader([&] {
    std::uint64_t last = 0;
    while (last < kPublishes + 1) {
      const DataplaneSnapshot* s = x.adopt(0);
      // Version v was built by make(v).
      if (s->version < last || s->known_members.size() != s->version % 5 + 1 ||
          s->known_members.front() != v4(static_cast<std::uint8_t>(s->version % 200))) {
        bad = true;
      }
      last = s->version;
      reader_at.store(last, std::memory_order_relaxed);
    }
  });
  for (std::uint64_t v = 2; v <= kPublishes + 1; ++v) {
    x.publish(make(v));
    // Keep the backlog bounded: wait (spinning, no sleep) for the reader
    // to come within 64 versions.
    while (v > reader_at.load(std::memory_order_relaxed) + 64) std::this_thread::yield();
  }
  reader.join();
  EXPECT_FALSE(bad.load());
  x.reclaim();
  EXPECT_EQ(x.retained(), 1u);
}

}  // namespace
}  // namespace gw::dp
