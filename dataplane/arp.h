// ARP on the workers (DESIGN.md ladder step 1: "ARP handled"). The simplest
// robust option for a gateway that owns its port and has one IPv4 address:
//   - a request for our address is answered in place, from the worker that
//     received it, on that worker's own tx queue (counted: arp.replies);
//   - the sender of an ARP request or reply addressed to us becomes a
//     transmit hint in the transmitting worker's neighbour table, only for an
//     address that has no entry yet (counted: arp.hints). A hint only saves a
//     broadcast frame; it is never used to authenticate anything, and a MAC
//     learned from an authenticated packet always replaces it.
// Everything else that is not gossip (ICMP, other ARP, IPv6 neighbour
// discovery) stays drop_not_gossip; there is no kernel exception path.
// Every ARP frame keeps its verdict (drop_not_gossip): replies and hints are
// counted beside the verdicts, not instead of them.
#pragma once

#include <rte_mbuf.h>

#include <array>
#include <cstdint>

#include "dataplane/api/counters.h"
#include "dataplane/ladder.h"
#include "dataplane/neighbors.h"
#include "dataplane/tx_path.h"

namespace gw::dp {

inline constexpr std::uint16_t kEtherTypeArp = 0x0806;
inline constexpr std::size_t kArpFrameBytes = 14 + 28;

enum class ArpOutcome : std::uint8_t {
  kIgnored,  // not ARP, malformed, or not about our address
  kHinted,   // addressed to us (request or reply): the sender may be a hint
  kReply,    // a request for our address; the frame now holds the reply
};

// Pure (no EAL): looks at one frame of `len` bytes. For a request for
// `local`'s IPv4 address, rewrites the frame in place into the reply from
// `our_mac` (Ethernet and ARP addresses swapped, opcode 2; the length is
// unchanged, padding included). `sender_ip`/`sender_mac` get the asking
// host's addresses whenever the outcome is not kIgnored.
ArpOutcome arp_in_place(std::uint8_t* frame, std::uint32_t len, const LocalEndpoint& local,
                        const Neighbors::Mac& our_mac, Endpoint* sender_ip, Neighbors::Mac* sender_mac) noexcept;

// Replies a worker collects during one burst and sends at its end.
struct ArpReplies {
  static constexpr std::uint16_t kMax = 32;  // more in one burst are dropped, not answered
  std::array<rte_mbuf*, kMax> pkts;
  std::uint16_t count = 0;
};

// Worker lcore only, given that worker's parts (its ladder's `local`, its
// `tx`, its `counters`): they are passed rather than the WorkerContext so
// that ARP does not depend on the worker that calls it. For a
// drop_not_gossip packet: true if `m` became an ARP reply queued in `out`
// (the caller must not free it), false otherwise.
bool arp_take(rte_mbuf* m, const LocalEndpoint& local, TxContext& tx, WorkerCounters& counters,
              ArpReplies& out) noexcept;

// Worker lcore only: transmits the collected replies on the worker's
// `port` and `queue`.
void arp_flush(std::uint16_t port, std::uint16_t queue, TxCounters& tx_counters, WorkerCounters& counters,
               ArpReplies& out) noexcept;

}  // namespace gw::dp
