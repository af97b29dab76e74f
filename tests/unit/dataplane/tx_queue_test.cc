// dataplane/tx_path.h, the control lcore's side: TxQueue copies a sealed
// datagram into a buffer of the transmit pool with its endpoint and queues it
// for worker 0, or counts why not and keeps nothing. (drain_tx, the worker's
// side, needs a port: the integration and pcap tests send through it.)
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <unistd.h>

#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

#include "dataplane/mbuf_meta.h"
#include "dataplane/tx_path.h"
#include "tests/unit/dataplane/test_eal.h"

namespace gw::dp {
namespace {

constexpr unsigned kPoolSize = 15;
constexpr unsigned kRingSize = 4;

class TxQueueTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::start_test_eal("txqtest"); }
  static void TearDownTestSuite() { test::stop_test_eal(); }

  void SetUp() override {
    static int n = 0;
    const std::string tag = std::to_string(n++);
    // No per-lcore cache: the pool's count is exact after every free.
    pool_ = rte_pktmbuf_pool_create(("txq_pool" + tag).c_str(), kPoolSize, 0, kMbufPrivSize, RTE_MBUF_DEFAULT_BUF_SIZE,
                                    SOCKET_ID_ANY);
    ring_ = rte_ring_create(("txq_ring" + tag).c_str(), kRingSize, SOCKET_ID_ANY,
                            RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
    ASSERT_NE(pool_, nullptr);
    ASSERT_NE(ring_, nullptr);
  }
  void TearDown() override {
    void* obj = nullptr;
    while (rte_ring_sc_dequeue(ring_, &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
    rte_ring_free(ring_);
    rte_mempool_free(pool_);
  }

  static Endpoint v4(std::uint16_t port) {
    Endpoint e;
    e.ip_len = 4;
    e.ip[0] = 10;
    e.ip[3] = 2;
    e.port = port;
    return e;
  }

  rte_mempool* pool_ = nullptr;
  rte_ring* ring_ = nullptr;
};

TEST_F(TxQueueTest, ADatagramIsCopiedWithItsEndpointAndRoomForTheHeaders) {
  TxQueue q(pool_, ring_, false);
  const std::vector<std::uint8_t> dgram = {1, 2, 3, 4, 5, 6, 7};
  ASSERT_TRUE(q.send(v4(7946), crypto::PriorityClass::kProbe, dgram.data(), dgram.size()));
  EXPECT_EQ(q.counters().queued, 1u);
  void* obj = nullptr;
  ASSERT_EQ(rte_ring_sc_dequeue(ring_, &obj), 0);
  rte_mbuf* m = static_cast<rte_mbuf*>(obj);
  ASSERT_EQ(m->data_len, dgram.size());
  EXPECT_EQ(std::vector<std::uint8_t>(rte_pktmbuf_mtod(m, std::uint8_t*), rte_pktmbuf_mtod(m, std::uint8_t*) + 7),
            dgram);
  const Endpoint to = mbuf_meta(m)->endpoint;
  EXPECT_EQ(to.ip, v4(7946).ip);
  EXPECT_EQ(to.ip_len, 4);
  EXPECT_EQ(to.port, 7946);
  EXPECT_GE(rte_pktmbuf_headroom(m), kTxHeadroom);
  rte_pktmbuf_free(m);
}

TEST_F(TxQueueTest, AnEndpointOfTheOtherFamilyOrPortZeroIsRefusedAndCounted) {
  TxQueue q(pool_, ring_, false);
  const std::uint8_t d[8] = {};
  Endpoint v6 = v4(7946);
  v6.ip_len = 16;
  EXPECT_FALSE(q.send(v6, crypto::PriorityClass::kGossip, d, sizeof d));
  EXPECT_FALSE(q.send(v4(0), crypto::PriorityClass::kGossip, d, sizeof d));
  EXPECT_EQ(q.counters().drop_bad_endpoint, 2u);
  EXPECT_EQ(rte_ring_count(ring_), 0u);
  EXPECT_EQ(rte_mempool_avail_count(pool_), kPoolSize);
}

TEST_F(TxQueueTest, WhatCannotFitOneFrameIsRefusedAndCounted) {
  TxQueue v4q(pool_, ring_, false);
  TxQueue v6q(pool_, ring_, true);
  const std::vector<std::uint8_t> big(1514 - 14 - 20 - 8 + 1, 0xAB);
  EXPECT_FALSE(v4q.send(v4(7946), crypto::PriorityClass::kBulk, big.data(), big.size()));
  EXPECT_TRUE(v4q.send(v4(7946), crypto::PriorityClass::kBulk, big.data(), big.size() - 1));  // exactly 1514
  Endpoint six = v4(7946);
  six.ip_len = 16;
  EXPECT_FALSE(v6q.send(six, crypto::PriorityClass::kBulk, big.data(), big.size() - 1));  // IPv6's header is longer
  EXPECT_EQ(v4q.counters().drop_too_large, 1u);
  EXPECT_EQ(v6q.counters().drop_too_large, 1u);
  EXPECT_EQ(rte_mempool_avail_count(pool_), kPoolSize - 1);  // only the queued one holds a buffer
}

TEST_F(TxQueueTest, AFullRingOrAnEmptyPoolDropsTheDatagramAndLeaksNoBuffer) {
  TxQueue q(pool_, ring_, false);
  const std::uint8_t d[16] = {};
  for (unsigned i = 0; i < kRingSize; ++i) ASSERT_TRUE(q.send(v4(7946), crypto::PriorityClass::kUrgent, d, sizeof d));
  EXPECT_FALSE(q.send(v4(7946), crypto::PriorityClass::kUrgent, d, sizeof d));
  EXPECT_EQ(q.counters().drop_ring_full, 1u);
  EXPECT_EQ(rte_mempool_avail_count(pool_), kPoolSize - kRingSize);  // the refused one went back

  // Hold every other buffer: the next send finds none.
  std::vector<rte_mbuf*> held;
  while (rte_mbuf* m = rte_pktmbuf_alloc(pool_)) held.push_back(m);
  void* obj = nullptr;
  ASSERT_EQ(rte_ring_sc_dequeue(ring_, &obj), 0);  // room in the ring, not in the pool
  rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
  held.push_back(rte_pktmbuf_alloc(pool_));
  EXPECT_FALSE(q.send(v4(7946), crypto::PriorityClass::kUrgent, d, sizeof d));
  EXPECT_EQ(q.counters().drop_no_buffer, 1u);
  for (rte_mbuf* m : held) rte_pktmbuf_free(m);
  EXPECT_EQ(q.counters().queued, kRingSize);
}

}  // namespace
}  // namespace gw::dp
