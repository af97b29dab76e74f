#include "dataplane/tx_path.h"

#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include <cstring>

#include "dataplane/mbuf_meta.h"

namespace gw::dp {
namespace {

constexpr std::uint8_t kTtl = 64;
constexpr std::size_t kMaxFrame = 1514;

}  // namespace

bool TxQueue::send(const Endpoint& to, crypto::PriorityClass cls, const std::uint8_t* datagram,
                   std::size_t len) noexcept {
  (void)cls;  // one ring for now; the egress shaper will order by class
  if (to.ip_len != (ipv6_ ? 16 : 4) || to.port == 0) {
    ++counters_.drop_bad_endpoint;
    return false;
  }
  const std::size_t headers = 14 + (ipv6_ ? 40u : 20u) + 8;
  if (len + headers > kMaxFrame) {
    ++counters_.drop_too_large;
    return false;
  }
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m == nullptr) {
    ++counters_.drop_no_buffer;
    return false;
  }
  char* dst = rte_pktmbuf_append(m, static_cast<std::uint16_t>(len));
  if (dst == nullptr || rte_pktmbuf_headroom(m) < kTxHeadroom) {
    rte_pktmbuf_free(m);
    ++counters_.drop_too_large;
    return false;
  }
  std::memcpy(dst, datagram, len);
  mbuf_meta(m)->endpoint = to;
  if (rte_ring_sp_enqueue(ring_, m) != 0) {
    rte_pktmbuf_free(m);
    ++counters_.drop_ring_full;
    return false;
  }
  ++counters_.queued;
  return true;
}

unsigned drain_tx(TxContext& tx, std::uint16_t port, std::uint16_t queue, std::uint16_t burst) noexcept {
  std::array<rte_mbuf*, 64> pkts;
  const unsigned want = burst < pkts.size() ? burst : static_cast<unsigned>(pkts.size());
  const unsigned n = rte_ring_sc_dequeue_burst(tx.ring, reinterpret_cast<void**>(pkts.data()), want, nullptr);
  for (unsigned i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    const Endpoint to = mbuf_meta(m)->endpoint;
    const std::uint16_t payload = static_cast<std::uint16_t>(m->data_len);
    const std::uint16_t ip_hdr = tx.local.ipv6 ? 40 : 20;
    auto* eth = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_prepend(m, static_cast<std::uint16_t>(14 + ip_hdr + 8)));

    Neighbors::Mac dmac;
    if (!tx.neighbors.lookup(to, &dmac)) {
      dmac.fill(0xFF);
      ++tx.counters.tx_broadcast_unknown;
    }
    std::memcpy(eth, dmac.data(), 6);
    std::memcpy(eth + 6, tx.src_mac.data(), 6);
    const std::uint16_t udp_len = static_cast<std::uint16_t>(8 + payload);
    auto* udp = reinterpret_cast<rte_udp_hdr*>(eth + 14 + ip_hdr);
    udp->src_port = rte_cpu_to_be_16(tx.local.port);
    udp->dst_port = rte_cpu_to_be_16(to.port);
    udp->dgram_len = rte_cpu_to_be_16(udp_len);
    udp->dgram_cksum = 0;
    if (!tx.local.ipv6) {
      eth[12] = 0x08;
      eth[13] = 0x00;
      auto* ip = reinterpret_cast<rte_ipv4_hdr*>(eth + 14);
      std::memset(ip, 0, sizeof *ip);
      ip->version_ihl = 0x45;
      ip->total_length = rte_cpu_to_be_16(static_cast<std::uint16_t>(20 + udp_len));
      ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
      ip->time_to_live = kTtl;
      ip->next_proto_id = IPPROTO_UDP;
      // Through a local: the header is packed, and a pointer to its members
      // may be unaligned.
      rte_be32_t src = 0, dst = 0;
      std::memcpy(&src, tx.local.ipv4.data(), 4);
      std::memcpy(&dst, to.ip.data(), 4);
      ip->src_addr = src;
      ip->dst_addr = dst;
      ip->hdr_checksum = rte_ipv4_cksum(ip);
      udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
    } else {
      eth[12] = 0x86;
      eth[13] = 0xDD;
      auto* ip = reinterpret_cast<rte_ipv6_hdr*>(eth + 14);
      std::memset(ip, 0, sizeof *ip);
      ip->vtc_flow = rte_cpu_to_be_32(0x60000000);
      ip->payload_len = rte_cpu_to_be_16(udp_len);
      ip->proto = IPPROTO_UDP;
      ip->hop_limits = kTtl;
      std::memcpy(ip->src_addr, tx.local.ipv6_addr.data(), 16);
      std::memcpy(ip->dst_addr, to.ip.data(), 16);
      udp->dgram_cksum = rte_ipv6_udptcp_cksum(ip, udp);  // mandatory over IPv6
    }
  }
  // Lengths first: once sent, a buffer belongs to the driver.
  std::array<std::uint32_t, 64> lens;
  for (unsigned i = 0; i < n; ++i) lens[i] = pkts[i]->pkt_len;
  const std::uint16_t sent = n == 0 ? 0 : rte_eth_tx_burst(port, queue, pkts.data(), static_cast<std::uint16_t>(n));
  tx.counters.tx_packets += sent;
  for (std::uint16_t i = 0; i < sent; ++i) tx.counters.tx_bytes += lens[i];
  if (sent < n) {
    tx.counters.tx_drop_nic += n - sent;
    rte_pktmbuf_free_bulk(pkts.data() + sent, n - sent);
  }
  return n;
}

}  // namespace gw::dp
