#include "control/filter/filter_worker.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include <array>

#include "base/clock.h"

namespace gw::cp::filter {
namespace {

// Sends `n` frames on (port, queue); what the queue does not take is freed.
// Returns how many were not taken.
inline std::uint16_t send_or_free(std::uint16_t port, std::uint16_t queue, rte_mbuf** pkts, std::uint16_t n) noexcept {
  if (n == 0) return 0;
  const std::uint16_t sent = rte_eth_tx_burst(port, queue, pkts, n);
  if (sent < n) rte_pktmbuf_free_bulk(pkts + sent, n - sent);
  return static_cast<std::uint16_t>(n - sent);
}

}  // namespace

void filter_inbound_burst(FilterWorker& w, rte_mbuf** pkts, std::uint16_t n, const ml::Keyring* keys,
                          std::uint64_t now_ns) noexcept {
  std::array<rte_mbuf*, kMaxFilterBurst> pass;
  std::array<rte_mbuf*, kMaxFilterBurst> drop;
  std::uint16_t np = 0;
  std::uint16_t nd = 0;
  w.io.rx_from_network += n;
  for (std::uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    if (m->nb_segs != 1) [[unlikely]] {
      ++w.io.multi_segment_in;
      drop[nd++] = m;
      continue;
    }
    const ml::FilterResult r = w.filter->inbound(rte_pktmbuf_mtod(m, const std::uint8_t*), m->data_len, keys, now_ns);
    if (r.verdict == ml::FrameVerdict::kToAgent || r.verdict == ml::FrameVerdict::kPassIn) {
      pass[np++] = m;
    } else {
      drop[nd++] = m;
    }
  }
  const std::uint16_t full = send_or_free(w.agent_port, w.queue, pass.data(), np);
  w.io.tx_to_agent += np - full;
  w.io.tx_full_to_agent += full;
  if (nd != 0) rte_pktmbuf_free_bulk(drop.data(), nd);
}

void filter_outbound_burst(FilterWorker& w, rte_mbuf** pkts, std::uint16_t n, std::uint64_t now_ns) noexcept {
  std::array<rte_mbuf*, kMaxFilterBurst> pass;
  std::array<rte_mbuf*, kMaxFilterBurst> drop;
  std::uint16_t np = 0;
  std::uint16_t nd = 0;
  w.io.rx_from_agent += n;
  for (std::uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    if (m->nb_segs != 1) [[unlikely]] {
      ++w.io.multi_segment_out;
      drop[nd++] = m;
      continue;
    }
    if (w.filter->outbound(rte_pktmbuf_mtod(m, const std::uint8_t*), m->data_len, now_ns) ==
        ml::FrameVerdict::kToNetwork) {
      pass[np++] = m;
    } else {
      drop[nd++] = m;
    }
  }
  const std::uint16_t full = send_or_free(w.nic_port, w.queue, pass.data(), np);
  w.io.tx_to_network += np - full;
  w.io.tx_full_to_network += full;
  if (nd != 0) rte_pktmbuf_free_bulk(drop.data(), nd);
}

int run_filter_worker(void* context) {
  FilterWorker& w = *static_cast<FilterWorker*>(context);
  std::array<rte_mbuf*, kMaxFilterBurst> pkts;
  std::uint64_t last_rx = rte_rdtsc();

  while (!w.stop->load(std::memory_order_acquire)) {
    // One acquire load; an idle worker adopts too, so it never pins a retired keyring.
    const ml::Keyring* ring = w.keys->adopt(w.reader);
    const ml::Keyring* keys = ring->empty() ? nullptr : ring;
    const std::uint16_t in = rte_eth_rx_burst(w.nic_port, w.queue, pkts.data(), w.burst);
    const std::uint64_t now_ns = base::monotonic_ns();  // one clock read per turn (vDSO)
    if (in != 0) filter_inbound_burst(w, pkts.data(), in, keys, now_ns);
    const std::uint16_t out = rte_eth_rx_burst(w.agent_port, w.queue, pkts.data(), w.burst);
    if (out != 0) filter_outbound_burst(w, pkts.data(), out, now_ns);

    if (in == 0 && out == 0) {
      ++w.io.idle_polls;
      if (w.idle_exit_tsc != 0 && rte_rdtsc() - last_rx > w.idle_exit_tsc) w.idle.store(true, std::memory_order_relaxed);
      if (w.idle_backoff_us != 0) rte_delay_us_sleep(w.idle_backoff_us);
      continue;
    }
    ++w.io.rx_bursts;
    last_rx = rte_rdtsc();
    // Written only when it changes: the control lcore reads it.
    if (w.idle.load(std::memory_order_relaxed)) w.idle.store(false, std::memory_order_relaxed);
  }
  w.keys->retire_reader(w.reader);
  w.done.store(true, std::memory_order_release);
  return 0;
}

}  // namespace gw::cp::filter
