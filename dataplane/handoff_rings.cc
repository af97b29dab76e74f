#include "dataplane/handoff_rings.h"

#include <rte_errno.h>
#include <rte_mbuf.h>

#include <string>

#include "dataplane/mbuf_meta.h"
#include "dataplane/port.h"

namespace gw::dp {

namespace {
constexpr std::size_t kDequeueChunk = 64;
}  // namespace

HandoffRings::HandoffRings(std::size_t workers, std::uint32_t size, int socket) : rings_(workers) {
  for (std::size_t w = 0; w < workers; ++w) {
    for (std::size_t c = 0; c < crypto::kClassCount; ++c) {
      const std::string name = "gw_handoff_w" + std::to_string(w) + "_c" + std::to_string(c);
      rte_ring* r = rte_ring_create(name.c_str(), size, socket,
                                    RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
      if (r == nullptr) {
        throw SetupError("rings.size: cannot create ring '" + name + "' of " + std::to_string(size) +
                         " entries: " + rte_strerror(rte_errno));
      }
      rings_[w][c] = r;
    }
  }
}

HandoffRings::~HandoffRings() {
  for (auto& per_worker : rings_) {
    for (rte_ring* r : per_worker) {
      if (r == nullptr) continue;
      // Whatever is still queued goes back to its pool.
      void* obj = nullptr;
      while (rte_ring_sc_dequeue(r, &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
      rte_ring_free(r);
    }
  }
}

std::size_t HandoffRings::dequeue(std::size_t worker, crypto::PriorityClass cls, Handoff* out,
                                  std::size_t max) noexcept {
  std::array<void*, kDequeueChunk> objs;
  const unsigned want = static_cast<unsigned>(std::min(max, kDequeueChunk));
  const unsigned got = rte_ring_sc_dequeue_burst(ring(worker, cls), objs.data(), want, nullptr);
  for (unsigned i = 0; i < got; ++i) {
    auto* m = static_cast<rte_mbuf*>(objs[i]);
    out[i].data = rte_pktmbuf_mtod(m, const std::uint8_t*);
    out[i].len = m->data_len;
    out[i].from = mbuf_meta(m)->endpoint;
    out[i].key_id = mbuf_meta(m)->key_id;
    out[i].token = m;
  }
  return got;
}

void HandoffRings::release(Handoff* items, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) rte_pktmbuf_free(static_cast<rte_mbuf*>(items[i].token));
}

bool HandoffRings::producers_done() const noexcept {
  for (const auto* d : done_) {
    if (!d->load(std::memory_order_acquire)) return false;
  }
  return true;
}

}  // namespace gw::dp
