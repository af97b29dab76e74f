// What travels with a packet buffer between the planes, in the mbuf's private
// area: on receive the sender's endpoint, on transmit the destination's.
#pragma once

#include <rte_mbuf.h>

#include "dataplane/api/handoff.h"

namespace gw::dp {

struct MbufMeta {
  Endpoint endpoint;
  std::uint32_t key_id = 0;  // on receive: the key that opened the payload
};

inline constexpr std::uint16_t kMbufPrivSize =
    static_cast<std::uint16_t>((sizeof(MbufMeta) + RTE_MBUF_PRIV_ALIGN - 1) & ~(RTE_MBUF_PRIV_ALIGN - 1));

inline MbufMeta* mbuf_meta(rte_mbuf* m) noexcept { return static_cast<MbufMeta*>(rte_mbuf_to_priv(m)); }

}  // namespace gw::dp
