#include "dataplane/port.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "config/config.h"
#include "dataplane/mbuf_meta.h"

namespace gw::dp {

// config::kMaxPayloadBytes is what one receive mbuf of this pool holds
// (a frame never spans segments: multi-segment frames are malformed).
static_assert(RTE_MBUF_DEFAULT_DATAROOM - (14 + 4 + 40 + 8) - 48 >= config::kMaxPayloadBytes,
              "limits.max_payload_bytes must fit one mbuf");
namespace {

std::string dpdk_error(int rc) { return rte_strerror(rc < 0 ? -rc : rc); }

// One pktmbuf pool of `n` mbufs as rte_pktmbuf_pool_create lays it out: the
// objects (DPDK's own per-object size: header, mbuf, private area, data
// room, trailer), the pool header with its per-lcore caches, and its ring.
std::uint64_t one_pool_bytes(std::uint32_t n) {
  const std::uint32_t elt = sizeof(rte_mbuf) + kMbufPrivSize + RTE_MBUF_DEFAULT_BUF_SIZE;
  rte_mempool_objsz sz{};
  const std::uint64_t obj = rte_mempool_calc_obj_size(elt, 0, &sz);
  const std::uint64_t header = sizeof(rte_mempool) + std::uint64_t{RTE_MAX_LCORE} * sizeof(rte_mempool_cache);
  const ssize_t ring = rte_ring_get_memsize(static_cast<unsigned>(rte_align32pow2(n + 1)));
  return std::uint64_t{n} * obj + header + (ring > 0 ? static_cast<std::uint64_t>(ring) : 0);
}

std::uint64_t read_number(const std::string& path) {
  std::ifstream in(path);
  std::uint64_t v = 0;
  return (in >> v) ? v : 0;
}

}  // namespace

std::uint64_t pool_bytes(const PortPlan& plan) {
  return std::uint64_t{plan.queues} * one_pool_bytes(plan.mbufs_per_queue) + one_pool_bytes(plan.tx_mbufs);
}

std::uint64_t eal_memory_available(int socket) {
  // What the heap holds free now (all of it with --no-huge or -m in legacy
  // mode) ...
  rte_malloc_socket_stats st{};
  std::uint64_t free = rte_malloc_get_socket_stats(socket, &st) == 0 ? st.heap_freesz_bytes : 0;
  // ... plus, with hugepages, what it could still grow by: the free pages of
  // the socket's NUMA node (an upper bound, so a config is never refused
  // for memory EAL could get).
  if (rte_eal_has_hugepages()) {
    for (const char* size : {"hugepages-2048kB", "hugepages-1048576kB"}) {
      const std::uint64_t page = std::string(size) == "hugepages-2048kB" ? (2ULL << 20) : (1ULL << 30);
      std::uint64_t pages = read_number("/sys/devices/system/node/node" + std::to_string(socket) + "/hugepages/" +
                                        size + "/free_hugepages");
      if (pages == 0) pages = read_number(std::string("/sys/kernel/mm/hugepages/") + size + "/free_hugepages");
      free += pages * page;
    }
  }
  return free;
}

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
  if (rc != 0)
    throw SetupError("port " + std::to_string(plan.port_id) + ": cannot read device info: " + dpdk_error(rc));
  if (plan.queues > info.max_rx_queues || plan.queues > info.max_tx_queues) {
    throw SetupError("lcores.workers: " + std::to_string(plan.queues) + " workers need as many queues, but " +
                     info.driver_name + " offers " + std::to_string(info.max_rx_queues) + " rx / " +
                     std::to_string(info.max_tx_queues) + " tx queues");
  }

  // The packet pools come from EAL's memory (-m, hugepages), not the
  // process's: check that EAL has it before anything is set up, so the error
  // says how much is needed (issue 17).
  const int pool_socket = std::max(rte_eth_dev_socket_id(plan.port_id), 0);
  const std::uint64_t need = pool_bytes(plan);
  const std::uint64_t have = eal_memory_available(pool_socket);
  if (need > have) {
    constexpr std::uint64_t kMiB = 1024 * 1024;
    throw SetupError("dataplane.mbufs: the packet pools need " + std::to_string((need + kMiB - 1) / kMiB) +
                     " MiB of EAL memory (" + std::to_string(plan.queues) + " rx queue(s) x " +
                     std::to_string(plan.mbufs_per_queue) + " mbufs + " + std::to_string(plan.tx_mbufs) +
                     " transmit buffers), but EAL has " + std::to_string(have / kMiB) + " MiB free on socket " +
                     std::to_string(pool_socket) +
                     "; lower dataplane.mbufs or give EAL more memory (-m, hugepages; gossipctl config eal-args "
                     "prints -m for this config)");
  }

  PortState state;
  state.port_id = plan.port_id;
  state.driver = info.driver_name;

  rte_eth_conf conf{};
  // Spread sources over workers by the UDP 4-tuple where the port can.
  const std::uint64_t rss_hf =
      info.flow_type_rss_offloads & (RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_NONFRAG_IPV6_UDP | RTE_ETH_RSS_IP);
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
    spdlog::warn(
        "port {} ({}): no RSS (driver offers hash fields {:#x}); {} rx queues each get only what the "
        "device puts on them",
        plan.port_id, info.driver_name, info.flow_type_rss_offloads, plan.queues);
  }
  rc = rte_eth_dev_configure(plan.port_id, plan.queues, plan.queues, &conf);
  if (rc != 0) throw SetupError("port " + std::to_string(plan.port_id) + ": configure failed: " + dpdk_error(rc));

  std::uint16_t rxd = plan.rx_descriptors;
  std::uint16_t txd = plan.tx_descriptors;
  rc = rte_eth_dev_adjust_nb_rx_tx_desc(plan.port_id, &rxd, &txd);
  if (rc != 0)
    throw SetupError("port " + std::to_string(plan.port_id) + ": descriptor counts refused: " + dpdk_error(rc));

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
    if (rc != 0)
      throw SetupError("port " + std::to_string(plan.port_id) + ": rx queue " + std::to_string(q) + ": " +
                       dpdk_error(rc));
    rc = rte_eth_tx_queue_setup(plan.port_id, q, txd, static_cast<unsigned>(socket), nullptr);
    if (rc != 0)
      throw SetupError("port " + std::to_string(plan.port_id) + ": tx queue " + std::to_string(q) + ": " +
                       dpdk_error(rc));
  }

  // The control lcore's transmit buffers: its own pool, so a receive flood
  // can never starve what the protocol must send (leave, acks).
  state.tx_pool = rte_pktmbuf_pool_create(("gw_txpool_p" + std::to_string(plan.port_id)).c_str(), plan.tx_mbufs, 64,
                                          kMbufPrivSize, RTE_MBUF_DEFAULT_BUF_SIZE, socket);
  if (state.tx_pool == nullptr) {
    throw SetupError("cannot allocate " + std::to_string(plan.tx_mbufs) +
                     " transmit buffers: " + rte_strerror(rte_errno) + "; give EAL more memory (-m)");
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
