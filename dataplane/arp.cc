#include "dataplane/arp.h"

#include <rte_ethdev.h>

#include <cstring>

namespace gw::dp {
namespace {

std::uint16_t be16(const std::uint8_t* p) noexcept { return static_cast<std::uint16_t>((p[0] << 8) | p[1]); }

}  // namespace

ArpOutcome arp_in_place(std::uint8_t* frame, std::uint32_t len, const LocalEndpoint& local,
                        const Neighbors::Mac& our_mac, Endpoint* sender_ip, Neighbors::Mac* sender_mac) noexcept {
  if (local.ipv6 || len < kArpFrameBytes || be16(frame + 12) != kEtherTypeArp) return ArpOutcome::kIgnored;
  std::uint8_t* a = frame + 14;
  // Ethernet / IPv4 only: htype 1, ptype 0x0800, hlen 6, plen 4.
  if (be16(a) != 1 || be16(a + 2) != 0x0800 || a[4] != 6 || a[5] != 4) return ArpOutcome::kIgnored;
  const std::uint16_t op = be16(a + 6);
  if (op != 1 && op != 2) return ArpOutcome::kIgnored;
  // Only what is addressed to our IPv4 address concerns us.
  if (std::memcmp(a + 24, local.ipv4.data(), 4) != 0) return ArpOutcome::kIgnored;
  // A sender claiming our own address, or a broadcast/multicast sender MAC, is no hint.
  if (std::memcmp(a + 14, local.ipv4.data(), 4) == 0 || (a[8] & 0x01) != 0) return ArpOutcome::kIgnored;

  sender_ip->ip_len = 4;
  sender_ip->port = 0;
  std::memcpy(sender_ip->ip.data(), a + 14, 4);
  std::memcpy(sender_mac->data(), a + 8, 6);
  if (op == 2) return ArpOutcome::kHinted;

  // The reply: to the asker, from us; the target becomes the old sender.
  std::memcpy(frame, sender_mac->data(), 6);
  std::memcpy(frame + 6, our_mac.data(), 6);
  a[6] = 0;
  a[7] = 2;
  std::memcpy(a + 18, a + 8, 10);  // target hw + ip = asker's sender hw + ip
  std::memcpy(a + 8, our_mac.data(), 6);
  std::memcpy(a + 14, local.ipv4.data(), 4);
  return ArpOutcome::kReply;
}

bool arp_take(rte_mbuf* m, const LocalEndpoint& local, TxContext& tx, WorkerCounters& counters,
              ArpReplies& out) noexcept {
  if (m->nb_segs != 1 || m->data_len < kArpFrameBytes) return false;
  auto* frame = rte_pktmbuf_mtod(m, std::uint8_t*);
  if (be16(frame + 12) != kEtherTypeArp) return false;
  Endpoint ip;
  Neighbors::Mac mac;
  const ArpOutcome o = arp_in_place(frame, m->data_len, local, tx.src_mac, &ip, &mac);
  if (o == ArpOutcome::kIgnored) return false;
  // Only the transmitting worker's table is ever read.
  if (tx.ring != nullptr && tx.neighbors.hint(ip, mac.data())) ++counters.arp_hints;
  if (o != ArpOutcome::kReply || out.count == ArpReplies::kMax) return false;
  out.pkts[out.count++] = m;
  return true;
}

void arp_flush(std::uint16_t port, std::uint16_t queue, TxCounters& tx_counters, WorkerCounters& counters,
               ArpReplies& out) noexcept {
  if (out.count == 0) return;
  const std::uint16_t sent = rte_eth_tx_burst(port, queue, out.pkts.data(), out.count);
  counters.arp_replies += sent;
  if (sent < out.count) {
    tx_counters.tx_drop_nic += out.count - sent;
    rte_pktmbuf_free_bulk(out.pkts.data() + sent, out.count - sent);
  }
  out.count = 0;
}

}  // namespace gw::dp
