#include "dataplane/worker.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>

#include "crypto/siphash.h"
#include "dataplane/arp.h"
#include "dataplane/mbuf_meta.h"

namespace gw::dp {
namespace {

// Zero for what a receive burst normally holds: one direct segment (DPDK
// keeps `next` null when nb_segs is 1) from `pool`, with no other reference;
// what rte_mbuf_raw_free asks of a buffer. A burst of only such buffers goes
// back to the pool in one rte_mempool_put_bulk, without
// rte_pktmbuf_free_bulk's per-buffer walk (on unkeyed 128-byte floods that
// walk cost about as much as the whole ladder). Bits, not a bool: refcnt
// and nb_segs are read as one word, and the burst ORs the results.
inline std::uint64_t not_plain_bits(const rte_mbuf* m, const rte_mempool* pool) noexcept {
  static_assert(std::endian::native == std::endian::little);
  static_assert(offsetof(rte_mbuf, refcnt) == offsetof(rte_mbuf, data_off) + 2 &&
                offsetof(rte_mbuf, nb_segs) == offsetof(rte_mbuf, data_off) + 4 &&
                offsetof(rte_mbuf, port) == offsetof(rte_mbuf, data_off) + 6);
  std::uint64_t rearm = 0;  // data_off, refcnt, nb_segs, port
  std::memcpy(&rearm, &m->data_off, sizeof rearm);
  constexpr std::uint64_t kRefcntSegs = 0x0000'FFFF'FFFF'0000ULL;
  constexpr std::uint64_t kOneAndOne = 0x0000'0001'0001'0000ULL;
  return ((rearm & kRefcntSegs) ^ kOneAndOne) | (m->ol_flags & (RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL)) |
         (reinterpret_cast<std::uintptr_t>(m->pool) ^ reinterpret_cast<std::uintptr_t>(pool));
}

// Where a received frame normally starts: a direct mbuf of our pools holds
// its header, the private area and the default headroom before the data. Computed
// from the mbuf's address alone, so the prefetch waits on no load; a frame
// elsewhere is merely not prefetched.
inline void prefetch_frame(const rte_mbuf* m) noexcept {
  rte_prefetch0(reinterpret_cast<const std::uint8_t*>(m) + sizeof(rte_mbuf) + kMbufPrivSize + RTE_PKTMBUF_HEADROOM);
}

// A datagram of our cluster under a key id we lack (the front of the ladder
// found its header well formed): its key id, suite and claimed source into
// the lcore's sample. Only while the sample has room or was taken, so an
// unknown-key flood costs one compare per packet once it is full.
[[gnu::noinline, gnu::cold]] void sample_unknown_key(WorkerContext& w, const std::uint8_t* frame, std::uint32_t len,
                                                     std::uint32_t dgram_offset) noexcept {
  UdpView udp;
  if (parse_l2_l4(w.ladder.local, frame, len, &udp) != Verdict::kAccepted) return;  // not reached: it parsed before
  crypto::WireHeader h;
  crypto::read_header_fields(frame + dgram_offset, &h);
  UnknownKeySighting s;
  s.key_id = h.key_id;
  s.suite = static_cast<std::uint8_t>(h.suite);
  s.from = udp.from();
  w.unknown_keys.note(s);
}

// Replay-table slots looked at per burst for windows whose datagrams are
// all stale: 16 tags are four cache lines, and a table of 8,192 slots is
// swept every 512 bursts.
constexpr std::size_t kReplayAgeSteps = 16;

}  // namespace

void process_burst(WorkerContext& w, rte_mbuf** pkts, std::uint16_t n) noexcept {
  if (n == 0) return;
  std::array<std::uint16_t, crypto::kClassCount> class_count{};
  // Every buffer goes back to this lcore's pool at the end of the burst, the
  // accepted ones too (their payloads leave as copies: payload_ring.h says
  // why), except ARP requests turned into replies: their slots are nulled.
  std::uint16_t taken = 0;
  rte_mempool* const pool = pkts[0]->pool;
  std::uint64_t not_plain = 0;  // zero: every buffer plain (not_plain_bits)
  // Unkeyed packets and where their UDP payload lies, for the classifier
  // pass (which scans at most scan_cap of them).
  LcoreGuard& g = w.guard;
  std::uint16_t scan_cap = 0;
  if (g.classifier != nullptr) {
    scan_cap =
        g.max_scans_per_burst != 0 && g.max_scans_per_burst < n ? static_cast<std::uint16_t>(g.max_scans_per_burst) : n;
  }
  struct Unkeyed {
    const std::uint8_t* payload;
    std::uint32_t len;
  };
  std::array<Unkeyed, kMaxBurst> unkeyed;
  std::uint16_t unkeyed_count = 0;
  ArpReplies arp;  // requests for our address, answered at the end of the burst

  // Every frame's first cache line (Ethernet to the start of the gossipgw
  // header), requested at once so the misses overlap.
  for (std::uint16_t i = 0; i < n; ++i) prefetch_frame(pkts[i]);

  // Pass 1: steps 1-4 per packet. Most floods end here; packets that name
  // one of our keys wait for their header MAC.
  std::array<LadderFront, kMaxBurst>& keyed = w.scratch.keyed;  // per lcore: no per-burst construction
  std::array<rte_mbuf*, kMaxBurst> keyed_mbuf;
  std::uint16_t keyed_count = 0;
  w.counters.rx_total += n;
  for (std::uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    not_plain |= not_plain_bits(m, pool);
    if (m->nb_segs != 1) {
      w.counters.count(Verdict::kMalformed);  // jumbo chains: gossip datagrams fit one segment
      continue;
    }
    // Initialised in place and read field by field, so the compiler keeps it
    // in registers (a copy of the whole struct stalled on store forwarding).
    const FrontResult r = ladder_front(w.ladder, rte_pktmbuf_mtod(m, std::uint8_t*), m->data_len, &keyed[keyed_count]);
    if (r.verdict == Verdict::kAccepted) {
      keyed_mbuf[keyed_count++] = m;
      continue;
    }
    // Unkeyed floods are counted once a burst, from unkeyed_count.
    if (r.verdict == Verdict::kUnkeyed) {
      // Stored for every one (the array holds a whole burst): cheaper than
      // asking whether the classifier will get to it.
      unkeyed[unkeyed_count++] = {rte_pktmbuf_mtod_offset(m, const std::uint8_t*, r.payload_offset), r.payload_len};
      continue;
    }
    w.counters.count(r.verdict);
    if (r.verdict == Verdict::kUnknownKey && w.unknown_keys.wants()) [[unlikely]] {
      sample_unknown_key(w, rte_pktmbuf_mtod(m, const std::uint8_t*), m->data_len, r.payload_offset);
    }
    if (r.verdict == Verdict::kNotGossip && arp_take(m, w.ladder.local, w.tx, w.counters, arp)) {  // now a reply
      pkts[i] = nullptr;
      ++taken;
    }
  }
  w.counters.verdicts[static_cast<std::size_t>(Verdict::kUnkeyed)] += unkeyed_count;

  // Pass 1b: the header MACs, kSipBatch at a time side by side (a forged
  // flood pays one SipHash per packet; in lanes they overlap).
  std::array<std::uint64_t, kMaxBurst + crypto::kSipBatch> macs;
  for (std::uint16_t i = 0; i < keyed_count; i += crypto::kSipBatch) {
    std::array<const crypto::SipKey*, crypto::kSipBatch> keys;
    std::array<const std::uint8_t*, crypto::kSipBatch> heads;
    const std::size_t lanes = std::min<std::size_t>(crypto::kSipBatch, keyed_count - i);
    for (std::size_t l = 0; l < lanes; ++l) {
      keys[l] = &keyed[i + l].key->mac_sip_key();
      heads[l] = keyed[i + l].dgram;
    }
    crypto::siphash24_40_batch(keys.data(), heads.data(), &macs[i], lanes);
  }

  // Pass 1c: in arrival order, the MAC verdict and steps 6-8 (replay,
  // token bucket, AEAD), which read and write this lcore's tables.
  LadderResult r;  // written by ladder_back only for accepted packets
  for (std::uint16_t i = 0; i < keyed_count; ++i) {
    rte_mbuf* m = keyed_mbuf[i];
    const LadderFront& f = keyed[i];
    // One 64-bit XOR and test against the MAC on the wire: constant time.
    if ((macs[i] ^ crypto::load_le64(f.dgram + crypto::kMacOffset)) != 0) {
      w.counters.count(Verdict::kBadMac);
      continue;
    }
    const Verdict v = ladder_back(w.ladder, w.guard.state, f, &r);
    if (v != Verdict::kAccepted) {
      w.counters.count(v);
      continue;
    }
    // Authenticated: its source MAC is safe to learn for replies.
    if (w.tx.ring != nullptr) w.tx.neighbors.learn(r.from, rte_pktmbuf_mtod_offset(m, const std::uint8_t*, 6));
    // The buffer stays here; its plaintext travels.
    const auto c = static_cast<std::size_t>(r.cls);
    if (w.rings[c]->push(rte_pktmbuf_mtod_offset(m, const std::uint8_t*, r.plaintext_offset), r.plaintext_len, r.from,
                         r.key_id, r.stamp)) {
      ++class_count[c];
    } else {
      w.counters.count(Verdict::kRingFull);
    }
  }

  // Pass 2: name the unkeyed traffic, at most max_scans_per_burst packets a
  // burst and max_scans_per_sec a second, so an unkeyed flood costs a
  // bounded share of the core.
  std::uint16_t scans = std::min(unkeyed_count, scan_cap);
  if (scans != 0) scans = static_cast<std::uint16_t>(g.scan_budget.take(scans, g.state.now_ns));
  for (std::uint16_t i = 0; i < scans; ++i) {
    const std::uint32_t rule = g.classifier->classify(g.scratch, unkeyed[i].payload, unkeyed[i].len);
    ++w.counters.unkeyed_by_rule[rule == g.classifier->unmatched() ? kUnkeyedRuleSlots : rule];
  }
  w.counters.unkeyed_unscanned += unkeyed_count - scans;
  if (g.replay != nullptr) {
    g.replay->age(g.state.now_s, kReplayAgeSteps);  // one ageing step per burst
    w.counters.replay_table_expired = g.replay->expired();
    w.counters.replay_table_evict = g.replay->evicted();
    w.counters.replay_window_rebased = g.replay->rebased();
  }
  if (g.rate != nullptr) w.counters.ratelimit_table_evict = g.rate->evictions();

  // Pass 3: one publish per class that got payloads; every buffer goes back.
  for (std::size_t c = 0; c < crypto::kClassCount; ++c) {
    const std::uint16_t sent = class_count[c];
    if (sent == 0) continue;
    w.rings[c]->publish();
    w.counters.verdicts[static_cast<std::size_t>(Verdict::kAccepted)] += sent;
    w.counters.accepted_by_class[c] += sent;
  }
  if (not_plain == 0 && taken == 0) {
    rte_mempool_put_bulk(pool, reinterpret_cast<void**>(pkts), n);
  } else {
    rte_pktmbuf_free_bulk(pkts, n);  // skips the null slots of ARP replies
  }
  arp_flush(w.port, w.queue, w.tx.counters, w.counters, arp);
}

void adopt_snapshot(WorkerContext& w) noexcept {
  if (w.snapshots == nullptr) return;
  const DataplaneSnapshot* s = w.snapshots->adopt(w.worker_index);
  // A new snapshot: copy its keys into this lcore's memory (about 10 KB,
  // only when the control plane published a change).
  if (s != w.snapshot) w.keys = s->keys;
  w.snapshot = s;
  w.ladder.keys = &w.keys;
  w.guard.state.snapshot = w.snapshot;  // known members get the larger rate budget
}

int run_worker(void* context) {
  WorkerContext& w = *static_cast<WorkerContext*>(context);
  std::array<rte_mbuf*, kMaxBurst> pkts;
  std::uint64_t last_rx = rte_rdtsc();

  while (!w.stop->load(std::memory_order_acquire)) {
    adopt_snapshot(w);  // two atomic operations; keeps an idle worker from pinning old keys
    // Link down: a memif peer that quit may be unmapping the rings a burst
    // would read (DPDK 22.11's memif faulted there), so wait it out idle.
    const bool link_down = w.link_down != nullptr && w.link_down->load(std::memory_order_relaxed);
    const std::uint16_t n = link_down ? 0 : rte_eth_rx_burst(w.port, w.queue, pkts.data(), w.burst);
    const unsigned sent = w.tx.ring != nullptr && !link_down ? drain_tx(w.tx, w.port, w.queue, w.burst) : 0;
    if (n == 0) {
      ++w.counters.idle_polls;
      if (w.idle_exit_tsc != 0 && rte_rdtsc() - last_rx > w.idle_exit_tsc) {
        w.idle.store(true, std::memory_order_relaxed);
      }
      if (link_down) {
        rte_delay_us_sleep(w.idle_backoff_us != 0 ? w.idle_backoff_us : 100);
      } else if (w.idle_backoff_us != 0 && sent == 0) {
        rte_delay_us_sleep(w.idle_backoff_us);
      }
      continue;
    }
    ++w.counters.rx_bursts;
    last_rx = rte_rdtsc();
    w.guard.clock.read(last_rx, w.guard.state);  // one clock read per burst

    // Written only when it changes: the control lcore reads it, and a store
    // every burst would pull the line back from its cache each time.
    if (w.idle.load(std::memory_order_relaxed)) w.idle.store(false, std::memory_order_relaxed);
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
