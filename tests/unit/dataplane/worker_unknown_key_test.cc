// A worker's burst with datagrams of our cluster under key ids our keyring
// lacks: each is counted as drop_unknown_key, and the lcore's sample names
// the key ids and sources for the control lcore (dataplane/api/unknown_keys.h),
// at most kSlots distinct ones until it is taken.
#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "crypto/datagram.h"
#include "crypto/keys.h"
#include "dataplane/worker.h"
#include "tests/unit/dataplane/test_eal.h"

namespace gw::dp {
namespace {

constexpr std::uint16_t kPort = 7946;

crypto::KeyBytes key_bytes(std::uint8_t fill) {
  crypto::KeyBytes k{};
  k.fill(fill);
  return k;
}

class WorkerUnknownKey : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(crypto::init());
    test::start_test_eal("wuktest");
    pool_ = rte_pktmbuf_pool_create("wuk_pool", 255, 32, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    ASSERT_NE(pool_, nullptr);
  }
  static void TearDownTestSuite() { test::stop_test_eal(); }

  void SetUp() override {
    w_ = std::make_unique<WorkerContext>();
    ASSERT_TRUE(parse_endpoint("10.0.0.1", kPort, &w_->ladder.local));
    w_->ladder.cluster_id = crypto::derive_cluster_id("demo");
    w_->keys.add(crypto::Key(key_bytes(1), crypto::Suite::kChaCha20Poly1305), true);
    w_->ladder.keys = &w_->keys;
  }

  // A datagram for us from 10.0.0.<host>:<port>, sealed with key `fill`.
  rte_mbuf* datagram(std::uint8_t fill, std::uint8_t host, std::uint16_t port) {
    const crypto::Key key(key_bytes(fill), crypto::Suite::kChaCha20Poly1305);
    const char text[] = "gossip";
    std::array<std::uint8_t, crypto::kHeaderBytes + sizeof text + crypto::kTagBytes> d{};
    const std::size_t n = crypto::seal_datagram(
        key, {w_->ladder.cluster_id, crypto::PriorityClass::kGossip, 1700000000, w_->ladder.local.receiver}, nonces_,
        reinterpret_cast<const std::uint8_t*>(text), sizeof text, d.data(), d.size());
    EXPECT_EQ(n, d.size());
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    EXPECT_NE(m, nullptr);
    const auto len = static_cast<std::uint16_t>(14 + 20 + 8 + n);
    auto* f = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(m, len));
    std::memset(f, 0, len);
    f[12] = 0x08;  // IPv4
    f[14] = 0x45;
    f[16] = static_cast<std::uint8_t>((20 + 8 + n) >> 8);
    f[17] = static_cast<std::uint8_t>((20 + 8 + n) & 0xFF);
    f[22] = 64;
    f[23] = 17;  // UDP
    const std::uint8_t src[4] = {10, 0, 0, host};
    const std::uint8_t dst[4] = {10, 0, 0, 1};
    std::memcpy(f + 26, src, 4);
    std::memcpy(f + 30, dst, 4);
    f[34] = static_cast<std::uint8_t>(port >> 8);
    f[35] = static_cast<std::uint8_t>(port & 0xFF);
    f[36] = kPort >> 8;
    f[37] = kPort & 0xFF;
    f[38] = static_cast<std::uint8_t>((8 + n) >> 8);
    f[39] = static_cast<std::uint8_t>((8 + n) & 0xFF);
    std::memcpy(f + 42, d.data(), n);
    return m;
  }

  void burst(std::vector<rte_mbuf*> v) { process_burst(*w_, v.data(), static_cast<std::uint16_t>(v.size())); }

  static inline rte_mempool* pool_ = nullptr;
  std::unique_ptr<WorkerContext> w_;
  crypto::NonceSource nonces_{11};
};

TEST_F(WorkerUnknownKey, KeyIdsAndSourcesOfUnknownKeyDatagramsAreSampled) {
  const std::uint32_t k2 = crypto::derive_key_id(key_bytes(2));
  const std::uint32_t k3 = crypto::derive_key_id(key_bytes(3));
  burst({datagram(2, 7, 7946), datagram(2, 7, 7946), datagram(3, 8, 8000)});
  EXPECT_EQ(w_->counters.get(Verdict::kUnknownKey), 3u);
  std::array<UnknownKeySighting, UnknownKeySample::kSlots> got;
  ASSERT_EQ(w_->unknown_keys.take(got), 2u);  // one entry per distinct (key id, source)
  EXPECT_EQ(got[0].key_id, k2);
  EXPECT_EQ(got[0].suite, static_cast<std::uint8_t>(crypto::Suite::kChaCha20Poly1305));
  EXPECT_EQ(got[0].from.ip_len, 4u);
  EXPECT_EQ(got[0].from.ip[3], 7u);
  EXPECT_EQ(got[0].from.port, 7946u);
  EXPECT_EQ(got[1].key_id, k3);
  EXPECT_EQ(got[1].from.ip[3], 8u);
  EXPECT_EQ(got[1].from.port, 8000u);
  EXPECT_EQ(w_->unknown_keys.take(got), 0u);
}

TEST_F(WorkerUnknownKey, AFloodFillsTheSampleOnceAndIsStillCountedInFull) {
  std::vector<rte_mbuf*> v;
  for (std::uint8_t h = 10; h < 110; ++h) v.push_back(datagram(2, h, 7946));
  burst(v);
  EXPECT_EQ(w_->counters.get(Verdict::kUnknownKey), 100u);
  std::array<UnknownKeySighting, UnknownKeySample::kSlots> got;
  ASSERT_EQ(w_->unknown_keys.take(got), UnknownKeySample::kSlots);
  EXPECT_EQ(got[0].from.ip[3], 10u);  // the first ones heard
  burst({datagram(2, 200, 7946)});
  ASSERT_EQ(w_->unknown_keys.take(got), 1u);  // a new sample after the take
  EXPECT_EQ(got[0].from.ip[3], 200u);
}

}  // namespace
}  // namespace gw::dp
