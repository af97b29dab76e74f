#include "dataplane/replay.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

namespace gw::dp {
namespace {

// Check, then (if fresh) commit: what the ladder does for an authentic packet.
bool accept(ReplayWindow& w, std::uint32_t c) {
  if (!w.is_fresh(c)) return false;
  w.commit(c);
  return true;
}

TEST(ReplayWindow, DuplicatesAreRefusedNewCountersAccepted) {
  ReplayWindow w;
  w.reset(0);
  EXPECT_FALSE(w.is_fresh(0));
  EXPECT_TRUE(accept(w, 1));
  EXPECT_FALSE(accept(w, 1));
  EXPECT_TRUE(accept(w, 5));
  // Reordered but within the window: each accepted once.
  EXPECT_TRUE(accept(w, 3));
  EXPECT_TRUE(accept(w, 2));
  EXPECT_TRUE(accept(w, 4));
  for (std::uint32_t c = 0; c <= 5; ++c) EXPECT_FALSE(w.is_fresh(c)) << c;
  EXPECT_EQ(w.top(), 5u);
}

TEST(ReplayWindow, WindowEdges) {
  ReplayWindow w;
  w.reset(5000);
  // Exactly kReplayWindow - 1 below the top is still tracked; kReplayWindow below is too old.
  EXPECT_TRUE(w.is_fresh(5000 - (kReplayWindow - 1)));
  EXPECT_FALSE(w.is_fresh(5000 - kReplayWindow));
  EXPECT_TRUE(accept(w, 5000 - (kReplayWindow - 1)));
  EXPECT_FALSE(w.is_fresh(5000 - (kReplayWindow - 1)));
  // Advancing by one pushes that oldest counter out: now too old, not fresh.
  EXPECT_TRUE(accept(w, 5001));
  EXPECT_FALSE(w.is_fresh(5001 - kReplayWindow));
  EXPECT_TRUE(w.is_fresh(5002 - kReplayWindow));
}

TEST(ReplayWindow, RingWrapsAroundWithoutLosingOrInventingBits) {
  // Walk far past the bitmap size in steps that cross block boundaries, with
  // reordering inside the window, against a reference set.
  ReplayWindow w;
  w.reset(0);
  std::set<std::uint32_t> seen{0};
  std::uint32_t top = 0;
  std::mt19937 rng(42);
  for (int i = 0; i < 20000; ++i) {
    std::uint32_t c = 0;
    switch (rng() % 4) {
      case 0:
        c = top + 1 + rng() % 200;
        break;  // forward
      case 1:
        c = top - std::min<std::uint32_t>(top, rng() % kReplayWindow);
        break;  // reordered
      case 2:
        c = top - std::min<std::uint32_t>(top, rng() % 40);
        break;  // recent duplicates
      default:
        c = top + 1 + rng() % (3 * kReplayWindow);
        break;  // big jump
    }
    const bool too_old = c < top && top - c >= kReplayWindow;
    const bool want = !too_old && !seen.count(c);
    ASSERT_EQ(w.is_fresh(c), want) << "counter " << c << " top " << top << " step " << i;
    if (want) {
      w.commit(c);
      seen.insert(c);
      top = std::max(top, c);
    }
  }
}

TEST(ReplayWindow, JumpBeyondTheWindowClearsEverything) {
  ReplayWindow w;
  w.reset(100);
  for (std::uint32_t c = 101; c < 140; ++c) w.commit(c);
  w.commit(100 + 10 * kReplayWindow);
  // Everything old is now out of the window (too old), and the slots the old
  // counters used do not leak into new counters that map to the same bits.
  EXPECT_FALSE(w.is_fresh(120));
  for (std::uint32_t c = 100 + 10 * kReplayWindow - kReplayWindow + 1; c < 100 + 10 * kReplayWindow; ++c) {
    ASSERT_TRUE(w.is_fresh(c)) << c;
  }
}

TEST(ReplayWindow, HighestCounterValues) {
  ReplayWindow w;
  w.reset(UINT32_MAX - 2);
  EXPECT_TRUE(accept(w, UINT32_MAX));
  EXPECT_TRUE(accept(w, UINT32_MAX - 1));
  EXPECT_FALSE(accept(w, UINT32_MAX));
  EXPECT_FALSE(accept(w, UINT32_MAX - 2));
}

TEST(ReplayKey, SplitsEpochAndCounter) {
  crypto::Nonce n{1, 2, 3, 4, 5, 6, 7, 8, 0x00, 0x01, 0x02, 0x03};
  std::uint32_t counter = 0;
  const ReplayKey k = replay_key(77, n, &counter);
  EXPECT_EQ(k.key_id, 77u);
  EXPECT_EQ(k.epoch, 0x0102030405060708ULL);
  EXPECT_EQ(counter, 0x00010203u);
}

TEST(ReplayTable, UnknownSenderIsFreshAndOnlyCommitCreatesAWindow) {
  ReplayTable t(64);
  const ReplayKey k{1, 0xABCDEF};
  EXPECT_EQ(t.find(k), nullptr);
  EXPECT_TRUE(ReplayTable::is_fresh(t.find(k), 10));
  EXPECT_EQ(t.size(), 0u);  // a pre-check never inserts
  t.commit(k, 10);
  ASSERT_NE(t.find(k), nullptr);
  EXPECT_FALSE(ReplayTable::is_fresh(t.find(k), 10));
  EXPECT_TRUE(ReplayTable::is_fresh(t.find(k), 11));
  // Same epoch under another key id, or another epoch: separate windows.
  EXPECT_TRUE(ReplayTable::is_fresh(t.find({2, 0xABCDEF}), 10));
  EXPECT_TRUE(ReplayTable::is_fresh(t.find({1, 0xABCDEE}), 10));
  EXPECT_EQ(t.size(), 1u);
}

// Issue 17, item 2: the old set-associative table evicted live senders
// from a quarter of its capacity upwards. Now every one of `capacity`
// senders keeps its window, and one more is refused, never let in by
// forgetting another.
TEST(ReplayTable, HoldsExactlyItsCapacityAndRefusesPastIt) {
  for (const std::size_t cap : {std::size_t{64}, std::size_t{4096}, std::size_t{5000}}) {
    ReplayTable t(cap, 99);
    EXPECT_EQ(t.capacity(), cap);
    for (std::uint64_t e = 0; e < cap; ++e) ASSERT_TRUE(t.commit({1, e * 0x9E3779B97F4A7C15ULL}, 7)) << e;
    EXPECT_EQ(t.size(), cap);
    EXPECT_TRUE(t.full());
    for (std::uint64_t e = 0; e < cap; ++e) {
      ASSERT_NE(t.find({1, e * 0x9E3779B97F4A7C15ULL}), nullptr) << cap << " " << e;
      EXPECT_FALSE(ReplayTable::is_fresh(t.find({1, e * 0x9E3779B97F4A7C15ULL}), 7));
    }
    EXPECT_FALSE(t.commit({2, 12345}, 0));
    EXPECT_EQ(t.find({2, 12345}), nullptr);
    // A sender it holds still commits at capacity.
    EXPECT_TRUE(t.commit({1, 0}, 8));
    EXPECT_EQ(t.size(), cap);
  }
}

TEST(ReplayTable, WindowsAgeOutOnlyOnceTheirNewestDatagramIsStale) {
  constexpr std::uint32_t kNow = 1'700'000'000;
  ReplayTable t(64, 5, 30);
  for (std::uint64_t e = 0; e < 64; ++e) ASSERT_TRUE(t.commit({1, e}, 0, kNow - 40));
  // One sender sent again more recently.
  ASSERT_TRUE(t.commit({1, 7}, 1, kNow));
  // 30 s after its newest datagram a window is not stale yet (the ladder
  // accepts timestamps 30 s old): nothing goes.
  t.age(kNow - 10, 1000);
  EXPECT_EQ(t.size(), 64u);
  t.age(kNow, 1000);  // 40 s: all but {1, 7}
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.expired(), 63u);
  ASSERT_NE(t.find({1, 7}), nullptr);
  EXPECT_FALSE(ReplayTable::is_fresh(t.find({1, 7}), 1));
  // The freed room takes new senders, and every survivor is still found.
  for (std::uint64_t e = 100; e < 163; ++e) ASSERT_TRUE(t.commit({3, e}, 0, kNow));
  EXPECT_TRUE(t.full());
  for (std::uint64_t e = 100; e < 163; ++e) EXPECT_NE(t.find({3, e}), nullptr);
  EXPECT_NE(t.find({1, 7}), nullptr);
}

TEST(ReplayTable, BackwardShiftKeepsEveryProbeChainIntact) {
  // Random inserts and expiries at full load; a shadow set says who must be found.
  ReplayTable t(256, 11, 0);
  std::uint64_t rng = 1;
  auto next = [&] { return rng = rng * 6364136223846793005ULL + 1442695040888963407ULL; };
  std::vector<std::pair<std::uint64_t, std::uint32_t>> live;  // epoch, ts
  std::uint32_t now = 1000;
  for (int round = 0; round < 200; ++round) {
    while (!t.full()) {
      const std::uint64_t e = next();
      ASSERT_TRUE(t.commit({4, e}, 0, now));
      live.emplace_back(e, now);
    }
    ++now;
    t.age(now, next() % 600);
    std::size_t found = 0;
    for (const auto& [e, ts] : live) found += t.find({4, e}) != nullptr;
    // Everything not yet swept is found; what was swept is gone.
    EXPECT_EQ(found, t.size());
    std::vector<std::pair<std::uint64_t, std::uint32_t>> keep;
    for (const auto& p : live) {
      if (t.find({4, p.first}) != nullptr) keep.push_back(p);
    }
    live.swap(keep);
  }
  EXPECT_GT(t.expired(), 0u);
}

// Issue 51: a full table evicts the window with the oldest newest datagram
// (if older than the newcomer) and raises its floor past it; an epoch whose
// window was forgotten and that comes back keeps its old datagrams refused.
TEST(ReplayTable, ForgettingAWindowReopensNothingEvenWhenItsEpochComesBack) {
  ReplayTable t(4, 3, 30);
  ASSERT_TRUE(t.commit({1, 0xA}, 5, 100));
  for (std::uint64_t e = 1; e <= 3; ++e) ASSERT_TRUE(t.commit({1, e}, 0, 101));
  ASSERT_TRUE(t.full());
  // A newcomer stamped no later than every window: no room.
  EXPECT_EQ(t.check({1, 0xB}, 0, 100), ReplayCheck::kNoRoom);
  EXPECT_FALSE(t.commit({1, 0xB}, 0, 100));
  // Stamped later: the oldest (0xA, newest datagram at 100) goes.
  ASSERT_EQ(t.check({1, 0xB}, 0, 102), ReplayCheck::kFresh);
  ASSERT_TRUE(t.commit({1, 0xB}, 0, 102));
  EXPECT_EQ(t.evicted(), 1u);
  EXPECT_EQ(t.find({1, 0xA}), nullptr);
  EXPECT_EQ(t.floor_ts(), 101u);
  // 0xA's datagram, replayed: refused (no window, stamped below the floor).
  EXPECT_EQ(t.check({1, 0xA}, 5, 100), ReplayCheck::kReplay);
  // 0xA comes back with a later datagram (after another eviction): its new
  // window still refuses the old one, though counter 5 is inside it.
  ASSERT_TRUE(t.commit({1, 0xA}, 10, 103));
  EXPECT_EQ(t.check({1, 0xA}, 5, 100), ReplayCheck::kReplay);
  EXPECT_FALSE(t.commit({1, 0xA}, 5, 100));
  EXPECT_EQ(t.check({1, 0xA}, 6, 103), ReplayCheck::kFresh);
}

// Issue 51: a source address opens at most its share of windows.
TEST(ReplayTable, ASourceOpensAtMostItsShare) {
  ReplayTable t(64, 3, 30, 2);
  SourceAddress a;
  a.ip_len = 4;
  a.ip[0] = 10;
  a.ip[3] = 9;
  ASSERT_TRUE(t.commit({1, 1}, 0, 100, &a));
  ASSERT_TRUE(t.commit({1, 2}, 0, 100, &a));
  EXPECT_EQ(t.check({1, 3}, 0, 100, &a), ReplayCheck::kNoRoom);
  EXPECT_FALSE(t.commit({1, 3}, 0, 100, &a));
  EXPECT_EQ(t.windows_of(a), 2u);
  // Its existing windows go on; another address opens its own.
  EXPECT_TRUE(t.commit({1, 1}, 1, 100, &a));
  SourceAddress b = a;
  b.ip[3] = 10;
  if (t.windows_of(b) == 0) {  // (unless both share a count)
    EXPECT_TRUE(t.commit({1, 3}, 0, 100, &b));
  }
  // A window of `a` ages out: its share is free again.
  t.age(131, 1024);
  EXPECT_EQ(t.windows_of(a), 0u);
  EXPECT_TRUE(t.commit({1, 4}, 0, 131, &a));
}

}  // namespace
}  // namespace gw::dp
