// Anti-entropy, driven by hand (engine_driver.h): periodic syncs and their
// interval, view and bucket digests, bucket and whole-view answers, syncs
// started again, reconnects, and the limits on syncs (concurrent, answer rate,
// bytes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "control/codec.h"
#include "control/engine/engine.h"
#include "control/engine/wire_size.h"
#include "tests/unit/control/engine/engine_driver.h"

namespace gw::cp::engine {
namespace {

// ---------------------------------------------------------------- sync limits

TEST(Engine, SyncIntervalScalesWithClusterSize) {
  EXPECT_EQ(push_pull_scale(30 * kSecond, 10), 30 * kSecond);
  EXPECT_EQ(push_pull_scale(30 * kSecond, 32), 30 * kSecond);
  EXPECT_EQ(push_pull_scale(30 * kSecond, 64), 60 * kSecond);
  EXPECT_EQ(push_pull_scale(30 * kSecond, 50000), 12 * 30 * kSecond);
}

TEST(Engine, SyncOfHugeTableIsCappedInBytesAndRotates) {
  EngineConfig c = config();
  c.max_members = 60000;
  c.admit_rate = 1'000'000;
  c.admit_burst = 1'000'000;
  c.max_sync_bytes = 64 * 1024;
  c.sync_bytes_per_sec = 0;  // every sync up to max_sync_bytes (the rate cap is tested below)
  c.sync_answer_burst = 1000;
  Driver d(c);
  for (std::size_t i = 1; i <= 50000; i += 500) d.add_members(i, std::min<std::size_t>(i + 500, 50001));
  ASSERT_EQ(d.e.table().size(), 50001u);

  std::set<std::string> covered;
  std::size_t syncs = 0;
  for (std::uint32_t round = 0; round < 100 && covered.size() < 50000; ++round) {
    // Two seconds apart: large answers to one address are limited to a
    // whole sync every two seconds (no reflection, docs/membership.md).
    d.now += 2 * kSecond;
    const std::size_t before = d.sent.size();
    d.handle(1, {SyncRequest{
                    round + 1, name(1), false, 0, 1, {MemberState{name(1), addr(1), 1, MemberStatus::kAlive, {}}}}});
    ++syncs;
    std::size_t bytes = 0;
    std::size_t members = 0;
    std::uint32_t parts = 0;
    for (std::size_t i = before; i < d.sent.size(); ++i) {
      const Outgoing& o = d.sent[i];
      EXPECT_EQ(o.priority, PriorityClass::kBulk);
      const std::size_t size = encode(o.messages).size();
      EXPECT_LE(size, c.max_packet_bytes);
      bytes += size;
      const SyncResponse* r = find_msg<SyncResponse>(o);
      ASSERT_NE(r, nullptr);
      parts = r->parts;
      for (const MemberState& s : r->members) {
        ++members;
        if (s.node != name(0)) covered.insert(s.node);
      }
    }
    EXPECT_EQ(parts, d.sent.size() - before);
    EXPECT_LE(bytes, c.max_sync_bytes) << "round " << round;
    EXPECT_GT(bytes, c.max_sync_bytes / 2);
    EXPECT_LT(members, 5000u);
  }
  // Rotating windows cover the whole table in about table_bytes / max_sync_bytes syncs.
  EXPECT_EQ(covered.size(), 50000u);
  EXPECT_GT(syncs, 10u);
  EXPECT_LT(syncs, 40u);
}

TEST(Engine, ConcurrentSyncsAreCapped) {
  EngineConfig c = config();
  c.max_concurrent_syncs = 6;  // others' multi-part syncs hold at most half: 3
  c.sync_timeout_ns = 10 * kSecond;
  Driver d(c);
  d.add_members(1, 10);
  // Five members each start a two-part sync and send only the first part: three
  // are taken (each holds a slot until its last part), two refused.
  for (std::size_t i = 1; i <= 5; ++i) d.handle(i, {SyncRequest{7, name(i), false, 0, 2, {}}});
  EXPECT_EQ(d.e.counters().sync_answered, 3u);
  EXPECT_EQ(d.e.counters().sync_drop_concurrency, 2u);
  // The last part of sync 1 frees its slot.
  d.handle(1, {SyncRequest{7, name(1), false, 1, 2, {}}});
  d.handle(4, {SyncRequest{8, name(4), false, 0, 2, {}}});
  EXPECT_EQ(d.e.counters().sync_answered, 4u);
  d.handle(5, {SyncRequest{8, name(5), false, 0, 2, {}}});
  EXPECT_EQ(d.e.counters().sync_drop_concurrency, 3u);
  // Incomplete syncs free their slots after the sync timeout.
  d.run_until(d.now + 11 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  });
  d.handle(5, {SyncRequest{9, name(5), false, 0, 2, {}}});
  EXPECT_GE(d.e.counters().sync_answered, 5u);
}

// Issue 51: sync requests announcing two parts whose second never came, 8 a
// second from one member, held every slot: another member got 1 of 17 syncs
// answered, and our own anti-entropy stopped.
TEST(Engine, OneMemberCannotHoldTheSyncSlots) {
  EngineConfig c = config();
  c.max_concurrent_syncs = 8;
  c.sync_timeout_ns = 10 * kSecond;
  c.sync_answer_rate = 1000;
  c.sync_answer_burst = 1000;
  Driver d(c);
  d.add_members(1, 10);
  // From one address, under any names: one slot.
  for (std::uint32_t i = 0; i < 8; ++i) d.handle(2, {SyncRequest{100 + i, "ghost" + std::to_string(i), false, 0, 2, {}}});
  EXPECT_EQ(d.e.counters().sync_answered, 1u);
  EXPECT_EQ(d.e.counters().sync_drop_source_busy, 7u);
  // Others' multi-part syncs: half the slots in all.
  for (std::size_t i = 3; i <= 6; ++i) d.handle(i, {SyncRequest{7, name(i), false, 0, 2, {}}});
  EXPECT_EQ(d.e.counters().sync_answered, 4u);
  EXPECT_EQ(d.e.counters().sync_drop_concurrency, 1u);
  // Single-part syncs are still answered, and ours still go out.
  d.handle(7, {SyncRequest{7, name(7), false, 0, 1, {}}});
  EXPECT_EQ(d.e.counters().sync_answered, 5u);
  const auto [ours, at] = d.next_sync_request(push_pull_scale(c.push_pull_interval_ns, 10) * 2, true);
  EXPECT_NE(ours, nullptr);
  // The slots held by parts that never came are freed at the timeout.
  d.run_until(d.now + 11 * kSecond, [&](const Outgoing& o) {
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, p->target}}, d.now);
  });
  d.handle(2, {SyncRequest{200, "ghost9", false, 0, 2, {}}});
  EXPECT_EQ(d.e.counters().sync_drop_source_busy, 7u);
}

TEST(Engine, SyncAnswersAreRateLimited) {
  EngineConfig c = config();
  c.sync_answer_rate = 10;
  c.sync_answer_burst = 20;
  c.join_answer_rate = 10;
  c.join_answer_burst = 20;
  Driver d(c);
  // A join storm: 30 single-part join requests at once.
  for (std::size_t i = 1; i <= 30; ++i)
    d.handle(i, {SyncRequest{1, name(i), true, 0, 1, {MemberState{name(i), addr(i), 1, MemberStatus::kAlive, {}}}}});
  EXPECT_EQ(d.e.counters().sync_answered, 20u);
  EXPECT_EQ(d.e.counters().join_drop_rate, 10u);
  // Refused joiners are merged all the same (only their own entry).
  EXPECT_EQ(d.e.table().size(), 31u);
  // One second later, ten more answers.
  d.now += kSecond;
  for (std::size_t i = 21; i <= 30; ++i) d.handle(i, {SyncRequest{2, name(i), true, 0, 1, {}}});
  EXPECT_EQ(d.e.counters().sync_answered, 30u);
  // Periodic syncs have a bucket of their own, still full.
  for (std::size_t i = 31; i <= 55; ++i)
    d.handle(i, {SyncRequest{3,
                             name(i),
                             false,
                             0,
                             1,
                             {MemberState{name(i), addr(i), 1, MemberStatus::kAlive, {}},
                              MemberState{"other" + std::to_string(i), addr(i + 100), 1, MemberStatus::kAlive, {}}}}});
  EXPECT_EQ(d.e.counters().sync_answered, 50u);
  EXPECT_EQ(d.e.counters().sync_drop_rate, 5u);
  // A refused periodic sync merges its sender only, not the state it carries.
  EXPECT_NE(d.e.member(name(55)), nullptr);
  EXPECT_EQ(d.e.member("other55"), nullptr);
  EXPECT_NE(d.e.member("other31"), nullptr);
}

// Members n<first>.. with no tags, as one sync part's payload.
std::vector<MemberState> member_states(std::size_t first, std::size_t count) {
  std::vector<MemberState> out;
  for (std::size_t i = first; i < first + count; ++i)
    out.push_back(MemberState{name(i), addr(i), 1, MemberStatus::kAlive, {}});
  return out;
}

EngineConfig small_sync_config() {
  EngineConfig c = config();
  c.max_sync_bytes = 4096;  // with 1400-byte parts: at most 2 * 3 + 1 = 7 parts
  c.admit_burst = 10'000;
  c.max_members = 10'000;
  return c;
}

TEST(Engine, SyncRequestsOverTheCapAreNotMergedNorAnswered) {
  Driver d(small_sync_config());
  EXPECT_EQ(SyncManager::max_parts(4096, 1400), 7u);
  // An absurd part count: no slot, no token, no merge, no answer.
  d.handle(1, {SyncRequest{1, name(1), false, 0, 1'000'000, member_states(1, 1)}});
  EXPECT_EQ(d.e.counters().sync_drop_oversize, 1u);
  EXPECT_EQ(d.e.member(name(1)), nullptr);
  EXPECT_TRUE(d.sent.empty());
  d.handle(1, {SyncRequest{2, name(1), false, 0, 8, member_states(1, 1)}});
  EXPECT_EQ(d.e.counters().sync_drop_oversize, 2u);
  // One part alone larger than a whole sync.
  const SyncRequest huge{3, name(1), false, 0, 1, member_states(1, 300)};
  ASSERT_GT(estimated_sync_size(huge), 4096u);
  d.handle(1, {huge});
  EXPECT_EQ(d.e.counters().sync_drop_oversize, 3u);
  EXPECT_EQ(d.e.table().size(), 1u);
  EXPECT_EQ(d.e.counters().sync_answered, 0u);

  // Parts that fit one by one but not together: merged up to the cap, then cut
  // off; later parts are not taken for new syncs.
  std::size_t total = 0;
  std::size_t merged_parts = 0;
  for (std::uint32_t part = 0; part < 7; ++part) {
    const SyncRequest r{4, name(2), false, part, 7, member_states(1000 + 40 * part, 40)};
    const std::size_t bytes = estimated_sync_size(r);
    ASSERT_LE(bytes, 1400u);
    if (total + bytes <= 4096 && merged_parts == part) {
      total += bytes;
      ++merged_parts;
    }
    d.handle(2, {r});
  }
  ASSERT_GE(merged_parts, 2u);
  ASSERT_LT(merged_parts, 7u);
  EXPECT_EQ(d.e.counters().sync_answered, 1u);
  EXPECT_EQ(d.e.counters().sync_drop_oversize, 3u + (7 - merged_parts));
  EXPECT_EQ(d.e.table().size(), 1 + 40 * merged_parts);
  EXPECT_NE(d.e.member(name(1000 + 40 * merged_parts - 1)), nullptr);
  EXPECT_EQ(d.e.member(name(1000 + 40 * merged_parts)), nullptr);
}

TEST(Engine, SyncResponsesOverTheCapAreCutOff) {
  Driver d(small_sync_config());
  const std::vector<Address> seeds = {addr(1)};
  d.e.join(seeds, d.now);
  d.collect();
  ASSERT_EQ(d.sent.size(), 1u);
  const std::uint32_t seq = find_msg<SyncRequest>(d.sent[0])->seq_no;
  std::size_t total = 0;
  std::size_t merged_parts = 0;
  for (std::uint32_t part = 0; part < 7; ++part) {
    const SyncResponse r{seq, name(1), part, 7, member_states(1000 + 40 * part, 40)};
    const std::size_t bytes = estimated_sync_size(r);
    if (total + bytes <= 4096 && merged_parts == part) {
      total += bytes;
      ++merged_parts;
    }
    d.handle(1, {r});
  }
  ASSERT_GE(merged_parts, 2u);
  ASSERT_LT(merged_parts, 7u);
  EXPECT_EQ(d.e.counters().sync_drop_oversize, 7 - merged_parts);
  EXPECT_EQ(d.e.counters().sync_drop_unsolicited, 0u);
  EXPECT_EQ(d.e.table().size(), 1 + 40 * merged_parts);
  // An absurd part count in an answer to one of ours: not merged either.
  d.e.join(seeds, d.now);
  d.collect();
  const std::uint32_t seq2 = find_msg<SyncRequest>(d.sent.back())->seq_no;
  d.handle(1, {SyncResponse{seq2, name(1), 0, UINT32_MAX, member_states(2000, 1)}});
  EXPECT_EQ(d.e.member(name(2000)), nullptr);
  EXPECT_EQ(d.e.counters().sync_drop_oversize, 8 - merged_parts);
}

TEST(Engine, AFullSyncFromAPeerWithTheSameCapsIsNotCut) {
  // The receiving cap must never cut what a well-behaved sender fills to the cap.
  Driver seed(small_sync_config());
  EngineConfig c = small_sync_config();
  c.name = name(1);
  c.addr = addr(1);
  Driver joiner(c);
  seed.add_members(2, 402);
  const std::vector<Address> seeds = {addr(0)};
  joiner.e.join(seeds, joiner.now);
  joiner.collect();
  ASSERT_EQ(joiner.sent.size(), 1u);
  seed.handle(1, joiner.sent[0].messages);
  std::size_t parts = 0;
  std::set<std::string> names = {name(1)};
  for (const Outgoing& o : seed.sent) {
    if (const SyncResponse* r = find_msg<SyncResponse>(o)) {
      ++parts;
      for (const MemberState& m : r->members) names.insert(m.node);
      joiner.handle(0, o.messages);
    }
  }
  EXPECT_GE(parts, 3u);
  EXPECT_LE(parts, SyncManager::max_parts(4096, 1400));
  EXPECT_EQ(joiner.e.counters().sync_drop_oversize, 0u);
  EXPECT_GT(names.size(), 100u);
  EXPECT_EQ(joiner.e.table().size(), names.size());  // all of the seed's window, and us
}

// ---------------------------------------------------------------- digests and buckets

TEST(MemberTable, ViewDigestIsTheLiveSetWhateverTheOrder) {
  MemberTable a(100), b(100, 0, kSecond);
  for (std::size_t i = 1; i <= 20; ++i) a.insert(table_member(i, 1));
  for (std::size_t i = 20; i >= 1; --i) b.insert(table_member(i, 1));
  EXPECT_EQ(a.view_digest(), b.view_digest());
  // A newer incarnation, a death, a member more: each is a different view.
  const std::uint64_t same = a.view_digest();
  b.find(name(3))->incarnation = 2;
  EXPECT_NE(b.view_digest(), same);
  b.find(name(3))->incarnation = 1;
  b.set_status(*b.find(name(4)), MemberStatus::kDead, 0);
  EXPECT_NE(b.view_digest(), same);
  b.set_status(*b.find(name(4)), MemberStatus::kAlive, 0);
  EXPECT_EQ(b.view_digest(), same);
  // Suspected is still in the view; a probationer is not.
  b.set_status(*b.find(name(5)), MemberStatus::kSuspect, 0);
  EXPECT_EQ(b.view_digest(), same);
  Member p = table_member(50, 1);
  p.probation = true;
  b.insert(p);
  EXPECT_EQ(b.view_digest(), same);
  b.insert(table_member(51, 1));
  EXPECT_NE(b.view_digest(), same);
}

TEST(Engine, EqualViewsSyncWithTwoSmallDatagrams) {
  Driver d(config());
  d.add_members(1, 6);
  const std::uint64_t ours = d.e.table().view_digest();
  // Asked with our own digest: answered with the digest alone.
  d.handle(1, {SyncRequest{7, name(1), false, 0, 1, {}, ours}});
  const SyncResponse* same = find_msg<SyncResponse>(d.sent.back());
  ASSERT_NE(same, nullptr);
  EXPECT_TRUE(same->members.empty());
  EXPECT_EQ(same->digest, ours);
  EXPECT_EQ(d.e.counters().sync_digest_equal, 1u);
  // Asked with another view's digest: our window, and our digest.
  d.handle(2, {SyncRequest{8, name(2), false, 0, 1, {}, ours ^ 1}});
  const SyncResponse* other = find_msg<SyncResponse>(d.sent.back());
  ASSERT_NE(other, nullptr);
  EXPECT_FALSE(other->members.empty());
  EXPECT_EQ(other->digest, ours);
  EXPECT_EQ(d.e.counters().sync_digest_equal, 1u);
}

TEST(Engine, PeriodicSyncAsksWithItsDigestAndSendsItsWindowOnlyIfTheViewsDiffer) {
  Driver d(config());
  d.add_members(1, 6);
  auto [req, at] = d.next_sync_request(600 * kSecond);
  ASSERT_NE(req, nullptr);
  EXPECT_FALSE(req->join);
  EXPECT_TRUE(req->members.empty());
  EXPECT_EQ(req->digest, d.e.table().view_digest());
  // The peer's view is the same: nothing more is sent.
  const std::size_t peer = d.sent[at].to.ip[3];
  std::size_t seen = d.sent.size();
  d.handle(peer, {SyncResponse{req->seq_no, name(peer), 0, 1, {}, d.e.table().view_digest()}});
  EXPECT_EQ(d.sync_request_after(seen).first, nullptr);
  EXPECT_EQ(d.e.counters().sync_digest_differ, 0u);
  // Next time the peer knows a member we do not, and lacks something of ours
  // (its digest stays different after we merged its window): our window goes
  // to it in a second sync.
  auto [req2, at2] = d.next_sync_request(600 * kSecond);
  ASSERT_NE(req2, nullptr);
  const std::size_t peer2 = d.sent[at2].to.ip[3];
  seen = d.sent.size();
  d.handle(peer2,
           {SyncResponse{
               req2->seq_no, name(peer2), 0, 1, {MemberState{name(9), addr(9), 1, MemberStatus::kAlive, {}}}, 42}});
  ASSERT_NE(d.e.member(name(9)), nullptr);
  EXPECT_EQ(d.e.counters().sync_digest_differ, 1u);
  auto [full, at3] = d.sync_request_after(seen);
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(d.sent[at3].to.ip[3], peer2);
  EXPECT_FALSE(full->members.empty());
  EXPECT_EQ(full->digest, 0u);
}

TEST(MemberTable, BucketDigestsDifferOnlyWhereTheNamesDo) {
  MemberTable a(1000), b(1000, 0, kSecond);
  for (std::size_t i = 1; i <= 300; ++i) a.insert(table_member(i, 1));
  for (std::size_t i = 300; i >= 1; --i) b.insert(table_member(i, 1));
  constexpr std::size_t kN = 16;
  auto bucket = [](std::size_t i) { return MemberTable::bucket_of(IdentityPool::fnv1a(name(i)), kN); };
  const std::vector<std::uint32_t> same = a.bucket_digests(kN);
  ASSERT_EQ(same.size(), kN);
  EXPECT_EQ(b.bucket_digests(kN), same);
  // Names spread over every bucket.
  std::set<std::size_t> used;
  for (std::size_t i = 1; i <= 300; ++i) used.insert(bucket(i));
  EXPECT_EQ(used.size(), kN);
  // A member more, a newer incarnation, a death: that member's bucket only.
  auto changed = [&](const MemberTable& t) {
    std::set<std::size_t> out;
    const std::vector<std::uint32_t> now = t.bucket_digests(kN);
    for (std::size_t i = 0; i < kN; ++i)
      if (now[i] != same[i]) out.insert(i);
    return out;
  };
  b.insert(table_member(500, 1));
  EXPECT_EQ(changed(b), std::set<std::size_t>{bucket(500)});
  b.find(name(7))->incarnation = 2;
  std::set<std::size_t> two{bucket(500), bucket(7)};
  EXPECT_EQ(changed(b), two);
  b.set_status(*b.find(name(500)), MemberStatus::kDead, 0);
  b.find(name(7))->incarnation = 1;
  EXPECT_TRUE(changed(b).empty());
  b.set_status(*b.find(name(9)), MemberStatus::kLeft, 0);
  EXPECT_EQ(changed(b), std::set<std::size_t>{bucket(9)});
  // No buckets asked: none.
  EXPECT_TRUE(a.bucket_digests(0).empty());
}

// Issue 16: an epidemic that missed one member is repaired by the next sync
// with anyone, for the bytes of one bucket (not a window that takes many
// intervals to come round to that name).
TEST(Engine, UnequalViewsAreAnsweredWithTheDifferingBucketsOnly) {
  EngineConfig c = config();
  c.admit_burst = 10'000;
  Driver d(c);
  d.add_members(1, 201);
  ASSERT_EQ(d.e.table().live_count(), 201u);
  constexpr std::size_t kN = 16;
  const std::vector<std::uint32_t> ours = d.e.table().bucket_digests(kN);
  auto bucket = [](const std::string& n) { return MemberTable::bucket_of(IdentityPool::fnv1a(n), kN); };
  // The asker lacks n7 (so n7's bucket differs), and nothing else.
  std::vector<std::uint32_t> theirs = ours;
  theirs[bucket(name(7))] ^= 0x5a5a5a5au;
  const std::size_t before = d.sent.size();
  d.handle(2, {SyncRequest{7, name(2), false, 0, 1, {}, d.e.table().view_digest() ^ 1, theirs}});
  std::set<std::string> got;
  std::vector<const SyncResponse*> parts;
  for (std::size_t i = before; i < d.sent.size(); ++i)
    if (const SyncResponse* r = find_msg<SyncResponse>(d.sent[i])) parts.push_back(r);
  ASSERT_FALSE(parts.empty());
  for (const SyncResponse* r : parts) {
    for (const MemberState& m : r->members) got.insert(m.node);
    EXPECT_EQ(r->buckets.empty(), r->part != 0);
    if (r->part == 0) {
      EXPECT_EQ(r->buckets, ours);
    }
  }
  // Every member of that bucket (n7 among them), ourselves, and no one else.
  std::set<std::string> want{name(0)};
  for (std::size_t i = 1; i < 201; ++i)
    if (bucket(name(i)) == bucket(name(7))) want.insert(name(i));
  EXPECT_GT(want.size(), 3u);
  EXPECT_EQ(got, want);
  EXPECT_EQ(d.e.counters().sync_bucket_windows, 1u);
  // Buckets of another count than ours still compare (the asker chose it).
  const std::size_t before2 = d.sent.size();
  std::vector<std::uint32_t> four = d.e.table().bucket_digests(4);
  four[1] ^= 1;
  d.handle(3, {SyncRequest{8, name(3), false, 0, 1, {}, 1, four}});
  std::size_t members = 0;
  for (std::size_t i = before2; i < d.sent.size(); ++i)
    if (const SyncResponse* r = find_msg<SyncResponse>(d.sent[i])) {
      members += r->members.size();
      for (const MemberState& m : r->members)
        if (m.node != name(0)) {
          EXPECT_EQ(MemberTable::bucket_of(IdentityPool::fnv1a(m.node), 4), 1u);
        }
    }
  EXPECT_GT(members, 10u);
  EXPECT_EQ(d.e.counters().sync_bucket_windows, 2u);
}

TEST(Engine, AfterABucketAnswerWhatTheResponderLacksGoesBackByBucket) {
  EngineConfig c = config();
  c.admit_burst = 10'000;
  Driver d(c);
  d.add_members(1, 201);
  const auto req = d.next_sync_request(900 * kSecond);
  ASSERT_NE(req.first, nullptr);
  // 201 live members: 16 buckets of about 13.
  const std::size_t n = req.first->buckets.size();
  EXPECT_EQ(n, 16u);
  EXPECT_EQ(req.first->buckets, d.e.table().bucket_digests(n));
  EXPECT_TRUE(req.first->members.empty());
  const std::size_t peer = d.sent[req.second].to.ip[3];
  const std::uint32_t seq = req.first->seq_no;
  // The responder sends n500 (which we lack) and lacks n9: after merging n500
  // our digests differ from its in n9's bucket only. (Its digests: those of
  // the same view plus n500, from a second engine, with n9's bucket changed.)
  auto bucket = [&](const std::string& nm) { return MemberTable::bucket_of(IdentityPool::fnv1a(nm), n); };
  Driver other(c);
  other.add_members(1, 201);
  other.handle(500, {alive(500)});
  std::vector<std::uint32_t> theirs = other.e.table().bucket_digests(n);
  theirs[bucket(name(9))] ^= 0x5a5a5a5au;
  const std::size_t seen = d.sent.size();
  d.handle(peer,
           {SyncResponse{
               seq, name(peer), 0, 1, {MemberState{name(500), addr(500), 1, MemberStatus::kAlive, {}}}, 42, theirs}});
  ASSERT_NE(d.e.member(name(500)), nullptr);
  EXPECT_EQ(d.e.counters().sync_digest_differ, 1u);
  EXPECT_EQ(d.e.counters().sync_bucket_windows, 1u);
  auto [back, at] = d.sync_request_after(seen);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(d.sent[at].to.ip[3], peer);
  std::set<std::string> got;
  for (std::size_t i = at; i < d.sent.size(); ++i)
    if (const SyncRequest* r = find_msg<SyncRequest>(d.sent[i])) {
      for (const MemberState& m : r->members) got.insert(m.node);
      // Our digests on every part: the responder answers what still differs.
      EXPECT_EQ(r->digest, d.e.table().view_digest());
      EXPECT_EQ(r->buckets, d.e.table().bucket_digests(n));
    }
  std::set<std::string> want{name(0)};
  for (std::size_t i = 1; i < 201; ++i)
    if (bucket(name(i)) == bucket(name(9))) want.insert(name(i));
  if (bucket(name(500)) == bucket(name(9))) want.insert(name(500));
  EXPECT_EQ(got, want);
}

// A view far shorter than ours (a member that rejoined through a seed whose
// own view was short), or one whose differences are spread over most buckets,
// gets our whole view: windows would take many intervals to make it up.
TEST(Engine, AFarShorterOrScatteredViewIsAnsweredWithTheWholeView) {
  EngineConfig c = config();
  c.admit_burst = 10'000;
  Driver d(c);
  d.add_members(1, 201);
  const std::uint64_t ours = d.e.table().view_digest();
  auto answered = [&](std::size_t before) {
    std::set<std::string> got;
    for (std::size_t i = before; i < d.sent.size(); ++i)
      if (const SyncResponse* r = find_msg<SyncResponse>(d.sent[i]))
        for (const MemberState& m : r->members) got.insert(m.node);
    return got.size();
  };
  // One bucket differs, the asker's view as large as ours: that bucket only.
  std::vector<std::uint32_t> theirs = d.e.table().bucket_digests(16);
  theirs[3] ^= 1;
  std::size_t before = d.sent.size();
  d.handle(2, {SyncRequest{7, name(2), false, 0, 1, {}, ours ^ 1, theirs, 201}});
  EXPECT_LT(answered(before), 40u);
  EXPECT_EQ(d.e.counters().sync_whole_views, 0u);
  // The same, from a view of 150 members (over 1/8 short): everything.
  before = d.sent.size();
  d.handle(3, {SyncRequest{8, name(3), false, 0, 1, {}, ours ^ 1, theirs, 150}});
  EXPECT_EQ(answered(before), 201u);
  EXPECT_EQ(d.e.counters().sync_whole_views, 1u);
  // A view as large as ours that differs in 9 buckets of 16: everything.
  for (std::size_t i = 0; i < 9; ++i) theirs[i] ^= 1;
  before = d.sent.size();
  d.handle(4, {SyncRequest{9, name(4), false, 0, 1, {}, ours ^ 1, theirs, 201}});
  EXPECT_EQ(answered(before), 201u);
  EXPECT_EQ(d.e.counters().sync_whole_views, 2u);
}

// A digest sync whose answer lost a part (a whole view is tens of datagrams;
// parts are in name order, so the same names would be missing until the next
// interval, minutes away) is started again soon.
TEST(Engine, ADigestSyncThatLostAPartIsStartedAgainSoon) {
  EngineConfig c = config();
  c.admit_burst = 10'000;
  Driver d(c);
  d.add_members(1, 201);
  const auto [req, at] = d.next_sync_request(900 * kSecond);
  ASSERT_NE(req, nullptr);
  const std::uint32_t seq = req->seq_no;
  const std::size_t peer = d.sent[at].to.ip[3];
  // Part 0 of 2 arrives; part 1 never does.
  d.handle(peer,
           {SyncResponse{seq, name(peer), 0, 2, {MemberState{name(600), addr(600), 1, MemberStatus::kAlive, {}}}, 42}});
  // After the sync timeout, another sync within two join retry intervals
  // (not the scaled interval: 210 s at 201 members).
  const SyncRequest* again = d.next_sync_request(c.sync_timeout_ns + 2 * c.join_retry_min_ns + kSecond).first;
  ASSERT_NE(again, nullptr);
  EXPECT_NE(again->seq_no, seq);
  EXPECT_FALSE(again->join);
  EXPECT_EQ(d.e.counters().sync_incomplete_retries, 1u);
  // An answer that never came at all (a busy peer) is not retried early.
  const SyncRequest* third = d.next_sync_request(c.sync_timeout_ns + 2 * c.join_retry_min_ns + kSecond).first;
  EXPECT_EQ(third, nullptr);
  EXPECT_EQ(d.e.counters().sync_incomplete_retries, 1u);
}

// ---------------------------------------------------------------- reconnects

// Syncs to failed members (reconnect, for partitions and for a group that
// restarted together) go on a timer of their own, as in Serf: never instead of
// the periodic sync with a live peer (a run of syncs to the dead left a member
// that missed a death holding it for 70 s, ci/phantom-storm seed 39), and not
// tied to its interval either (that grows with N: 120 s at 150 members, and
// a group that restarted together through both shared seeds stayed split to
// the end of ci/restart seed 223).
TEST(Engine, ReconnectSyncsGoOnATimerOfTheirOwnBesideTheLiveOnes) {
  struct Seen {
    std::size_t live = 0;
    std::vector<std::uint64_t> reconnects_at;
    std::uint64_t counted = 0;
  };
  const auto run = [](std::uint64_t reconnect_interval_ns) {
    EngineConfig c = config();
    c.push_pull_interval_ns = 2 * kSecond;
    c.reconnect_interval_ns = reconnect_interval_ns;
    Driver d(c);
    d.add_members(1, 5);
    run_with_established(d, 5, kStart + 300 * kSecond);
    // Two established members fail: each reconnect round picks one of them
    // with probability 2 / (3 + 2).
    d.handle(1, {Dead{1, name(3), name(1)}, Dead{1, name(4), name(1)}});
    Seen seen;
    const std::uint64_t sync_before = d.e.counters().sync_reconnects;
    d.run_until(d.now + 400 * kSecond, [&](const Outgoing& o) {
      const std::size_t to = index_of(o.to);
      if (const Ping* p = find_msg<Ping>(o); p && (to == 1 || to == 2 || to == 5))
        d.e.handle(o.to, {Ack{p->seq_no, name(to)}}, d.now);
      const SyncRequest* r = find_msg<SyncRequest>(o);
      if (r == nullptr || r->join) return;
      if (to == 3 || to == 4)
        seen.reconnects_at.push_back(d.now);
      else
        ++seen.live;
    });
    seen.counted = d.e.counters().sync_reconnects - sync_before;
    EXPECT_EQ(d.e.member(name(1))->status, MemberStatus::kAlive);
    return seen;
  };
  const Seen on = run(20 * kSecond);
  const Seen off = run(0);
  // 400 s of 20 s rounds (jittered 10-30 s), 2 in 5 of them a reconnect.
  EXPECT_GE(on.reconnects_at.size(), 3u);
  EXPECT_LE(on.reconnects_at.size(), 20u);
  EXPECT_EQ(on.counted, on.reconnects_at.size());
  for (std::size_t i = 1; i < on.reconnects_at.size(); ++i)
    EXPECT_GE(on.reconnects_at[i] - on.reconnects_at[i - 1], 10 * kSecond);
  EXPECT_TRUE(off.reconnects_at.empty());
  EXPECT_EQ(off.counted, 0u);
  // The live syncs are the same with and without: one per 2 s interval.
  EXPECT_GE(on.live, 190u);
  EXPECT_GE(on.live + 2, off.live);
}

// A split longer than the tombstones' lifetime (issue 55: 7 minutes against
// 5) still heals: an established member that failed stays a reconnect
// candidate for reconnect_timeout_ns after its death, not for its tombstone's
// lifetime. Past the timeout it is given up and counted, never contacted again.
TEST(Engine, FailedMembersAreReconnectedToUntilReconnectTimeoutThenGivenUpAndCounted) {
  EngineConfig c = config();
  c.reconnect_interval_ns = 10 * kSecond;
  c.tombstone_ttl_ns = 60 * kSecond;
  c.reconnect_timeout_ns = 600 * kSecond;
  Driver d(c);
  d.add_members(1, 5);
  run_with_established(d, 5, kStart + 300 * kSecond);
  const std::uint64_t died_at = d.now;
  d.handle(1, {Dead{1, name(3), name(1)}});
  ASSERT_EQ(d.e.member(name(3))->status, MemberStatus::kDead);
  std::vector<std::uint64_t> reconnects_at;
  d.run_until(died_at + 900 * kSecond, [&](const Outgoing& o) {
    const std::size_t to = index_of(o.to);
    if (const Ping* p = find_msg<Ping>(o); p && to != 3) d.e.handle(o.to, {Ack{p->seq_no, name(to)}}, d.now);
    if (const SyncRequest* r = find_msg<SyncRequest>(o); r != nullptr && !r->join && to == 3)
      reconnects_at.push_back(d.now);
  });
  // Its tombstone went after 60 s; reconnects went on to 600 s, then stopped.
  EXPECT_EQ(d.e.member(name(3)), nullptr);
  ASSERT_FALSE(reconnects_at.empty());
  EXPECT_GT(reconnects_at.back(), died_at + 300 * kSecond);
  EXPECT_LE(reconnects_at.back(), died_at + 600 * kSecond);
  EXPECT_EQ(d.e.counters().reconnect_expired, 1u);
  EXPECT_EQ(d.e.counters().reconnect_evicted, 0u);
}

// A member we hold failed that talks to us (the other side of a healed split)
// is told, first-hand and at most once per probe interval; when it comes back
// after its tombstone expired it is no newcomer: no admission wait, no
// probation, straight into the view. One that left is not reconnected to.
TEST(Engine, AFailedMemberThatTalksToUsIsToldAndComesBackWithoutAdmission) {
  EngineConfig c = config();
  c.reconnect_interval_ns = 10 * kSecond;
  c.tombstone_ttl_ns = 60 * kSecond;
  c.admit_rate = 1;
  c.admit_burst = 1;
  Driver d(c);
  d.add_members(1, 6);
  run_with_established(d, 6, kStart + 300 * kSecond);
  d.handle(1, {Dead{1, name(3), name(1)}, Leave{1, name(4)}});
  d.run_until(d.now + 120 * kSecond, [&](const Outgoing& o) {
    const std::size_t to = index_of(o.to);
    if (const Ping* p = find_msg<Ping>(o); p && to != 3 && to != 4) d.e.handle(o.to, {Ack{p->seq_no, name(to)}}, d.now);
    if (find_msg<SyncRequest>(o) != nullptr) {
      EXPECT_NE(to, 4u) << "a left member";
    }
  });
  ASSERT_EQ(d.e.member(name(3)), nullptr);  // tombstone expired
  // It pings us (it holds us failed too, and reconnects): told that it is dead.
  std::size_t mark = d.sent.size();
  d.handle(3, {Ping{7, name(0), name(3), addr(3)}});
  const auto deaths_to_3 = [&](std::size_t from) {
    int n = 0;
    for (std::size_t i = from; i < d.sent.size(); ++i)
      if (const Dead* x = find_msg<Dead>(d.sent[i]); x && x->node == name(3) && d.sent[i].to == addr(3)) ++n;
    return n;
  };
  EXPECT_EQ(deaths_to_3(mark), 1);
  d.handle(3, {Ping{8, name(0), name(3), addr(3)}});
  EXPECT_EQ(deaths_to_3(mark), 1);  // not again within a probe interval
  EXPECT_EQ(d.e.counters().dead_told, 1u);
  // Its refutation brings it back at once, though the admission bucket is dry.
  for (std::size_t i = 10; i < 14; ++i) d.handle(1, {alive(i)});  // newcomers use the tokens up
  const std::uint64_t probation = d.e.counters().probation_started;
  d.handle(3, {alive(3, 2)});
  const Member* back = d.e.member(name(3));
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->status, MemberStatus::kAlive);
  EXPECT_FALSE(back->probation);
  EXPECT_EQ(d.e.counters().probation_started, probation);
}

TEST(Engine, AfterAFailedMemberReturnsTheSettleSyncGoesToIt) {
  // A partition heals: the member that came back is from the other side,
  // which saw the deaths we missed. Our next sync, a settle delay later and
  // long before the periodic one, asks it and no one else.
  EngineConfig c = config();
  c.reconnect_interval_ns = 0;
  c.push_pull_interval_ns = 600 * kSecond;
  Driver d(c);
  d.add_members(1, 8);
  run_with_established(d, 8, kStart + 300 * kSecond);
  d.handle(1, {Dead{1, name(5), name(1)}});
  ASSERT_NE(d.e.member(name(5)), nullptr);
  ASSERT_EQ(d.e.member(name(5))->status, MemberStatus::kDead);
  const std::uint64_t syncs = d.e.counters().sync_started;
  d.handle(5, {alive(5, 2)});
  ASSERT_EQ(d.e.member(name(5))->status, MemberStatus::kAlive);
  std::vector<std::size_t> sync_peers;
  d.run_until(d.now + 60 * kSecond, [&](const Outgoing& o) {
    const std::size_t to = index_of(o.to);
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, name(to)}}, d.now);
    if (find_msg<SyncRequest>(o) != nullptr) sync_peers.push_back(to);
  });
  ASSERT_EQ(sync_peers.size(), 1u) << "one settle sync";
  EXPECT_EQ(sync_peers.front(), 5u);
  EXPECT_EQ(d.e.counters().sync_started, syncs + 1);
}

TEST(Engine, TheSettleSyncPrefersAMemberThatToldUsOfItsReturnItself) {
  // Two members we hold failed return: 5 tells us itself, then a peer tells
  // us of 6 (second-hand: 6 may have refuted where we could not hear it and
  // died since). The settle sync goes to 5, which is alive and from the other
  // side; the latest return alone would pick 6.
  EngineConfig c = config();
  c.reconnect_interval_ns = 0;
  c.push_pull_interval_ns = 600 * kSecond;
  Driver d(c);
  d.add_members(1, 8);
  run_with_established(d, 8, kStart + 300 * kSecond);
  d.handle(1, {Dead{1, name(5), name(1)}, Dead{1, name(6), name(1)}});
  ASSERT_EQ(d.e.member(name(5))->status, MemberStatus::kDead);
  ASSERT_EQ(d.e.member(name(6))->status, MemberStatus::kDead);
  d.handle(5, {alive(5, 2)});
  d.handle(2, {alive(6, 2)});
  ASSERT_EQ(d.e.member(name(5))->status, MemberStatus::kAlive);
  ASSERT_EQ(d.e.member(name(6))->status, MemberStatus::kAlive);
  std::vector<std::size_t> sync_peers;
  d.run_until(d.now + 60 * kSecond, [&](const Outgoing& o) {
    const std::size_t to = index_of(o.to);
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, name(to)}}, d.now);
    if (find_msg<SyncRequest>(o) != nullptr) sync_peers.push_back(to);
  });
  ASSERT_EQ(sync_peers.size(), 1u) << "one settle sync";
  EXPECT_EQ(sync_peers.front(), 5u);
}

TEST(Engine, WithNoDirectReturnTheSettleSyncGoesToTheLatestReturned) {
  // Every return heard second-hand: the latest returned member is asked (it
  // is from the other side), not the peer that passed the news on.
  EngineConfig c = config();
  c.reconnect_interval_ns = 0;
  c.push_pull_interval_ns = 600 * kSecond;
  Driver d(c);
  d.add_members(1, 8);
  run_with_established(d, 8, kStart + 300 * kSecond);
  d.handle(1, {Dead{1, name(5), name(1)}, Dead{1, name(6), name(1)}});
  d.handle(2, {alive(5, 2)});
  d.handle(2, {alive(6, 2)});
  ASSERT_EQ(d.e.member(name(6))->status, MemberStatus::kAlive);
  std::vector<std::size_t> sync_peers;
  d.run_until(d.now + 60 * kSecond, [&](const Outgoing& o) {
    const std::size_t to = index_of(o.to);
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, name(to)}}, d.now);
    if (find_msg<SyncRequest>(o) != nullptr) sync_peers.push_back(to);
  });
  ASSERT_EQ(sync_peers.size(), 1u) << "one settle sync";
  EXPECT_EQ(sync_peers.front(), 6u);
}

}  // namespace
}  // namespace gw::cp::engine
