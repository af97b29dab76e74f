#include "dataplane/port.h"

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <spdlog/spdlog.h>

#include <algorithm>

#include "config/config.h"
#include "dataplane/mbuf_meta.h"

namespace gw::dp {

// config::kMaxPayloadBytes is what one receive mbuf of this pool holds
// (a frame never spans segments: multi-segment frames are malformed).
static_assert(RTE_MBUF_DEFAULT_DATAROOM - (14 + 4 + 40 + 8) - 48 >= config::kMaxPayloadBytes,
              "limits.max_payload_bytes must fit one mbuf");
namespace {

std::string dpdk_error(int rc) { return rte_strerror(rc < 0 ? -rc : rc); }

}  // namespace

PortState start_port(const PortPlan& plan) {
  const std::uint16_t available = rte_eth_dev_count_avail();
  if (available == 0) {
    throw SetupError(
        "no DPDK port: give EAL a device, e.g. --vdev=net_pcap0,rx_pcap=in.pcap or a NIC bound to vfio-pci");
  }
  if (!rte_eth_dev_is_valid_port(plan.port_id)) {
    throw SetupError("dataplane.port_id: port " + std::to_string(plan.port_id) + " does not exist (" +
                     std::to_string(available) + " port(s) available)");
  }

  rte_eth_dev_info info{};
  int rc = rte_eth_dev_info_get(plan.port_id, &info);
  if (rc != 0) throw SetupError("port " + std::to_string(plan.port_id) + ": cannot read device info: " + dpdk_error(rc));
  if (plan.queues > info.max_rx_queues || plan.queues > info.max_tx_queues) {
    throw SetupError("lcores.workers: " + std::to_string(plan.queues) + " workers need as many queues, but " +
                     info.driver_name + " offers " + std::to_string(info.max_rx_queues) + " rx / " +
                     std::to_string(info.max_tx_queues) + " tx queues");
  }

  PortState state;
  state.port_id = plan.port_id;
  state.driver = info.driver_name;

  rte_eth_conf conf{};
  // Spread sources over workers by the UDP 4-tuple where the port can.
  const std::uint64_t rss_hf = info.flow_type_rss_offloads & (RTE_ETH_RSS_NONFRAG_IPV4_UDP |
                                                                RTE_ETH_RSS_NONFRAG_IPV6_UDP |
                                                                RTE_ETH_RSS_IP);
  if (plan.queues > 1 && rss_hf != 0) {
    // UDP hashes the 4-tuple, so one source's packets stay on one worker
    // (its token bucket and replay windows live there); RTE_ETH_RSS_IP keeps
    // fragments (dropped as malformed anyway) on a queue by address.
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_key = nullptr;  // the driver's default key
    conf.rx_adv_conf.rss_conf.rss_hf = rss_hf;
    state.rss = true;
    spdlog::info("port {} ({}): RSS over {} rx queues, hash fields {:#x} (udp4 {}, udp6 {})", plan.port_id,
                 info.driver_name, plan.queues, rss_hf, (rss_hf & RTE_ETH_RSS_NONFRAG_IPV4_UDP) != 0,
                 (rss_hf & RTE_ETH_RSS_NONFRAG_IPV6_UDP) != 0);
  } else if (plan.queues > 1) {
    // Virtual devices (net_pcap, net_ring, net_memif) hash nothing: each rx
    // queue gets what its own source feeds it, e.g. one rx_pcap= per queue.
    spdlog::warn("port {} ({}): no RSS (driver offers hash fields {:#x}); {} rx queues each get only what the "
                 "device puts on them",
                 plan.port_id, info.driver_name, info.flow_type_rss_offloads, plan.queues);
  }
  rc = rte_eth_dev_configure(plan.port_id, plan.queues, plan.queues, &conf);
  if (rc != 0) throw SetupError("port " + std::to_string(plan.port_id) + ": configure failed: " + dpdk_error(rc));

  std::uint16_t rxd = plan.rx_descriptors;
  std::uint16_t txd = plan.tx_descriptors;
  rc = rte_eth_dev_adjust_nb_rx_tx_desc(plan.port_id, &rxd, &txd);
  if (rc != 0) throw SetupError("port " + std::to_string(plan.port_id) + ": descriptor counts refused: " + dpdk_error(rc));

  const int socket = std::max(rte_eth_dev_socket_id(plan.port_id), 0);
  for (std::uint16_t q = 0; q < plan.queues; ++q) {
    const std::string name = "gw_pool_p" + std::to_string(plan.port_id) + "_q" + std::to_string(q);
    rte_mempool* pool = rte_pktmbuf_pool_create(name.c_str(), plan.mbufs_per_queue, 256, kMbufPrivSize,
                                                RTE_MBUF_DEFAULT_BUF_SIZE, socket);
    if (pool == nullptr) {
      throw SetupError("cannot allocate " + std::to_string(plan.mbufs_per_queue) +
                       " packet buffers (dataplane.mbufs): " + rte_strerror(rte_errno) +
                       "; give EAL more memory (-m) or lower dataplane.mbufs");
    }
    state.pools.push_back(pool);
    rc = rte_eth_rx_queue_setup(plan.port_id, q, rxd, static_cast<unsigned>(socket), nullptr, pool);
    if (rc != 0) throw SetupError("port " + std::to_string(plan.port_id) + ": rx queue " + std::to_string(q) + ": " + dpdk_error(rc));
    rc = rte_eth_tx_queue_setup(plan.port_id, q, txd, static_cast<unsigned>(socket), nullptr);
    if (rc != 0) throw SetupError("port " + std::to_string(plan.port_id) + ": tx queue " + std::to_string(q) + ": " + dpdk_error(rc));
  }

  // The control lcore's transmit buffers: its own pool, so a receive flood
  // can never starve what the protocol must send (leave, acks).
  state.tx_pool = rte_pktmbuf_pool_create(("gw_txpool_p" + std::to_string(plan.port_id)).c_str(),
                                          plan.tx_mbufs, 64, kMbufPrivSize, RTE_MBUF_DEFAULT_BUF_SIZE, socket);
  if (state.tx_pool == nullptr) {
    throw SetupError("cannot allocate " + std::to_string(plan.tx_mbufs) + " transmit buffers: " +
                     rte_strerror(rte_errno) + "; give EAL more memory (-m)");
  }
  rte_ether_addr mac{};
  if (rte_eth_macaddr_get(plan.port_id, &mac) == 0) std::copy(mac.addr_bytes, mac.addr_bytes + 6, state.mac.begin());

  rc = rte_eth_dev_start(plan.port_id);
  if (rc != 0) throw SetupError("port " + std::to_string(plan.port_id) + ": start failed: " + dpdk_error(rc));
  // Virtual devices may not support it; gossip is addressed to us anyway.
  (void)rte_eth_promiscuous_enable(plan.port_id);
  return state;
}

void stop_port(PortState& state) noexcept {
  (void)rte_eth_dev_stop(state.port_id);
  (void)rte_eth_dev_close(state.port_id);
  for (rte_mempool* p : state.pools) rte_mempool_free(p);
  state.pools.clear();
  rte_mempool_free(state.tx_pool);
  state.tx_pool = nullptr;
}

}  // namespace gw::dp
