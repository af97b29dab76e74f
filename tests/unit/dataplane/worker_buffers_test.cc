// process_burst returns every buffer of a burst to the pool it came from. The
// common burst (single direct segments from one pool, nobody else holding a
// reference) goes back in one bulk put; these tests give it the bursts that
// must not: a buffer someone still references, an indirect clone, a chain,
// and a buffer from a second pool. Pool counts show where each buffer went.
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/worker.h"
#include "tests/unit/dataplane/test_eal.h"

namespace gw::dp {
namespace {

constexpr unsigned kPoolSize = 127;
constexpr unsigned kPoolCache = 32;  // buffers put back into the lcore cache still count as available
constexpr std::uint16_t kPort = 7946;

class WorkerBuffers : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    test::start_test_eal("wbtest");
    pool_a_ = rte_pktmbuf_pool_create("wb_pool_a", kPoolSize, kPoolCache, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    pool_b_ = rte_pktmbuf_pool_create("wb_pool_b", kPoolSize, kPoolCache, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    ASSERT_NE(pool_a_, nullptr);
    ASSERT_NE(pool_b_, nullptr);
  }

  static void TearDownTestSuite() { test::stop_test_eal(); }

  void SetUp() override {
    ASSERT_NE(pool_a_, nullptr);
    w_ = std::make_unique<WorkerContext>();
    ASSERT_TRUE(parse_endpoint("10.0.0.1", kPort, &w_->ladder.local));
  }

  // A UDP datagram to our address and port without the gossipgw magic:
  // drop_unkeyed, the flood case whose bursts take the bulk put.
  static rte_mbuf* unkeyed(rte_mempool* pool) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool);
    if (m == nullptr) return nullptr;
    constexpr std::uint16_t kPayload = 64;
    constexpr std::uint16_t kLen = 14 + 20 + 8 + kPayload;
    auto* f = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(m, kLen));
    std::memset(f, 0, kLen);
    f[12] = 0x08;  // IPv4
    f[14] = 0x45;
    f[16] = 0;
    f[17] = 20 + 8 + kPayload;
    f[22] = 64;
    f[23] = 17;  // UDP
    const std::uint8_t src[4] = {10, 0, 0, 9};
    const std::uint8_t dst[4] = {10, 0, 0, 1};
    std::memcpy(f + 26, src, 4);
    std::memcpy(f + 30, dst, 4);
    f[34] = 0x1F;
    f[35] = 0x40;  // source port 8000
    f[36] = kPort >> 8;
    f[37] = kPort & 0xFF;
    f[39] = 8 + kPayload;
    std::memset(f + 42, 'x', kPayload);
    return m;
  }

  std::vector<rte_mbuf*> unkeyed_burst(std::size_t n, rte_mempool* pool) {
    std::vector<rte_mbuf*> v;
    for (std::size_t i = 0; i < n; ++i) v.push_back(unkeyed(pool));
    for (rte_mbuf* m : v) EXPECT_NE(m, nullptr);
    return v;
  }

  std::uint64_t count(Verdict v) const { return w_->counters.get(v); }

  static unsigned avail(rte_mempool* p) { return rte_mempool_avail_count(p); }

  static inline rte_mempool* pool_a_ = nullptr;
  static inline rte_mempool* pool_b_ = nullptr;
  std::unique_ptr<WorkerContext> w_;
};

TEST_F(WorkerBuffers, APlainBurstGoesBackWhole) {
  auto burst = unkeyed_burst(32, pool_a_);
  EXPECT_EQ(avail(pool_a_), kPoolSize - 32);
  process_burst(*w_, burst.data(), static_cast<std::uint16_t>(burst.size()));
  EXPECT_EQ(count(Verdict::kUnkeyed), 32u);
  EXPECT_EQ(w_->counters.rx_total, 32u);
  EXPECT_EQ(avail(pool_a_), kPoolSize);
}

TEST_F(WorkerBuffers, ABufferStillReferencedElsewhereIsOnlyReleased) {
  auto burst = unkeyed_burst(8, pool_a_);
  rte_mbuf* held = burst[3];
  rte_mbuf_refcnt_update(held, 1);  // another owner, e.g. a capture
  process_burst(*w_, burst.data(), static_cast<std::uint16_t>(burst.size()));
  EXPECT_EQ(count(Verdict::kUnkeyed), 8u);
  EXPECT_EQ(rte_mbuf_refcnt_read(held), 1u);
  EXPECT_EQ(avail(pool_a_), kPoolSize - 1);  // the held one stays out
  rte_pktmbuf_free(held);
  EXPECT_EQ(avail(pool_a_), kPoolSize);
}

TEST_F(WorkerBuffers, AnIndirectCloneIsDetachedNotPooledAsIs) {
  auto burst = unkeyed_burst(8, pool_a_);
  rte_mbuf* original = burst[5];
  rte_mbuf* clone = rte_pktmbuf_clone(original, pool_b_);  // indirect, from pool B
  ASSERT_NE(clone, nullptr);
  burst[5] = clone;
  EXPECT_EQ(rte_mbuf_refcnt_read(original), 2u);
  process_burst(*w_, burst.data(), static_cast<std::uint16_t>(burst.size()));
  EXPECT_EQ(count(Verdict::kUnkeyed), 8u);  // the clone reads the original's bytes
  EXPECT_EQ(rte_mbuf_refcnt_read(original), 1u);
  EXPECT_EQ(avail(pool_b_), kPoolSize);
  EXPECT_EQ(avail(pool_a_), kPoolSize - 1);
  rte_pktmbuf_free(original);
  EXPECT_EQ(avail(pool_a_), kPoolSize);
}

TEST_F(WorkerBuffers, EverySegmentOfAChainGoesBack) {
  auto burst = unkeyed_burst(4, pool_a_);
  rte_mbuf* tail = unkeyed(pool_a_);
  ASSERT_NE(tail, nullptr);
  ASSERT_EQ(rte_pktmbuf_chain(burst[2], tail), 0);
  EXPECT_EQ(avail(pool_a_), kPoolSize - 5);
  process_burst(*w_, burst.data(), static_cast<std::uint16_t>(burst.size()));
  EXPECT_EQ(count(Verdict::kMalformed), 1u);  // gossip datagrams fit one segment
  EXPECT_EQ(count(Verdict::kUnkeyed), 3u);
  EXPECT_EQ(avail(pool_a_), kPoolSize);
}

TEST_F(WorkerBuffers, EachBufferGoesBackToItsOwnPool) {
  auto burst = unkeyed_burst(6, pool_a_);
  rte_mbuf* other = unkeyed(pool_b_);
  ASSERT_NE(other, nullptr);
  burst.insert(burst.begin() + 2, other);
  EXPECT_EQ(avail(pool_b_), kPoolSize - 1);
  process_burst(*w_, burst.data(), static_cast<std::uint16_t>(burst.size()));
  EXPECT_EQ(count(Verdict::kUnkeyed), 7u);
  EXPECT_EQ(avail(pool_a_), kPoolSize);
  EXPECT_EQ(avail(pool_b_), kPoolSize);
}

TEST_F(WorkerBuffers, AnEmptyBurstTouchesNothing) {
  std::array<rte_mbuf*, 1> none{nullptr};
  process_burst(*w_, none.data(), 0);
  EXPECT_EQ(w_->counters.rx_total, 0u);
  EXPECT_EQ(avail(pool_a_), kPoolSize);
}

}  // namespace
}  // namespace gw::dp
