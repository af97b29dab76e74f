// control/engine/broadcast_queue.h: one entry per member, urgent first, bounded
// with counted drops, never an urgent drop while a non-urgent entry is queued.
#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <set>

#include "control/engine/broadcast_queue.h"
#include "control/engine/wire_size.h"

namespace gw::cp::engine {
namespace {

using Key = BroadcastQueue::Key;
Key member(const std::string& n) { return {BroadcastQueue::Kind::kMember, n}; }
Alive alive(const std::string& n, std::uint64_t inc) { return Alive{inc, n, {}, {}, 1}; }

constexpr std::size_t kBig = 1 << 20;

// The state messages' helpers: whom each is about, at which incarnation; the
// others are about nobody.
TEST(StateMessages, SubjectAndIncarnationOfEachKind) {
  EXPECT_EQ(message_subject(alive("a", 4)), "a");
  EXPECT_EQ(message_subject(Suspect{5, "b", "x"}), "b");
  EXPECT_EQ(message_subject(Dead{6, "c", "x"}), "c");
  EXPECT_EQ(message_subject(Leave{7, "d"}), "d");
  EXPECT_EQ(message_incarnation(Leave{7, "d"}), 7u);
  EXPECT_TRUE(message_subject(Ping{1, "t", "s", {}}).empty());
  EXPECT_TRUE(message_subject(Ack{1, "s"}).empty());
  EXPECT_EQ(message_incarnation(Ack{1, "s"}), 0u);
}

TEST(BroadcastQueue, OneEntryPerMemberNewerOrStrongerReplaces) {
  BroadcastQueue q(16);
  EXPECT_EQ(q.push(member("a"), alive("a", 1), PriorityClass::kGossip), PushResult::kQueued);
  EXPECT_EQ(q.push(member("a"), alive("a", 2), PriorityClass::kGossip), PushResult::kReplaced);
  EXPECT_EQ(q.size(), 1u);
  // Older incarnation: superseded.
  EXPECT_EQ(q.push(member("a"), alive("a", 1), PriorityClass::kGossip), PushResult::kSuperseded);
  // Same incarnation, stronger state: Suspect > Alive.
  EXPECT_EQ(q.push(member("a"), Suspect{2, "a", "x"}, PriorityClass::kGossip), PushResult::kReplaced);
  // Same incarnation, weaker state: superseded.
  EXPECT_EQ(q.push(member("a"), alive("a", 2), PriorityClass::kGossip), PushResult::kSuperseded);
  // Dead > Suspect.
  EXPECT_EQ(q.push(member("a"), Dead{2, "a", "x"}, PriorityClass::kUrgent), PushResult::kReplaced);
  EXPECT_EQ(q.push(member("a"), Suspect{2, "a", "y"}, PriorityClass::kGossip), PushResult::kSuperseded);
  // A newer incarnation beats even Dead (a restart).
  EXPECT_EQ(q.push(member("a"), alive("a", 3), PriorityClass::kGossip), PushResult::kReplaced);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.superseded(), 3u);
  Compound out;
  q.take(kBig, 10, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(std::get<Alive>(out[0]).incarnation, 3u);
}

TEST(BroadcastQueue, UserDataHasItsOwnKeySpace) {
  BroadcastQueue q(16);
  q.push(member("a"), alive("a", 1), PriorityClass::kGossip);
  q.push({BroadcastQueue::Kind::kUserData, "a"}, UserData{"a", "x"}, PriorityClass::kGossip);
  EXPECT_EQ(q.size(), 2u);
  q.push({BroadcastQueue::Kind::kUserData, "a"}, UserData{"a", "y"}, PriorityClass::kGossip);
  EXPECT_EQ(q.size(), 2u);
}

TEST(BroadcastQueue, ServesUrgentFirstThenFewestTransmits) {
  BroadcastQueue q(16);
  q.push(member("g1"), alive("g1", 1), PriorityClass::kGossip);
  q.push(member("g2"), Suspect{1, "g2", "x"}, PriorityClass::kGossip);
  q.push(member("u1"), Dead{1, "u1", "x"}, PriorityClass::kUrgent);
  q.push(member("g3"), alive("g3", 1), PriorityClass::kGossip);
  q.push(member("u2"), Leave{1, "u2"}, PriorityClass::kUrgent);

  // Room for exactly one message: the newest urgent one.
  Compound out;
  const std::size_t one = estimated_size(Message{Leave{1, "u2"}});
  EXPECT_EQ(q.take(one, 10, out), PriorityClass::kUrgent);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<Leave>(out[0]));
  out.clear();
  q.take(estimated_size(Message{Dead{1, "u1", "x"}}), 10, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<Dead>(out[0]));
  // Then the gossip entries, never transmitted ones first (newest first).
  out.clear();
  EXPECT_EQ(q.take(kBig, 10, out), PriorityClass::kUrgent);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_TRUE(std::holds_alternative<Leave>(out[0]) || std::holds_alternative<Dead>(out[0]));
  EXPECT_EQ(std::get<Alive>(out[2]).node, "g3");
}

TEST(BroadcastQueue, RetiresAfterTransmitLimit) {
  BroadcastQueue q(16);
  q.push(member("a"), alive("a", 1), PriorityClass::kGossip);
  for (int i = 0; i < 3; ++i) {
    Compound out;
    q.take(kBig, 3, out);
    EXPECT_EQ(out.size(), 1u);
  }
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.retired(), 1u);
}

TEST(BroadcastQueue, AnEntrysOwnCapRetiresItBeforeTheLimit) {
  // "a" may go out twice, "b" as often as take() allows (4), "c"'s cap is
  // above that limit: the lower of the two counts.
  BroadcastQueue q(16);
  q.push(member("a"), alive("a", 1), PriorityClass::kGossip, 2);
  q.push(member("b"), alive("b", 1), PriorityClass::kGossip);
  q.push(member("c"), alive("c", 1), PriorityClass::kGossip, 9);
  std::map<std::string, int> sent;
  for (int i = 0; i < 6; ++i) {
    Compound out;
    q.take(kBig, 4, out);
    for (const Message& m : out) ++sent[std::get<Alive>(m).node];
  }
  EXPECT_EQ(sent["a"], 2);
  EXPECT_EQ(sent["b"], 4);
  EXPECT_EQ(sent["c"], 4);
  EXPECT_TRUE(q.empty());
  // A replacement carries its own cap, not the old entry's.
  q.push(member("a"), alive("a", 2), PriorityClass::kGossip, 1);
  q.push(member("a"), alive("a", 3), PriorityClass::kGossip);
  int a = 0;
  for (int i = 0; i < 6; ++i) {
    Compound out;
    q.take(kBig, 4, out);
    a += static_cast<int>(out.size());
  }
  EXPECT_EQ(a, 4);
}

TEST(BroadcastQueue, BoundedDropsLowestClassMostTransmittedAndCounts) {
  BroadcastQueue q(4);
  q.push(member("u1"), Dead{1, "u1", "x"}, PriorityClass::kUrgent);
  q.push(member("g1"), alive("g1", 1), PriorityClass::kGossip);
  q.push(member("g2"), alive("g2", 1), PriorityClass::kGossip);
  // g1 and g2 are transmitted once (with u1); then g3 arrives fresh.
  Compound out;
  q.take(kBig, 10, out);
  q.push(member("g3"), alive("g3", 1), PriorityClass::kGossip);
  EXPECT_EQ(q.size(), 4u);
  // Full: the new urgent entry evicts the most transmitted, oldest gossip (g1).
  EXPECT_EQ(q.push(member("u2"), Dead{1, "u2", "x"}, PriorityClass::kUrgent), PushResult::kQueued);
  EXPECT_EQ(q.size(), 4u);
  EXPECT_FALSE(q.contains(member("g1")));
  EXPECT_TRUE(q.contains(member("g2")));
  EXPECT_TRUE(q.contains(member("g3")));
  EXPECT_EQ(q.drops()[static_cast<std::size_t>(PriorityClass::kGossip)], 1u);
}

TEST(BroadcastQueue, NeverDropsUrgentWhileNonUrgentExists) {
  BroadcastQueue q(8);
  // Fill with urgent entries that are heavily transmitted and one fresh gossip.
  for (int i = 0; i < 7; ++i)
    q.push(member("u" + std::to_string(i)), Dead{1, "u" + std::to_string(i), "x"}, PriorityClass::kUrgent);
  for (int round = 0; round < 5; ++round) {
    Compound out;
    q.take(kBig, 100, out);
  }
  q.push(member("g"), alive("g", 1), PriorityClass::kGossip);
  ASSERT_EQ(q.size(), 8u);
  // More urgent news: the gossip entry goes, not any urgent one.
  EXPECT_EQ(q.push(member("u7"), Dead{1, "u7", "x"}, PriorityClass::kUrgent), PushResult::kQueued);
  EXPECT_FALSE(q.contains(member("g")));
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(q.contains(member("u" + std::to_string(i))));
  EXPECT_EQ(q.drops()[static_cast<std::size_t>(PriorityClass::kUrgent)], 0u);
  EXPECT_EQ(q.drops()[static_cast<std::size_t>(PriorityClass::kGossip)], 1u);
  // New gossip into a queue full of urgent entries is itself dropped (counted).
  EXPECT_EQ(q.push(member("g2"), alive("g2", 1), PriorityClass::kGossip), PushResult::kDropped);
  EXPECT_EQ(q.drops()[static_cast<std::size_t>(PriorityClass::kGossip)], 2u);
  EXPECT_EQ(q.drops()[static_cast<std::size_t>(PriorityClass::kUrgent)], 0u);
  // Only when everything is urgent may an urgent entry go: the most transmitted.
  EXPECT_EQ(q.push(member("u8"), Dead{1, "u8", "x"}, PriorityClass::kUrgent), PushResult::kQueued);
  EXPECT_EQ(q.size(), 8u);
  EXPECT_EQ(q.drops()[static_cast<std::size_t>(PriorityClass::kUrgent)], 1u);
  EXPECT_TRUE(q.contains(member("u7")));
  EXPECT_TRUE(q.contains(member("u8")));
}

TEST(BroadcastQueue, RespectsByteBudget) {
  BroadcastQueue q(64);
  for (int i = 0; i < 50; ++i)
    q.push(member("member-" + std::to_string(i)), alive("member-" + std::to_string(i), 1), PriorityClass::kGossip);
  Compound out;
  q.take(300, 10, out);
  EXPECT_GT(out.size(), 0u);
  EXPECT_LE(estimated_size(out), 300u);
}

// take() reads a class's occupied buckets from a bitmap of the first 64 and
// scans any past them: an entry sent 70 times waits behind one sent fewer
// times, and is served again when that one has caught up and passed it.
TEST(BroadcastQueue, ServesFewestTransmitsFirstPastSixtyFourBuckets) {
  BroadcastQueue q(16);
  constexpr std::uint32_t kLimit = 200;
  q.push(member("a"), alive("a", 1), PriorityClass::kGossip);
  for (int i = 0; i < 70; ++i) {
    Compound out;
    q.take(kBig, kLimit, out);
  }
  ASSERT_EQ(q.transmits(member("a")), 70u);
  q.push(member("b"), alive("b", 1), PriorityClass::kGossip);
  const std::size_t one = estimated_size(Message{alive("b", 1)});
  auto take_one = [&] {
    Compound out;
    q.take(one, kLimit, out);
    return out.size() == 1 ? std::get<Alive>(out[0]).node : std::string("(") + std::to_string(out.size()) + ")";
  };
  for (int i = 0; i < 70; ++i) ASSERT_EQ(take_one(), "b") << "take " << i;
  // Both sent 70 times: the newer first, then the one now behind.
  EXPECT_EQ(take_one(), "b");
  EXPECT_EQ(take_one(), "a");
  EXPECT_EQ(take_one(), "b");
  EXPECT_EQ(take_one(), "a");
  EXPECT_EQ(q.transmits(member("a")), 72u);
  EXPECT_EQ(q.transmits(member("b")), 72u);
}

// A name only a queue entry holds stays the entry's through a replacement
// and through the eviction of another entry under the same name: the id is
// held across the erase, and not handed to the next name interned.
TEST(BroadcastQueue, ANameOnlyTheQueueHoldsSurvivesReplacementAndEviction) {
  BroadcastQueue q(1);
  ASSERT_EQ(identities().find_name("only-in-queue"), IdentityPool::kNone);
  q.push(member("only-in-queue"), alive("only-in-queue", 1), PriorityClass::kGossip);
  EXPECT_EQ(q.push(member("only-in-queue"), alive("only-in-queue", 2), PriorityClass::kGossip), PushResult::kReplaced);
  const Name other("interned-after-the-replacement");
  EXPECT_TRUE(q.contains(member("only-in-queue")));
  EXPECT_NE(identities().find_name("only-in-queue"), other.id());

  BroadcastQueue full(1);
  ASSERT_EQ(identities().find_name("evicted-name"), IdentityPool::kNone);
  full.push({BroadcastQueue::Kind::kUserData, "evicted-name"}, UserData{"evicted-name", "x"}, PriorityClass::kGossip);
  // Full: the user data entry (same name, the other key space) is the victim.
  EXPECT_EQ(full.push(member("evicted-name"), alive("evicted-name", 1), PriorityClass::kGossip), PushResult::kQueued);
  const Name later("interned-after-the-eviction");
  EXPECT_TRUE(full.contains(member("evicted-name")));
  EXPECT_FALSE(full.contains({BroadcastQueue::Kind::kUserData, "evicted-name"}));
  EXPECT_NE(identities().find_name("evicted-name"), later.id());
  Compound out;
  full.take(kBig, 10, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(std::get<Alive>(out[0]).node, "evicted-name");
}

}  // namespace
}  // namespace gw::cp::engine

namespace gw::cp::engine {
namespace {

// The buckets' ordered ring against std::set on a seeded mix of inserts and
// erases at the front, the back and anywhere, through many wrap-arounds of
// its head and several doublings of its buffer.
TEST(OrderedRing, StaysInOrderLikeASetThroughEveryKindOfChange) {
  OrderedRing ring;
  std::set<OrderedRing::Item> ref;
  std::uint64_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return seed >> 33;
  };
  std::uint64_t low = 1'000'000;
  std::uint64_t high = 1'000'001;
  for (int step = 0; step < 20000; ++step) {
    const std::uint64_t r = next() % 10;
    std::uint64_t id = 0;
    if (r < 3) {
      id = high++;  // newer than all: the back
    } else if (r < 6) {
      id = --low;  // older than all: the front (a backlog draining)
    } else if (r < 7 && !ref.empty()) {
      id = low + next() % (high - low);  // anywhere, if not there already
    }
    const auto at = ref.lower_bound({id, 0});
    const bool present = at != ref.end() && at->id == id;
    if (id != 0 && !present) {
      const OrderedRing::Item item{id, static_cast<std::uint32_t>(step)};
      ring.insert(item);
      ref.insert(item);
    } else if (!ref.empty()) {
      // Erase the front, the back or one in the middle.
      auto it = ref.begin();
      const std::uint64_t where = next() % 3;
      if (where == 1) it = std::prev(ref.end());
      if (where == 2) std::advance(it, static_cast<long>(next() % ref.size()));
      ring.erase(it->id);
      ref.erase(it);
    }
    ASSERT_EQ(ring.size(), ref.size()) << "step " << step;
    if (step % 97 == 0 || ref.size() < 4) {
      std::size_t i = 0;
      for (const auto& x : ref) ASSERT_EQ(ring[i++], x) << "step " << step;
    }
  }
  ring.erase(0);  // absent: nothing happens
  EXPECT_EQ(ring.size(), ref.size());
  ring.clear();
  EXPECT_TRUE(ring.empty());
}

// A ring holds its first items in itself (kInline), later ones in a buffer:
// moving it (a class's buckets are a vector that grows) keeps them in order
// either way, and leaves the source empty and usable.
TEST(OrderedRing, MovesKeepItsItemsInlineOrNotAndLeaveTheSourceEmpty) {
  for (std::size_t n :
       {std::size_t{1}, std::size_t{OrderedRing::kInline}, std::size_t{OrderedRing::kInline + 1}, std::size_t{37}}) {
    std::vector<OrderedRing> rings(1);
    // Inserted at the front each time: the head wraps before the buffer grows.
    for (std::size_t i = n; i > 0; --i) rings[0].insert({i, static_cast<std::uint32_t>(i)});
    rings.resize(64);  // reallocates: every ring is moved
    ASSERT_EQ(rings[0].size(), n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(rings[0][i].id, i + 1) << n;
    OrderedRing taken = std::move(rings[0]);
    EXPECT_TRUE(rings[0].empty()) << n;
    rings[0].insert({5, 5});
    rings[0].insert({3, 3});
    ASSERT_EQ(rings[0].size(), 2u);
    EXPECT_EQ(rings[0].front().id, 3u);
    EXPECT_EQ(rings[0].back().id, 5u);
    ASSERT_EQ(taken.size(), n);
    EXPECT_EQ(taken.back().id, n);
  }
}

}  // namespace
}  // namespace gw::cp::engine
