#include "dataplane/worker.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_prefetch.h>

#include "dataplane/arp.h"
#include "dataplane/mbuf_meta.h"

namespace gw::dp {

void process_burst(WorkerContext& w, rte_mbuf** pkts, std::uint16_t n) noexcept {
  std::array<std::array<rte_mbuf*, kMaxBurst>, crypto::kClassCount> by_class;
  std::array<std::uint16_t, crypto::kClassCount> class_count{};
  std::array<rte_mbuf*, kMaxBurst> dropped;
  std::uint16_t drop_count = 0;
  // Unkeyed packets and where their UDP payload lies, for the classifier pass.
  struct Unkeyed {
    const std::uint8_t* payload;
    std::uint32_t len;
  };
  std::array<Unkeyed, kMaxBurst> unkeyed;
  std::uint16_t unkeyed_count = 0;
  ArpReplies arp;  // requests for our address, answered at the end of the burst

  for (std::uint16_t i = 0; i < kPrefetchAhead && i < n; ++i) {
    rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void*));
  }

  // Pass 1: one verdict per packet.
  for (std::uint16_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + kPrefetchAhead], void*));
    rte_mbuf* m = pkts[i];
    ++w.counters.rx_total;

    LadderResult r;
    if (m->nb_segs != 1) {
      r.verdict = Verdict::kMalformed;  // jumbo chains: gossip datagrams fit one segment
    } else {
      r = run_ladder(w.ladder, w.guard.state, rte_pktmbuf_mtod(m, std::uint8_t*), m->data_len);
    }
    if (r.verdict != Verdict::kAccepted) {
      w.counters.count(r.verdict);
      if (r.verdict == Verdict::kNotGossip && arp_take(w, m, arp)) continue;  // now a reply
      if (r.verdict == Verdict::kUnkeyed) {
        unkeyed[unkeyed_count++] = {rte_pktmbuf_mtod_offset(m, const std::uint8_t*, r.plaintext_offset),
                                    r.plaintext_len};
      }
      dropped[drop_count++] = m;
      continue;
    }
    // Authenticated: its source MAC is safe to learn for replies.
    if (w.tx.ring != nullptr) w.tx.neighbors.learn(r.from, rte_pktmbuf_mtod_offset(m, const std::uint8_t*, 6));
    mbuf_meta(m)->endpoint = r.from;
    mbuf_meta(m)->key_id = r.key_id;
    // Leave only the plaintext in the buffer for the control lcore.
    m->data_off = static_cast<std::uint16_t>(m->data_off + r.plaintext_offset);
    m->data_len = static_cast<std::uint16_t>(r.plaintext_len);
    m->pkt_len = r.plaintext_len;
    const auto c = static_cast<std::size_t>(r.cls);
    by_class[c][class_count[c]++] = m;
  }

  // Pass 2: name the unkeyed traffic, at most max_scans_per_burst packets a
  // burst so an unkeyed flood costs a bounded share of it.
  LcoreGuard& g = w.guard;
  std::uint16_t scans = unkeyed_count;
  if (g.classifier == nullptr) {
    scans = 0;
  } else if (g.max_scans_per_burst != 0 && scans > g.max_scans_per_burst) {
    scans = static_cast<std::uint16_t>(g.max_scans_per_burst);
  }
  for (std::uint16_t i = 0; i < scans; ++i) {
    const std::uint32_t rule = g.classifier->classify(g.scratch, unkeyed[i].payload, unkeyed[i].len);
    ++w.counters.unkeyed_by_rule[rule == g.classifier->unmatched() ? kUnkeyedRuleSlots : rule];
  }
  w.counters.unkeyed_unscanned += unkeyed_count - scans;
  if (g.replay != nullptr) w.counters.replay_table_evict = g.replay->evictions();
  if (g.rate != nullptr) w.counters.ratelimit_table_evict = g.rate->evictions();

  // Pass 3: one ring enqueue per class; what does not fit is counted and freed.
  for (std::size_t c = 0; c < crypto::kClassCount; ++c) {
    const std::uint16_t want = class_count[c];
    if (want == 0) continue;
    const unsigned sent = rte_ring_sp_enqueue_burst(
        w.rings[c], reinterpret_cast<void* const*>(by_class[c].data()), want, nullptr);
    w.counters.verdicts[static_cast<std::size_t>(Verdict::kAccepted)] += sent;
    w.counters.accepted_by_class[c] += sent;
    for (unsigned i = sent; i < want; ++i) {
      w.counters.count(Verdict::kRingFull);
      dropped[drop_count++] = by_class[c][i];
    }
  }
  if (drop_count != 0) rte_pktmbuf_free_bulk(dropped.data(), drop_count);
  arp_flush(w, arp);
}

void adopt_snapshot(WorkerContext& w) noexcept {
  if (w.snapshots == nullptr) return;
  w.snapshot = w.snapshots->adopt(w.worker_index);
  w.ladder.keys = &w.snapshot->keys;
  w.guard.state.snapshot = w.snapshot;  // known members get the larger rate budget
}

int run_worker(void* context) {
  WorkerContext& w = *static_cast<WorkerContext*>(context);
  std::array<rte_mbuf*, kMaxBurst> pkts;
  std::uint64_t last_rx = rte_rdtsc();

  while (!w.stop->load(std::memory_order_acquire)) {
    adopt_snapshot(w);  // two atomic operations; keeps an idle worker from pinning old keys
    const std::uint16_t n = rte_eth_rx_burst(w.port, w.queue, pkts.data(), w.burst);
    const unsigned sent = w.tx.ring != nullptr ? drain_tx(w.tx, w.port, w.queue, w.burst) : 0;
    if (n == 0) {
      ++w.counters.idle_polls;
      if (w.idle_exit_tsc != 0 && rte_rdtsc() - last_rx > w.idle_exit_tsc) {
        w.idle.store(true, std::memory_order_relaxed);
      }
      if (w.idle_backoff_us != 0 && sent == 0) rte_delay_us_sleep(w.idle_backoff_us);
      continue;
    }
    ++w.counters.rx_bursts;
    last_rx = rte_rdtsc();
    w.guard.clock.read(last_rx, w.guard.state);  // one clock read per burst

    w.idle.store(false, std::memory_order_relaxed);
    process_burst(w, pkts.data(), n);
  }
  if (w.snapshots != nullptr) w.snapshots->retire_reader(w.worker_index);
  // The control lcore stops us only after the leave was queued: send it.
  if (w.tx.ring != nullptr) {
    while (drain_tx(w.tx, w.port, w.queue, w.burst) != 0) {
    }
  }
  w.done.store(true, std::memory_order_release);
  return 0;
}

}  // namespace gw::dp
