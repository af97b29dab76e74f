// The worker-to-control hand-off ring: copies, visibility on publish, full
// and oversized pushes, in-order release, and one producer and one consumer
// thread running against each other.
#include "dataplane/payload_ring.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gw::dp {
namespace {

Endpoint endpoint(std::uint8_t last, std::uint16_t port) {
  Endpoint e;
  e.ip = {10, 0, 0, last};
  e.ip_len = 4;
  e.port = port;
  return e;
}

std::vector<std::uint8_t> bytes(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + i * 31);
  return v;
}

// A payload as push() reads it: kReadPast readable bytes after the end
// (0xEE, which must not show up within the payload).
struct Padded {
  explicit Padded(const std::vector<std::uint8_t>& v) : len(static_cast<std::uint32_t>(v.size())), buf(v) {
    buf.resize(v.size() + PayloadRing::kReadPast, 0xEE);
  }
  const std::uint8_t* data() const { return buf.data(); }
  std::uint32_t len;
  std::vector<std::uint8_t> buf;
};

TEST(PayloadRing, CopiesPayloadAndSenderAndShowsThemOnlyAfterPublish) {
  PayloadRing r(8, 100);
  Padded p(bytes(100, 7));
  ASSERT_TRUE(r.push(p.data(), 100, endpoint(9, 7946), 42));
  std::array<Handoff, 4> out;
  EXPECT_EQ(r.pop(out.data(), out.size()), 0u);  // not published yet
  EXPECT_EQ(r.depth(), 0u);
  r.publish();
  p.buf.assign(p.buf.size(), 0);  // the ring holds a copy, not the caller's buffer
  EXPECT_EQ(r.depth(), 1u);
  ASSERT_EQ(r.pop(out.data(), out.size()), 1u);
  EXPECT_EQ(out[0].len, 100u);
  EXPECT_EQ(std::vector<std::uint8_t>(out[0].data, out[0].data + 100), bytes(100, 7));
  EXPECT_EQ(out[0].from.ip, endpoint(9, 7946).ip);
  EXPECT_EQ(out[0].from.ip_len, 4);
  EXPECT_EQ(out[0].from.port, 7946);
  EXPECT_EQ(out[0].key_id, 42u);
  EXPECT_EQ(out[0].token, &r);
  EXPECT_EQ(r.depth(), 1u);  // popped but not released
  r.release(1);
  EXPECT_EQ(r.depth(), 0u);
}

TEST(PayloadRing, RefusesWhenFullUntilTheOldestIsReleased) {
  PayloadRing r(4, 16);
  const Padded p(bytes(16, 1));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(r.push(p.data(), 16, endpoint(1, 1), static_cast<std::uint32_t>(i)));
  EXPECT_FALSE(r.push(p.data(), 16, endpoint(1, 1), 99));
  r.publish();
  std::array<Handoff, 8> out;
  ASSERT_EQ(r.pop(out.data(), 2), 2u);
  EXPECT_FALSE(r.push(p.data(), 16, endpoint(1, 1), 99));  // popped slots are still in use
  r.release(1);
  EXPECT_TRUE(r.push(p.data(), 16, endpoint(1, 1), 4));
  EXPECT_FALSE(r.push(p.data(), 16, endpoint(1, 1), 99));
  r.publish();
  // What is left comes out in order: 2, 3, then 4 in the slot 0 freed.
  ASSERT_EQ(r.pop(out.data(), out.size()), 3u);
  EXPECT_EQ(out[0].key_id, 2u);
  EXPECT_EQ(out[1].key_id, 3u);
  EXPECT_EQ(out[2].key_id, 4u);
}

TEST(PayloadRing, TakesPayloadsUpToTheSlotSizeAndRefusesLongerOnes) {
  PayloadRing r(4, 64);
  const Padded p(bytes(65, 3));
  EXPECT_FALSE(r.push(p.data(), 65, endpoint(1, 1), 1));
  EXPECT_TRUE(r.push(p.data(), 64, endpoint(1, 1), 2));
  EXPECT_TRUE(r.push(p.data(), 0, endpoint(1, 1), 3));
  r.publish();
  std::array<Handoff, 4> out;
  ASSERT_EQ(r.pop(out.data(), out.size()), 2u);
  EXPECT_EQ(out[0].len, 64u);
  EXPECT_EQ(out[1].len, 0u);
  EXPECT_EQ(out[1].key_id, 3u);
}

TEST(PayloadRing, ManyLapsKeepOrderAndContent) {
  PayloadRing r(4, 40);
  std::array<Handoff, 3> out;
  std::uint32_t next_in = 0;
  std::uint32_t next_out = 0;
  for (int lap = 0; lap < 1000; ++lap) {
    const std::uint32_t k = 1 + static_cast<std::uint32_t>(lap) % 3;  // 1..3 per round
    for (std::uint32_t i = 0; i < k; ++i, ++next_in) {
      const Padded p(bytes(next_in % 41, static_cast<std::uint8_t>(next_in)));
      ASSERT_TRUE(r.push(p.data(), p.len, endpoint(2, 2), next_in));
    }
    r.publish();
    const std::size_t got = r.pop(out.data(), out.size());
    ASSERT_EQ(got, k);
    for (std::size_t i = 0; i < got; ++i, ++next_out) {
      ASSERT_EQ(out[i].key_id, next_out);
      const auto want = bytes(next_out % 41, static_cast<std::uint8_t>(next_out));
      ASSERT_EQ(std::vector<std::uint8_t>(out[i].data, out[i].data + out[i].len), want);
    }
    r.release(got);
  }
  EXPECT_EQ(r.depth(), 0u);
}

// Records take as many cache lines as their payload needs and wrap behind a
// skip marker; whatever the mix of sizes, the ring takes exactly capacity()
// payloads before it is full, and each comes back intact.
TEST(PayloadRing, MixedSizesFillByCountAndWrapIntact) {
  constexpr std::uint32_t kCap = 8;
  constexpr std::uint32_t kMax = 300;  // 6 lines with the header
  PayloadRing r(kCap, kMax);
  std::mt19937 rng(20261130);
  std::array<Handoff, kCap> out;
  std::uint32_t next_in = 0;
  std::uint32_t next_out = 0;
  std::deque<std::uint32_t> lens;  // pushed, not yet popped
  for (int round = 0; round < 2000; ++round) {
    // Leave 0..kCap-1 payloads in the ring between rounds, so records
    // start at every line offset.
    const std::uint32_t keep = static_cast<std::uint32_t>(rng() % kCap);
    std::uint32_t live = next_in - next_out;
    while (true) {
      const std::uint32_t len = rng() % 4 == 0 ? kMax : static_cast<std::uint32_t>(rng() % (kMax + 1));
      const Padded p(bytes(len, static_cast<std::uint8_t>(next_in)));
      if (!r.push(p.data(), p.len, endpoint(4, 4), next_in)) break;
      lens.push_back(len);
      ++next_in;
      ++live;
    }
    ASSERT_EQ(live, kCap);  // full by count, never by space
    r.publish();
    const std::size_t got = r.pop(out.data(), kCap - keep);
    ASSERT_EQ(got, kCap - keep);
    for (std::size_t i = 0; i < got; ++i, ++next_out) {
      ASSERT_EQ(out[i].key_id, next_out);
      ASSERT_EQ(out[i].len, lens.front());
      lens.pop_front();
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(out[i].data) % 16, 0u);
      const Padded want(bytes(out[i].len, static_cast<std::uint8_t>(next_out)));
      ASSERT_EQ(std::vector<std::uint8_t>(out[i].data, out[i].data + out[i].len),
                std::vector<std::uint8_t>(want.buf.begin(), want.buf.begin() + want.len));
    }
    r.release(got);
  }
  EXPECT_EQ(r.depth(), next_in - next_out);
}

TEST(PayloadRing, RejectsBadSizes) {
  EXPECT_THROW(PayloadRing(0, 10), std::invalid_argument);
  EXPECT_THROW(PayloadRing(6, 10), std::invalid_argument);
  EXPECT_THROW(PayloadRing(PayloadRing::kMaxCapacity * 2, 10), std::invalid_argument);
  EXPECT_THROW(PayloadRing(4, 0), std::invalid_argument);
  EXPECT_THROW(PayloadRing(4, PayloadRing::kMaxPayload + 1), std::invalid_argument);
  PayloadRing ok(64, 1384);
  EXPECT_EQ(ok.capacity(), 64u);
  EXPECT_EQ(ok.max_payload(), 1384u);
  // 32 + 1384 rounded up to 16-byte pieces, in whole cache lines (23), for
  // 64 records plus two.
  EXPECT_EQ(ok.bytes(), 66u * 23u * 64u);
  EXPECT_EQ(PayloadRing::bytes_for(64, 1384), ok.bytes());
}

// One producer and one consumer thread: every payload arrives once, in
// order, with its own bytes, across many wraps of a small ring.
TEST(PayloadRing, ProducerAndConsumerThreadsAgree) {
  constexpr std::uint32_t kCount = 200000;
  PayloadRing r(64, 48);
  std::thread producer([&r] {
    std::array<std::uint8_t, 48 + PayloadRing::kReadPast> p{};
    for (std::uint32_t i = 0; i < kCount;) {
      const std::uint32_t len = i % 49;
      for (std::uint32_t b = 0; b < len; ++b) p[b] = static_cast<std::uint8_t>(i + b);
      if (r.push(p.data(), len, endpoint(3, static_cast<std::uint16_t>(i)), i)) {
        ++i;
        if (i % 7 == 0) r.publish();  // publish in uneven batches
      } else {
        r.publish();
        std::this_thread::yield();
      }
    }
    r.publish();
  });
  std::array<Handoff, 16> out;
  std::uint32_t expect = 0;
  std::uint32_t bad = 0;
  while (expect < kCount) {
    const std::size_t got = r.pop(out.data(), out.size());
    for (std::size_t i = 0; i < got; ++i, ++expect) {
      bool ok = out[i].key_id == expect && out[i].len == expect % 49 &&
                out[i].from.port == static_cast<std::uint16_t>(expect);
      for (std::uint32_t b = 0; ok && b < out[i].len; ++b) ok = out[i].data[b] == static_cast<std::uint8_t>(expect + b);
      if (!ok) ++bad;
    }
    if (got != 0) r.release(got);
    if (got == 0) std::this_thread::yield();
  }
  producer.join();
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(expect, kCount);
  EXPECT_EQ(r.depth(), 0u);
}

}  // namespace
}  // namespace gw::dp
