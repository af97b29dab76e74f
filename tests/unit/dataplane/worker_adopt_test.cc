// The worker's side of snapshot adoption (no EAL needed: adopt_snapshot only
// touches the exchange and the worker's pointers).
#include <gtest/gtest.h>

#include <memory>

#include "dataplane/api/snapshot.h"
#include "dataplane/worker.h"

namespace gw::dp {
namespace {

TEST(WorkerAdopt, KeysAndKnownMembersFollowTheNewestSnapshotBetweenBursts) {
  ASSERT_TRUE(crypto::init());
  auto first = std::make_unique<DataplaneSnapshot>();
  crypto::KeyBytes k1{};
  k1.fill(1);
  const crypto::Key key1(k1, crypto::Suite::kChaCha20Poly1305);
  first->keys.add(key1, true);
  SourceAddress member;
  member.ip = {10, 0, 0, 7};
  member.ip_len = 4;
  first->known_members = {member};
  SnapshotExchange x(2, std::move(first));

  auto w = std::make_unique<WorkerContext>();
  w->snapshots = &x;
  w->worker_index = 1;
  adopt_snapshot(*w);
  ASSERT_NE(w->snapshot, nullptr);
  EXPECT_EQ(w->snapshot->version, 1u);
  // The keys are this lcore's own copy of the snapshot's (issue 19).
  EXPECT_EQ(w->ladder.keys, &w->keys);
  ASSERT_NE(w->ladder.keys->find(key1.id()), nullptr);
  EXPECT_NE(w->ladder.keys->find(key1.id()), w->snapshot->keys.find(key1.id()));
  EXPECT_EQ(w->guard.state.snapshot, w->snapshot);  // the rate limiter sees who is known
  EXPECT_TRUE(w->guard.state.snapshot->is_known(member));

  x.publish(std::make_unique<DataplaneSnapshot>());  // the member left
  x.adopt(0);                                        // the other worker moves on
  EXPECT_EQ(x.retained(), 2u);                       // version 1 still held by worker 1
  adopt_snapshot(*w);
  EXPECT_EQ(w->snapshot->version, 2u);
  EXPECT_EQ(w->guard.state.snapshot, w->snapshot);
  EXPECT_FALSE(w->guard.state.snapshot->is_known(member));
  EXPECT_EQ(w->ladder.keys->find(key1.id()), nullptr) << "a key gone from the snapshot is gone from the lcore";
  EXPECT_EQ(w->ladder.keys->size(), 0u);
  x.reclaim();
  EXPECT_EQ(x.retained(), 1u);  // nobody holds version 1 any more

  // Without an exchange (tests that set keys themselves) nothing changes.
  WorkerContext bare;
  adopt_snapshot(bare);
  EXPECT_EQ(bare.snapshot, nullptr);
  EXPECT_EQ(bare.guard.state.snapshot, nullptr);
}

}  // namespace
}  // namespace gw::dp
