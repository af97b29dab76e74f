// The filter worker's bursts (control/filter/filter_worker.h) on two net_ring
// ports standing in for the NIC and the agent's port: what passes leaves on
// the other port as the same buffer, byte for byte; what is dropped goes
// back to its pool; a tx queue that takes nothing has the frames freed and
// counted (tx_full); chained frames are dropped and counted (multi_segment).
#include <gtest/gtest.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "control/filter/filter_worker.h"
#include "tests/unit/dataplane/test_eal.h"

namespace gw::cp::filter {
namespace {

namespace ml = dp::ml;

constexpr unsigned kPoolSize = 255;
constexpr unsigned kRingSize = 64;

struct RingPort {
  rte_ring* rx = nullptr;  // what the port receives (the test enqueues)
  rte_ring* tx = nullptr;  // what the port sent (the test dequeues)
  std::uint16_t id = 0;
};

RingPort make_port(const std::string& name, unsigned tx_size, rte_mempool* pool) {
  RingPort p;
  p.rx = rte_ring_create((name + "_rx").c_str(), kRingSize, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
  p.tx = rte_ring_create((name + "_tx").c_str(), tx_size, SOCKET_ID_ANY,
                         RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
  const int id = rte_eth_from_rings(name.c_str(), &p.rx, 1, &p.tx, 1, SOCKET_ID_ANY);
  EXPECT_GE(id, 0);
  p.id = static_cast<std::uint16_t>(id);
  rte_eth_conf conf{};
  EXPECT_EQ(rte_eth_dev_configure(p.id, 1, 1, &conf), 0);
  EXPECT_EQ(rte_eth_rx_queue_setup(p.id, 0, kRingSize, SOCKET_ID_ANY, nullptr, pool), 0);
  EXPECT_EQ(rte_eth_tx_queue_setup(p.id, 0, kRingSize, SOCKET_ID_ANY, nullptr), 0);
  EXPECT_EQ(rte_eth_dev_start(p.id), 0);
  return p;
}

class FilterWorkerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dp::test::start_test_eal("fwtest");
    pool_ = rte_pktmbuf_pool_create("fw_pool", kPoolSize, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    ASSERT_NE(pool_, nullptr);
    nic_ = make_port("fw_nic", kRingSize, pool_);
    agent_ = make_port("fw_agent", 2, pool_);  // its tx takes at most 2 frames until the test drains it
  }
  static void TearDownTestSuite() { dp::test::stop_test_eal(); }

  void SetUp() override {
    ASSERT_NE(pool_, nullptr);
    cfg_ = std::make_unique<ml::FilterConfig>();
    w_ = std::make_unique<FilterWorker>();
    w_->nic_port = nic_.id;
    w_->agent_port = agent_.id;
    w_->filter = std::make_unique<ml::FilterLcore>(*cfg_, 1);
  }
  void TearDown() override {
    for (rte_ring* r : {nic_.tx, agent_.tx}) {
      void* m = nullptr;
      while (rte_ring_dequeue(r, &m) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
    }
    EXPECT_EQ(rte_mempool_avail_count(pool_), kPoolSize) << "a buffer leaked";
  }

  static rte_mbuf* frame(const std::vector<std::uint8_t>& bytes) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    EXPECT_NE(m, nullptr);
    std::memcpy(rte_pktmbuf_append(m, static_cast<std::uint16_t>(bytes.size())), bytes.data(), bytes.size());
    return m;
  }
  // An ARP request: not gossip, passes both ways.
  static std::vector<std::uint8_t> arp() {
    std::vector<std::uint8_t> f(60, 0);
    std::memset(f.data(), 0xff, 6);
    f[6] = 0x02;
    f[12] = 0x08;
    f[13] = 0x06;
    f[14 + 1] = 1;     // htype Ethernet
    f[14 + 2] = 0x08;  // ptype IPv4
    f[14 + 4] = 6;
    f[14 + 5] = 4;
    f[14 + 7] = 1;  // request
    return f;
  }
  // IPv4 UDP to the gossip port 7946 with a payload no memberlist sends.
  static std::vector<std::uint8_t> gossip_garbage() {
    const std::uint16_t payload = 32;
    std::vector<std::uint8_t> f(14 + 20 + 8 + payload, 0x47);
    f[12] = 0x08;
    f[13] = 0x00;
    std::uint8_t* ip = f.data() + 14;
    ip[0] = 0x45;
    ip[1] = 0;
    ip[2] = 0;
    ip[3] = 20 + 8 + payload;
    ip[4] = ip[5] = ip[6] = ip[7] = 0;
    ip[8] = 64;
    ip[9] = 17;
    ip[10] = ip[11] = 0;
    const std::uint8_t src[4] = {10, 0, 0, 2};
    const std::uint8_t dst[4] = {10, 0, 0, 1};
    std::memcpy(ip + 12, src, 4);
    std::memcpy(ip + 16, dst, 4);
    std::uint8_t* udp = ip + 20;
    udp[0] = 7946 >> 8;
    udp[1] = 7946 & 0xff;
    udp[2] = 7946 >> 8;
    udp[3] = 7946 & 0xff;
    udp[4] = 0;
    udp[5] = 8 + payload;
    udp[6] = udp[7] = 0;  // no checksum
    return f;
  }
  static std::vector<rte_mbuf*> sent(const RingPort& p) {
    std::vector<rte_mbuf*> out;
    void* m = nullptr;
    while (rte_ring_dequeue(p.tx, &m) == 0) out.push_back(static_cast<rte_mbuf*>(m));
    return out;
  }

  static inline rte_mempool* pool_ = nullptr;
  static inline RingPort nic_;
  static inline RingPort agent_;
  std::unique_ptr<ml::FilterConfig> cfg_;
  std::unique_ptr<FilterWorker> w_;
};

TEST_F(FilterWorkerTest, InboundPassesTheSameBufferAndFreesTheDropped) {
  std::array<rte_mbuf*, 2> burst = {frame(arp()), frame(gossip_garbage())};
  rte_mbuf* const passed = burst[0];
  filter_inbound_burst(*w_, burst.data(), 2, nullptr, 0);
  const std::vector<rte_mbuf*> out = sent(agent_);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], passed);
  const std::vector<std::uint8_t> want = arp();
  EXPECT_EQ(out[0]->data_len, want.size());
  EXPECT_EQ(std::memcmp(rte_pktmbuf_mtod(out[0], const void*), want.data(), want.size()), 0);
  rte_pktmbuf_free(out[0]);
  EXPECT_TRUE(sent(nic_).empty());
  const ml::FilterCounters& c = w_->filter->counters();
  EXPECT_EQ(c.frames[static_cast<std::size_t>(ml::FrameVerdict::kPassIn)], 1u);
  EXPECT_EQ(c.frames[static_cast<std::size_t>(ml::FrameVerdict::kDropInspected)], 1u);
  EXPECT_EQ(w_->io.rx_from_network, 2u);
  EXPECT_EQ(w_->io.tx_to_agent, 1u);
  EXPECT_EQ(w_->io.tx_full_to_agent, 0u);
}

TEST_F(FilterWorkerTest, OutboundGoesToTheNic) {
  std::array<rte_mbuf*, 2> burst = {frame(arp()), frame(gossip_garbage())};
  filter_outbound_burst(*w_, burst.data(), 2, 0);
  const std::vector<rte_mbuf*> out = sent(nic_);
  EXPECT_EQ(out.size(), 2u);  // no egress budget: the agent's gossip goes out too
  for (rte_mbuf* m : out) rte_pktmbuf_free(m);
  EXPECT_TRUE(sent(agent_).empty());
  EXPECT_EQ(w_->filter->counters().frames[static_cast<std::size_t>(ml::FrameVerdict::kToNetwork)], 2u);
  EXPECT_EQ(w_->io.tx_to_network, 2u);
}

TEST_F(FilterWorkerTest, FullTxQueueFreesAndCounts) {
  // The agent port's tx ring holds 2: a burst of 5 passing frames leaves 3.
  std::array<rte_mbuf*, 5> burst;
  for (rte_mbuf*& m : burst) m = frame(arp());
  filter_inbound_burst(*w_, burst.data(), 5, nullptr, 0);
  const std::vector<rte_mbuf*> out = sent(agent_);
  EXPECT_EQ(out.size(), 2u);
  for (rte_mbuf* m : out) rte_pktmbuf_free(m);
  EXPECT_EQ(w_->io.tx_to_agent, 2u);
  EXPECT_EQ(w_->io.tx_full_to_agent, 3u);
  // TearDown: every buffer is back in the pool.
}

TEST_F(FilterWorkerTest, ChainedFramesAreDroppedAndCountedBothWays) {
  for (const Direction d : {Direction::kIn, Direction::kOut}) {
    rte_mbuf* head = frame(arp());
    rte_mbuf* tail = frame(arp());
    ASSERT_EQ(rte_pktmbuf_chain(head, tail), 0);
    std::array<rte_mbuf*, 1> burst = {head};
    if (d == Direction::kIn) {
      filter_inbound_burst(*w_, burst.data(), 1, nullptr, 0);
    } else {
      filter_outbound_burst(*w_, burst.data(), 1, 0);
    }
  }
  EXPECT_TRUE(sent(agent_).empty());
  EXPECT_TRUE(sent(nic_).empty());
  EXPECT_EQ(w_->io.multi_segment_in, 1u);
  EXPECT_EQ(w_->io.multi_segment_out, 1u);
  const ml::FilterCounters& c = w_->filter->counters();
  std::uint64_t decided = 0;
  for (std::uint64_t n : c.frames) decided += n;
  EXPECT_EQ(decided, 0u) << "a chained frame never reaches the filter";
}

}  // namespace
}  // namespace gw::cp::filter
