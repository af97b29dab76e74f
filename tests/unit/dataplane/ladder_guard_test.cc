// The ladder's stateful steps through run_ladder: timestamp window, replay
// pre-check and commit-after-AEAD, per-source token buckets, and their order
// relative to the MAC and the AEAD. Clock injected through LadderState.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "crypto/datagram.h"
#include "crypto/nonce.h"
#include "dataplane/api/snapshot.h"
#include "dataplane/guard.h"
#include "dataplane/ladder.h"
#include "dataplane/rate_limit.h"
#include "dataplane/replay.h"

namespace gw::dp {
namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr std::uint16_t kPort = 7946;
constexpr std::uint32_t kNow = 1'700'000'000;
constexpr std::uint64_t kSecond = 1'000'000'000ULL;

crypto::KeyBytes key_bytes(std::uint8_t fill) {
  crypto::KeyBytes k{};
  k.fill(fill);
  return k;
}

void put16(Bytes& b, std::size_t off, std::uint16_t v) {
  b[off] = static_cast<std::uint8_t>(v >> 8);
  b[off + 1] = static_cast<std::uint8_t>(v);
}

// Ethernet + IPv4 + UDP from 10.0.0.<src> to 10.0.0.1:7946.
Bytes frame(const Bytes& payload, std::uint8_t src = 2) {
  Bytes f(14 + 20 + 8 + payload.size(), 0);
  std::fill(f.begin(), f.begin() + 12, 0x02);
  f[12] = 0x08;
  const std::size_t ip = 14;
  f[ip] = 0x45;
  put16(f, ip + 2, static_cast<std::uint16_t>(28 + payload.size()));
  f[ip + 8] = 64;
  f[ip + 9] = 17;
  f[ip + 12] = 10;
  f[ip + 15] = src;
  f[ip + 16] = 10;
  f[ip + 19] = 1;
  const std::size_t udp = ip + 20;
  put16(f, udp, 40000);
  put16(f, udp + 2, kPort);
  put16(f, udp + 4, static_cast<std::uint16_t>(8 + payload.size()));
  std::copy(payload.begin(), payload.end(), f.begin() + static_cast<std::ptrdiff_t>(udp + 8));
  return f;
}

SourceAddress src_addr(std::uint8_t last) {
  SourceAddress s;
  s.ip = {10, 0, 0, last};
  s.ip_len = 4;
  return s;
}

class LadderGuardTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(crypto::init()); }

  void SetUp() override {
    keys_.add(crypto::Key(key_bytes(1), crypto::Suite::kChaCha20Poly1305), true);
    ASSERT_TRUE(parse_endpoint("10.0.0.1", kPort, &cfg_.local));
    cfg_.cluster_id = crypto::derive_cluster_id("demo");
    cfg_.keys = &keys_;
    cfg_.replay_window_s = 30;
    st_.have_clock = true;
    st_.now_s = kNow;
    st_.now_ns = 5 * kSecond;
    st_.replay = &replay_;
    st_.rate = &rate_;
    st_.failed = &failed_;
  }

  // A valid datagram with this timestamp and the nonce counter `counter`.
  Bytes sealed(std::uint32_t timestamp, std::uint32_t counter, const std::string& text = "gossip") {
    nonces_.set_counter_for_test(counter);
    Bytes out(crypto::kHeaderBytes + text.size() + crypto::kTagBytes);
    const std::size_t n = crypto::seal_datagram(
        key_, {cfg_.cluster_id, crypto::PriorityClass::kGossip, timestamp, cfg_.local.receiver}, nonces_,
        reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), out.data(), out.size());
    EXPECT_EQ(n, out.size());
    return out;
  }
  Bytes fresh(std::uint32_t counter, std::uint8_t src = 2) { return frame(sealed(kNow, counter), src); }

  // Runs a copy (the ladder decrypts in place).
  Verdict run(Bytes f) { return run_ladder(cfg_, st_, f.data(), static_cast<std::uint32_t>(f.size())).verdict; }

  crypto::Key key_{key_bytes(1), crypto::Suite::kChaCha20Poly1305};
  crypto::Keyring keys_;
  crypto::NonceSource nonces_{0x1122334455667788ULL};
  LadderConfig cfg_;
  ReplayTable replay_{256};
  RateLimiter rate_{256, {1000, 20}, {10, 6}};
  FailedHeaders failed_;
  LadderState st_;
};

TEST_F(LadderGuardTest, TimestampWindowEdges) {
  EXPECT_EQ(run(frame(sealed(kNow, 1))), Verdict::kAccepted);
  EXPECT_EQ(run(frame(sealed(kNow - 30, 2))), Verdict::kAccepted);
  EXPECT_EQ(run(frame(sealed(kNow + 30, 3))), Verdict::kAccepted);
  EXPECT_EQ(run(frame(sealed(kNow - 31, 4))), Verdict::kStale);
  EXPECT_EQ(run(frame(sealed(kNow + 31, 5))), Verdict::kStale);
  EXPECT_EQ(run(frame(sealed(0, 6))), Verdict::kStale);
  EXPECT_EQ(run(frame(sealed(UINT32_MAX, 7))), Verdict::kStale);
  // The clock moves: what was stale in the future is now fine.
  st_.now_s = kNow + 10;
  EXPECT_EQ(run(frame(sealed(kNow + 40, 8))), Verdict::kAccepted);
  EXPECT_EQ(run(frame(sealed(kNow - 21, 9))), Verdict::kStale);
}

// Issue 17, item 4: what was sealed before this gateway started is refused
// (an earlier run may have accepted it; its windows are gone), checked after
// the timestamp window and before anything stateful.
TEST_F(LadderGuardTest, DatagramsSealedBeforeTheStartAreRefused) {
  cfg_.not_before_s = kNow - 5;
  EXPECT_EQ(run(frame(sealed(kNow - 6, 1))), Verdict::kBeforeStart);
  EXPECT_EQ(run(frame(sealed(kNow - 29, 2))), Verdict::kBeforeStart);
  EXPECT_EQ(run(frame(sealed(kNow - 31, 3))), Verdict::kStale);  // the window first
  EXPECT_EQ(run(frame(sealed(kNow - 5, 4))), Verdict::kAccepted);
  EXPECT_EQ(run(frame(sealed(kNow, 5))), Verdict::kAccepted);
  EXPECT_EQ(replay_.size(), 1u);
  EXPECT_EQ(rate_.size(), 1u);
}

TEST_F(LadderGuardTest, StaleDropsDoNotChargeTheBucketOrTouchTheWindow) {
  for (std::uint32_t c = 0; c < 50; ++c) EXPECT_EQ(run(frame(sealed(kNow - 1000, c))), Verdict::kStale);
  EXPECT_EQ(replay_.size(), 0u);
  EXPECT_EQ(rate_.size(), 0u);
}

TEST_F(LadderGuardTest, ExactDuplicateIsAReplay) {
  const Bytes f = fresh(10);
  EXPECT_EQ(run(f), Verdict::kAccepted);
  EXPECT_EQ(run(f), Verdict::kReplay);
  EXPECT_EQ(run(f), Verdict::kReplay);
  // Reordered but new: accepted; then too old for the window: replay.
  EXPECT_EQ(run(fresh(9)), Verdict::kAccepted);
  EXPECT_EQ(run(fresh(10 + kReplayWindow)), Verdict::kAccepted);
  EXPECT_EQ(run(fresh(10)), Verdict::kReplay);
  EXPECT_EQ(run(fresh(11)), Verdict::kAccepted);  // within the window, never seen
}

TEST_F(LadderGuardTest, ForgedPacketWithAFreshNonceDoesNotAdvanceTheWindow) {
  EXPECT_EQ(run(fresh(100)), Verdict::kAccepted);
  // A key holder's header (MAC right) on a tampered payload, with a nonce far
  // ahead. Had it been committed, counters up to 100 + 5000 - 1024 would be
  // "too old" from then on.
  Bytes forged = fresh(100 + 5000);
  forged.back() ^= 0x01;  // the tag
  EXPECT_EQ(run(forged), Verdict::kBadAuth);
  ASSERT_NE(replay_.find(ReplayKey{key_.id(), nonces_.epoch()}), nullptr);
  EXPECT_EQ(replay_.find(ReplayKey{key_.id(), nonces_.epoch()})->window.top(), 100u);
  EXPECT_EQ(run(fresh(101)), Verdict::kAccepted);
  // The forged header is remembered as failed: the same nonce is not given
  // another AEAD (the price of bounding what one sniffed header can cost,
  // docs/ladder.md), while the window stays where real packets left it.
  EXPECT_EQ(run(forged), Verdict::kAuthRetry);
  EXPECT_EQ(run(fresh(100 + 5000)), Verdict::kAuthRetry);
  EXPECT_EQ(replay_.find(ReplayKey{key_.id(), nonces_.epoch()})->window.top(), 101u);
}

// Issue 17, item 1: an outsider takes real datagrams it sniffed (sealed by
// another sender, never accepted here), flips one bit of the ciphertext and
// sends the copies as fast as it can from a known member's address and from
// many spoofed ones, while that member gossips at half its budget. Every one
// of the member's datagrams must be accepted, and the AEAD work the attack
// causes is one failed open per sniffed header, not one per copy.
TEST_F(LadderGuardTest, TamperedSniffedDatagramsCostAMemberNothing) {
  DataplaneSnapshot snap;
  snap.known_members = {src_addr(2)};
  st_.snapshot = &snap;
  crypto::NonceSource other{0x0BADC0DE0BADC0DEULL};
  std::vector<Bytes> sniffed;
  for (int i = 0; i < 8; ++i) {
    const std::string text = "for another member";
    Bytes d(crypto::kHeaderBytes + text.size() + crypto::kTagBytes);
    ASSERT_EQ(
        crypto::seal_datagram(key_, {cfg_.cluster_id, crypto::PriorityClass::kUrgent, kNow, cfg_.local.receiver}, other,
                              reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), d.data(), d.size()),
        d.size());
    sniffed.push_back(d);
  }
  std::array<std::uint64_t, kVerdictCount> attack{};
  std::uint32_t accepted = 0;
  constexpr std::uint32_t kGenuine = 300;
  for (std::uint32_t c = 0; c < kGenuine; ++c) {
    for (std::uint32_t k = 0; k < 50; ++k) {
      Bytes d = sniffed[k % sniffed.size()];
      d[crypto::kHeaderBytes + k % 4] ^= static_cast<std::uint8_t>(1u << (k % 8));
      const std::uint8_t from = k % 2 == 0 ? 2 : static_cast<std::uint8_t>(100 + k);
      ++attack[static_cast<std::size_t>(run(frame(d, from)))];
    }
    if (run(fresh(c, 2)) == Verdict::kAccepted) ++accepted;
    st_.now_ns += 2'000'000;  // 500 datagrams/s; the member's budget is 1000/s
  }
  EXPECT_EQ(accepted, kGenuine);
  EXPECT_EQ(attack[static_cast<std::size_t>(Verdict::kAccepted)], 0u);
  EXPECT_EQ(attack[static_cast<std::size_t>(Verdict::kBadAuth)], sniffed.size());
  EXPECT_EQ(attack[static_cast<std::size_t>(Verdict::kAuthRetry)], kGenuine * 50 - sniffed.size());
}

// Issue 17, item 2: with as many live senders as limits.replay_senders,
// every one of their datagrams offered again is a replay (the old table
// evicted windows from a quarter of its capacity and took replays back),
// one more sender is refused, and its room comes back once old windows are
// all stale.
TEST_F(LadderGuardTest, ReplaysAreRefusedAtFullTableLoad) {
  st_.rate = nullptr;  // one source address here; buckets are not the subject
  std::vector<Bytes> first;
  for (std::uint64_t s = 0; s < replay_.capacity(); ++s) {
    crypto::NonceSource sender{0x5EED0000 + s * 7919};
    const std::string text = "hello";
    Bytes d(crypto::kHeaderBytes + text.size() + crypto::kTagBytes);
    crypto::seal_datagram(key_, {cfg_.cluster_id, crypto::PriorityClass::kGossip, kNow, cfg_.local.receiver}, sender,
                          reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), d.data(), d.size());
    first.push_back(frame(d));
    ASSERT_EQ(run(first.back()), Verdict::kAccepted) << s;
  }
  std::size_t replays_accepted = 0;
  for (const Bytes& f : first) replays_accepted += run(f) == Verdict::kAccepted;
  EXPECT_EQ(replays_accepted, 0u);
  EXPECT_EQ(run(fresh(1)), Verdict::kReplayTableFull);
  // 31 s later every window's newest datagram is stale: ageing frees them,
  // and the old datagrams are still refused (as stale).
  st_.now_s = kNow + 31;
  replay_.age(st_.now_s, 4 * replay_.capacity());  // slots and erases
  EXPECT_EQ(replay_.size(), 0u);
  for (const Bytes& f : first) EXPECT_EQ(run(f), Verdict::kStale);
  EXPECT_EQ(run(frame(sealed(kNow + 31, 2))), Verdict::kAccepted);
}

TEST_F(LadderGuardTest, BadMacNeitherChargesNorCreatesAWindow) {
  Bytes f = fresh(1);
  f[14 + 20 + 8 + crypto::kMacOffset] ^= 0xFF;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(run(f), Verdict::kBadMac);
  EXPECT_EQ(replay_.size(), 0u);
  EXPECT_EQ(rate_.size(), 0u);
}

TEST_F(LadderGuardTest, UnknownSourceIsRateLimitedAfterItsBurstAndRefills) {
  // Unknown budget: burst 6 at 10/s.
  for (std::uint32_t c = 0; c < 6; ++c) EXPECT_EQ(run(fresh(c)), Verdict::kAccepted) << c;
  const Bytes limited = fresh(6);
  EXPECT_EQ(run(limited), Verdict::kRateLimited);
  // Another source has its own bucket.
  EXPECT_EQ(run(fresh(7, 3)), Verdict::kAccepted);
  // A rate-limited packet was not committed: once the bucket refills, the
  // very same bytes are accepted, not called a replay.
  st_.now_ns += kSecond / 10;
  EXPECT_EQ(run(limited), Verdict::kAccepted);
  EXPECT_EQ(run(limited), Verdict::kReplay);
}

TEST_F(LadderGuardTest, ReplaysAreDroppedBeforeTheyCanSpendABucket) {
  const Bytes f = fresh(1);
  EXPECT_EQ(run(f), Verdict::kAccepted);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(run(f), Verdict::kReplay);
  // The source still has the rest of its burst (6 - 1).
  for (std::uint32_t c = 2; c < 7; ++c) EXPECT_EQ(run(fresh(c)), Verdict::kAccepted) << c;
  EXPECT_EQ(run(fresh(7)), Verdict::kRateLimited);
}

TEST_F(LadderGuardTest, KnownMembersGetTheLargerBudgetFromTheSnapshot) {
  DataplaneSnapshot snap;
  snap.known_members = {src_addr(2)};
  st_.snapshot = &snap;
  for (std::uint32_t c = 0; c < 20; ++c) EXPECT_EQ(run(fresh(c, 2)), Verdict::kAccepted) << c;
  EXPECT_EQ(run(fresh(20, 2)), Verdict::kRateLimited);
  // Not in the snapshot: the unknown budget.
  for (std::uint32_t c = 100; c < 106; ++c) EXPECT_EQ(run(fresh(c, 3)), Verdict::kAccepted) << c;
  EXPECT_EQ(run(fresh(106, 3)), Verdict::kRateLimited);
  // No snapshot (tests, or before the first): everyone unknown.
  st_.snapshot = nullptr;
  EXPECT_EQ(run(fresh(200, 4)), Verdict::kAccepted);
}

TEST_F(LadderGuardTest, StatelessLadderSkipsTheGuardSteps) {
  const Bytes f = frame(sealed(0, 1));
  for (int i = 0; i < 3; ++i) {
    Bytes copy = f;
    EXPECT_EQ(run_ladder(cfg_, copy.data(), static_cast<std::uint32_t>(copy.size())).verdict, Verdict::kAccepted);
  }
  // Without a clock the timestamp window is skipped, the tables still work.
  st_.have_clock = false;
  EXPECT_EQ(run(f), Verdict::kAccepted);
  EXPECT_EQ(run(f), Verdict::kReplay);
}

TEST_F(LadderGuardTest, UnkeyedResultPointsAtTheUdpPayload) {
  const Bytes text = {0x00, 0x85, 0xa4, 'N', 'o', 'd', 'e', ' ', 'p', 'l', 'a', 'i', 'n'};
  Bytes f = frame(text);
  const LadderResult r = run_ladder(cfg_, st_, f.data(), static_cast<std::uint32_t>(f.size()));
  ASSERT_EQ(r.verdict, Verdict::kUnkeyed);
  EXPECT_EQ(r.plaintext_offset, 42u);
  EXPECT_EQ(r.plaintext_len, text.size());
}

// Issue 51 item 3: the nonce epoch is sent in clear, so a key holder can
// seal a datagram under a live member's epoch with the highest counter.
// Under a counter-only window every later datagram of the member was a
// replay (for as long as the forger renewed it every 25 s). Now a datagram
// stamped after everything the window accepted rebases it: the forgery
// costs the member the datagrams stamped up to the forged timestamp, and
// nothing the window accepted can come back.
TEST_F(LadderGuardTest, AForgedTopCounterCostsAMemberOnlyUntilItsClockPassesTheForgery) {
  st_.rate = nullptr;                                 // many datagrams from one address here
  crypto::NonceSource forger{0x1122334455667788ULL};  // the member's epoch, read off the wire
  const auto forged = [&](std::uint32_t ts) {
    forger.set_counter_for_test(UINT32_MAX - 1);
    Bytes out(crypto::kHeaderBytes + 4 + crypto::kTagBytes);
    crypto::seal_datagram(key_, {cfg_.cluster_id, crypto::PriorityClass::kGossip, ts, cfg_.local.receiver}, forger,
                          reinterpret_cast<const std::uint8_t*>("lies"), 4, out.data(), out.size());
    return frame(out, 66);  // from the forger's own address
  };
  std::vector<Bytes> accepted;
  for (std::uint32_t c = 1; c <= 10; ++c) {
    accepted.push_back(fresh(c));
    ASSERT_EQ(run(accepted.back()), Verdict::kAccepted);
  }
  const Bytes lie = forged(kNow);
  ASSERT_EQ(run(lie), Verdict::kAccepted);  // a key holder's datagram: it opens
  // The member's datagrams stamped in the forged second are refused...
  EXPECT_EQ(run(fresh(11)), Verdict::kReplay);
  // ...and from the next second on it is heard again (before: kReplay for ever).
  st_.now_s = kNow + 1;
  const Bytes next = frame(sealed(kNow + 1, 12));
  EXPECT_EQ(run(next), Verdict::kAccepted);
  EXPECT_EQ(run(frame(sealed(kNow + 1, 13))), Verdict::kAccepted);
  EXPECT_EQ(replay_.rebased(), 1u);
  // Nothing accepted is accepted again: the member's old datagrams, the
  // forgery, the rebasing datagram.
  for (const Bytes& a : accepted) EXPECT_EQ(run(a), Verdict::kReplay);
  EXPECT_EQ(run(lie), Verdict::kReplay);
  EXPECT_EQ(run(next), Verdict::kReplay);

  // A forgery stamped as far ahead as the window allows costs at most
  // replay_window_s + 1 s of the member's datagrams.
  const Bytes far = forged(kNow + 1 + 30);
  ASSERT_EQ(run(far), Verdict::kAccepted);
  st_.now_s = kNow + 31;
  EXPECT_EQ(run(frame(sealed(kNow + 31, 14))), Verdict::kReplay);
  st_.now_s = kNow + 32;
  EXPECT_EQ(run(frame(sealed(kNow + 32, 15))), Verdict::kAccepted);
  EXPECT_EQ(run(far), Verdict::kReplay);
  for (const Bytes& a : accepted) EXPECT_EQ(run(a), Verdict::kStale);
}

// Issue 51 item 3: no source address opens more than its share of the
// replay table (limits.replay_senders_per_source), and a table full of
// windows from many (spoofed) sources still hears a restarted member or a
// joiner: the oldest of a few windows is evicted, and only senders stamped
// at or before it are refused from then on. Before, 4,096 fresh epochs kept
// every new sender out for 60 s.
TEST_F(LadderGuardTest, NoSourceFillsTheReplayTableAndNewSendersAreHeardWhenItIsFull) {
  st_.rate = nullptr;
  ReplayTable table(64, 3, 30, 4);
  st_.replay = &table;
  const auto from = [&](std::uint64_t epoch, std::uint32_t ts, std::uint8_t src) {
    crypto::NonceSource n{epoch};
    Bytes out(crypto::kHeaderBytes + 1 + crypto::kTagBytes);
    crypto::seal_datagram(key_, {cfg_.cluster_id, crypto::PriorityClass::kGossip, ts, cfg_.local.receiver}, n,
                          reinterpret_cast<const std::uint8_t*>("x"), 1, out.data(), out.size());
    return frame(out, src);
  };
  // One address: four windows, then refused.
  for (std::uint64_t e = 1; e <= 4; ++e) ASSERT_EQ(run(from(e, kNow - 10, 9)), Verdict::kAccepted);
  EXPECT_EQ(run(from(5, kNow - 10, 9)), Verdict::kReplayTableFull);
  EXPECT_EQ(table.windows_of(src_addr(9)), 4u);
  // Many addresses (as a spoofer has) fill the rest, each within its share.
  std::vector<Bytes> old;
  for (std::uint64_t e = 100; table.size() < table.capacity() && e < 1000; ++e) {
    Bytes f = from(e, kNow - 10, static_cast<std::uint8_t>(10 + e % 200));
    if (run(f) == Verdict::kAccepted) old.push_back(std::move(f));  // (two addresses may share a count)
  }
  ASSERT_EQ(table.size(), table.capacity());
  // A restarted member (a new epoch) is heard: before, drop_replay_table_full.
  EXPECT_EQ(run(from(0xAB, kNow, 2)), Verdict::kAccepted);
  EXPECT_EQ(table.evicted(), 1u);
  EXPECT_EQ(table.size(), table.capacity());
  // What the evicted window accepted is still refused: a sender without a
  // window stamped at or before it is refused now.
  std::size_t replays = 0;
  for (const Bytes& f : old) replays += run(f) == Verdict::kReplay;
  EXPECT_EQ(replays, old.size());
  // A flood of windows stamped now: a newcomer stamped now finds none older
  // to evict and waits at most a second.
  for (std::uint64_t e = 1000; e < 1000 + 64; ++e) (void)run(from(e, kNow, static_cast<std::uint8_t>(10 + e % 200)));
  EXPECT_EQ(run(from(0xCD, kNow, 3)), Verdict::kReplayTableFull);
  st_.now_s = kNow + 1;
  EXPECT_EQ(run(from(0xCD, kNow + 1, 3)), Verdict::kAccepted);
}

// Issue 51 item 8: a gateway started with its clock 300 s ahead heard
// nobody (every datagram stale, and sealed before its start watermark), and
// its workers never followed the clock once NTP stepped it back. With the
// follower they do at the next burst, and the start watermark moves with
// the step. And stepping the clock both ways reopens nothing: a window aged
// out while the clock was ahead leaves the table's floor behind it.
TEST_F(LadderGuardTest, WorkersFollowAWallClockSteppedEitherWay) {
  st_.rate = nullptr;
  WallClockFollower follower;
  constexpr std::uint64_t kHz = 1'000'000'000ULL;
  follower.start(kHz, 1000, std::uint64_t{kNow + 300} * kSecond);  // started 300 s ahead
  WorkerClock clock;
  clock.tsc_hz = follower.tsc_hz();
  clock.tsc0 = follower.tsc0();
  clock.unix_ns0 = follower.unix_ns0();
  clock.step = follower.step();
  cfg_.not_before_s = kNow + 300;  // the start watermark, from the wrong clock
  clock.read(1000, st_);
  EXPECT_EQ(st_.now_s, kNow + 300);
  EXPECT_EQ(run(frame(sealed(kNow, 1))), Verdict::kStale);  // a peer with the right time

  // NTP steps the clock back 1 s later: the worker follows at its next read.
  EXPECT_EQ(follower.poll(1000 + kHz, std::uint64_t{kNow + 1} * kSecond), -300 * static_cast<std::int64_t>(kSecond));
  clock.read(1000 + kHz, st_);
  EXPECT_EQ(st_.now_s, kNow + 1);
  EXPECT_EQ(st_.wall_step_s, -300);
  const Bytes d = frame(sealed(kNow + 1, 2));
  EXPECT_EQ(run(d), Verdict::kAccepted);
  // Still refused: what was sealed before the start instant (now kNow).
  EXPECT_EQ(run(frame(sealed(kNow - 1, 3))), Verdict::kBeforeStart);

  // Stepped 100 s ahead: the window of d ages out there...
  follower.poll(1000 + 2 * kHz, std::uint64_t{kNow + 102} * kSecond);
  clock.read(1000 + 2 * kHz, st_);
  EXPECT_EQ(st_.now_s, kNow + 102);
  replay_.age(st_.now_s, 1024);
  EXPECT_EQ(replay_.size(), 0u);
  // ...and back: d is in the timestamp window again, and its window is
  // gone, but the table's floor refuses it (before: accepted twice).
  follower.poll(1000 + 3 * kHz, std::uint64_t{kNow + 3} * kSecond);
  clock.read(1000 + 3 * kHz, st_);
  EXPECT_EQ(st_.now_s, kNow + 3);
  EXPECT_EQ(run(d), Verdict::kReplay);
  EXPECT_EQ(run(frame(sealed(kNow + 3, 4))), Verdict::kAccepted);  // the peer goes on being heard

  // A frozen clock (--freeze-clock) follows nothing.
  clock.frozen = true;
  clock.read(1000 + 4 * kHz, st_);
  EXPECT_EQ(st_.now_s, kNow + 300);
}

TEST(WorkerClock, TscToWallAndMonotonicTime) {
  WorkerClock c;
  LadderState st;
  c.read(123, st);
  EXPECT_FALSE(st.have_clock);  // no TSC rate: no clock
  c.tsc_hz = 2'000'000'000;
  c.tsc0 = 1000;
  c.unix_ns0 = std::uint64_t{kNow} * kSecond + 900'000'000;
  c.read(1000, st);
  EXPECT_TRUE(st.have_clock);
  EXPECT_EQ(st.now_ns, 0u);
  EXPECT_EQ(st.now_s, kNow);
  c.read(1000 + 200'000'000, st);  // 100 ms later
  EXPECT_EQ(st.now_ns, 100'000'000u);
  EXPECT_EQ(st.now_s, kNow + 1);
  c.read(1000 + 2'000'000'000ULL * 3600, st);
  EXPECT_EQ(st.now_ns, 3600 * kSecond);
  EXPECT_EQ(st.now_s, kNow + 3600);
  c.frozen = true;
  c.read(1000 + 2'000'000'000ULL * 3600, st);
  EXPECT_EQ(st.now_ns, 0u);
  EXPECT_EQ(st.now_s, kNow);
}

TEST(ScanBudget, UnconfiguredOrZeroRateNeverLimits) {
  ScanBudget b;
  EXPECT_EQ(b.take(500, 0), 500u);
  b.configure(0);
  EXPECT_EQ(b.take(1'000'000, 5), 1'000'000u);
}

TEST(ScanBudget, StartsFullOneTenthOfASecondDeepThenRefillsAtTheRate) {
  ScanBudget b;
  b.configure(1000);  // depth 100 scans
  const std::uint64_t t0 = 7 * kSecond;
  EXPECT_EQ(b.take(60, t0), 60u);
  EXPECT_EQ(b.take(60, t0), 40u);             // only the rest of the depth
  EXPECT_EQ(b.take(1, t0), 0u);               // empty, and time stands still
  EXPECT_EQ(b.take(10, t0 + 4'000'000), 4u);  // 4 ms at 1000/s: 4 scans
  EXPECT_EQ(b.take(10, t0 + 4'500'000), 0u);  // half a scan so far
  EXPECT_EQ(b.take(10, t0 + 5'000'000), 1u);
  // A long quiet spell refills to the depth, never beyond it.
  EXPECT_EQ(b.take(1000, t0 + 3600 * kSecond), 100u);
  // A clock that goes backwards refills nothing.
  EXPECT_EQ(b.take(1, t0), 0u);
}

TEST(ScanBudget, TinyRatesStillAllowOneScan) {
  ScanBudget b;
  b.configure(5);  // a tenth of a second is half a scan: the depth is one
  EXPECT_EQ(b.take(3, kSecond), 1u);
  EXPECT_EQ(b.take(3, kSecond), 0u);
  EXPECT_EQ(b.take(3, kSecond + 200'000'000), 1u);  // 0.2 s at 5/s
}

}  // namespace
}  // namespace gw::dp
