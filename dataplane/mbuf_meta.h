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

inline constexpr std::uint16_t kMbufPrivSize =
    static_cast<std::uint16_t>((sizeof(MbufMeta) + RTE_MBUF_PRIV_ALIGN - 1) & ~(RTE_MBUF_PRIV_ALIGN - 1));

inline MbufMeta* mbuf_meta(rte_mbuf* m) noexcept { return static_cast<MbufMeta*>(rte_mbuf_to_priv(m)); }

}  // namespace gw::dp
