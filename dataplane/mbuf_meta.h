// What travels with a packet buffer from the control lcore to the transmitting
// worker, in the mbuf's private area: the destination. (Received payloads
// travel the other way as copies: dataplane/payload_ring.h.)
#pragma once

#include <rte_mbuf.h>

#include "dataplane/api/handoff.h"

namespace gw::dp {

struct MbufMeta {
  Endpoint endpoint;
};

// Whole cache lines, so packet data (after the private area and the
// headroom) starts on a cache line, as NICs' DMA prefers: a 128-byte frame
// spans two lines, not three. (At 24 bytes, the struct rounded to
// RTE_MBUF_PRIV_ALIGN, every frame started 24 bytes into a line; on net_pcap
// the difference was within the benchmark's noise.)
inline constexpr std::uint16_t kMbufPrivSize =
    static_cast<std::uint16_t>((sizeof(MbufMeta) + RTE_CACHE_LINE_SIZE - 1) & ~(RTE_CACHE_LINE_SIZE - 1));
static_assert(kMbufPrivSize % RTE_MBUF_PRIV_ALIGN == 0);

inline MbufMeta* mbuf_meta(rte_mbuf* m) noexcept { return static_cast<MbufMeta*>(rte_mbuf_to_priv(m)); }

}  // namespace gw::dp
