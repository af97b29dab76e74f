// The event loop, the virtual network and the metrics of gossipsim.
#include "perf/gossipsim/simulator.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <charconv>
#include <cmath>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <unordered_map>

#include "control/codec.h"
#include "control/engine/engine.h"

namespace gw::sim {
namespace {

using cp::engine::Address;
using cp::engine::Compound;
using cp::engine::Engine;
using cp::engine::EventKind;
using cp::engine::MemberEvent;
using cp::engine::MemberStatus;
using cp::engine::Outgoing;
using cp::engine::Rng;

constexpr std::uint64_t kNever = UINT64_MAX;
constexpr std::uint16_t kPort = 7946;
constexpr double kNsPerS = 1e9;
// Rough heap cost of one member table entry: map node, name, address and expiry
// bookkeeping (used for the deterministic memory estimate only).
constexpr double kTableEntryBytes = 220.0;
// How long a gracefully leaving member keeps running to send its Leave.
constexpr std::uint64_t kLeaveLingerNs = 5'000'000'000ULL;
constexpr std::size_t kMaxZombiesListed = 20;

enum class Kind : std::uint8_t {
  kStart,
  kDeliver,
  kTick,
  kTxDone,
  kCrash,
  kLeave,
  kStallBegin,
  kStallEnd,
  kSample,
  kFailures,
};

struct Event {
  std::uint64_t at = 0;
  std::uint64_t seq = 0;
  std::uint32_t node = 0;
  std::uint32_t aux = 0;
  Kind kind = Kind::kTick;

  // Min-heap on (at, seq): the same inputs pop in the same order.
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

constexpr std::uint32_t kNoNode = UINT32_MAX;

struct Datagram {
  std::vector<std::uint8_t> bytes;
  std::uint32_t from = 0;
  std::uint32_t to = kNoNode;  // while queued for egress
  std::uint8_t cls = 0;
};

enum class State : std::uint8_t { kNotStarted, kUp, kDown };

struct Node {
  std::unique_ptr<Engine> engine;
  State state = State::kNotStarted;
  bool departed = false;  // crashed or leaving: it should leave every view
  bool stall_prone = false;
  bool stalled = false;
  bool tx_busy = false;
  std::uint64_t departed_at = 0;
  std::uint64_t scheduled_tick = kNever;
  std::uint64_t bytes_out = 0;
  std::uint64_t packets_out = 0;
  std::uint64_t bytes_mark = 0;    // at measure_from
  std::uint64_t packets_mark = 0;
  bool marked = false;
  std::uint64_t interval_bytes = 0;
  std::uint64_t queued_bytes = 0;
  std::array<std::deque<std::uint32_t>, 4> egress;
  std::vector<std::uint32_t> inbox;  // deliveries held while stalled
  std::int32_t failure_slot = -1;    // index into tracked failures
};

struct TrackedFailure {
  std::uint32_t node = 0;
  std::uint64_t at = 0;
  std::vector<std::uint64_t> detected_at;  // by steady observer index
  std::vector<bool> aware;                 // knew it as live when it failed
};

std::string node_name(std::uint32_t i) { return "n-" + std::to_string(i); }

Address node_addr(std::uint32_t i) {
  return Address{{10, static_cast<std::uint8_t>(i >> 16), static_cast<std::uint8_t>(i >> 8),
                  static_cast<std::uint8_t>(i)},
                 kPort};
}

std::optional<std::uint32_t> index_of(const Address& a) {
  if (a.ip.size() != 4 || a.ip[0] != 10 || a.port != kPort) return std::nullopt;
  return (std::uint32_t{a.ip[1]} << 16) | (std::uint32_t{a.ip[2]} << 8) | a.ip[3];
}

std::optional<std::uint32_t> index_of(const std::string& name) {
  if (name.size() < 3 || name[0] != 'n' || name[1] != '-') return std::nullopt;
  std::uint32_t v = 0;
  auto [p, ec] = std::from_chars(name.data() + 2, name.data() + name.size(), v);
  if (ec != std::errc() || p != name.data() + name.size()) return std::nullopt;
  return v;
}

Summary summarize(std::vector<double> v) {
  Summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  const std::size_t k = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(v.size())));
  s.p99 = v[std::max<std::size_t>(k, 1) - 1];
  s.max = v.back();
  return s;
}

double heap_in_use() {
  const struct mallinfo2 mi = mallinfo2();
  return static_cast<double>(mi.uordblks + mi.hblkhd);
}

class Simulator {
 public:
  Simulator(const Scenario& s, const SampleHook& hook)
      : sc_(s), hook_(hook), rng_(s.seed * 0x9e3779b97f4a7c15ULL + 17), n_steady_(s.members),
        nodes_(static_cast<std::size_t>(s.members) + s.phantoms.count) {
    r_.scenario = s.name;
    r_.seed = s.seed;
    r_.members = s.members;
    r_.phantoms = s.phantoms.count;
    r_.duration_s = static_cast<double>(s.duration_ns) / kNsPerS;
  }

  Results run() {
    const auto wall0 = std::chrono::steady_clock::now();
    schedule_scenario();
    while (!queue_.empty()) {
      const Event e = queue_.top();
      if (e.at > sc_.duration_ns) break;
      queue_.pop();
      now_ = e.at;
      ++r_.sim_events;
      dispatch(e);
    }
    now_ = sc_.duration_ns;
    finish();
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    r_.perf.wall_s = wall;
    if (wall > 0) {
      r_.perf.sim_events_per_s = static_cast<double>(r_.sim_events) / wall;
      r_.perf.member_events_per_s = static_cast<double>(r_.member_events) / wall;
      r_.perf.simulated_s_per_wall_s = r_.duration_s / wall;
    }
    return std::move(r_);
  }

 private:
  // ---- event queue ----
  void push(std::uint64_t at, Kind kind, std::uint32_t node, std::uint32_t aux = 0) {
    queue_.push(Event{at, seq_++, node, aux, kind});
  }

  double uniform01() { return static_cast<double>(rng_.next() >> 11) * 0x1.0p-53; }

  void schedule_scenario() {
    // Steady members start evenly over join_over; phantoms over their window.
    for (std::uint32_t i = 0; i < n_steady_; ++i) {
      const std::uint64_t at = n_steady_ > 1 ? sc_.join_over_ns * i / n_steady_ : 0;
      push(at, Kind::kStart, i);
    }
    const PhantomSpec& ph = sc_.phantoms;
    for (std::uint32_t k = 0; k < ph.count; ++k) {
      const std::uint64_t at = ph.start_ns + (ph.count > 1 ? ph.over_ns * k / ph.count : 0);
      push(at, Kind::kStart, n_steady_ + k);
    }
    // Stall-prone members: a seeded choice and a random phase each.
    if (sc_.stalls.fraction > 0) {
      const auto n = static_cast<std::uint32_t>(std::llround(sc_.stalls.fraction * n_steady_));
      std::vector<std::uint32_t> order(n_steady_);
      for (std::uint32_t i = 0; i < n_steady_; ++i) order[i] = i;
      rng_.shuffle(order);
      for (std::uint32_t k = 0; k < n && k < n_steady_; ++k) {
        nodes_[order[k]].stall_prone = true;
        push(sc_.stalls.start_ns + rng_.uniform(sc_.stalls.period_ns), Kind::kStallBegin,
             order[k]);
      }
    }
    for (std::uint32_t f = 0; f < sc_.failures.size(); ++f)
      push(sc_.failures[f].at_ns, Kind::kFailures, 0, f);
    for (std::uint64_t t = 0; t <= sc_.duration_ns; t += sc_.sample_interval_ns)
      push(t, Kind::kSample, 0);
  }

  void dispatch(const Event& e) {
    switch (e.kind) {
      case Kind::kStart: start(e.node); break;
      case Kind::kDeliver: deliver(e.node, e.aux); break;
      case Kind::kTick: on_tick(e.node); break;
      case Kind::kTxDone: on_tx_done(e.node, e.aux); break;
      case Kind::kCrash: crash(e.node); break;
      case Kind::kLeave: leave(e.node); break;
      case Kind::kStallBegin: stall_begin(e.node); break;
      case Kind::kStallEnd: stall_end(e.node); break;
      case Kind::kSample: sample(); break;
      case Kind::kFailures: fail_members(sc_.failures[e.aux]); break;
    }
  }

  // ---- members ----
  void start(std::uint32_t i) {
    Node& n = nodes_[i];
    cp::engine::EngineConfig cfg = sc_.engine;
    cfg.name = node_name(i);
    cfg.addr = node_addr(i);
    n.engine = std::make_unique<Engine>(cfg, sc_.seed * 1000003ULL + i * 7919ULL + 1, now_);
    n.state = State::kUp;
    // Seeds: random steady members already up (not departed).
    std::vector<Address> seeds;
    const std::uint32_t pool = std::min(i, n_steady_);
    for (std::uint32_t tries = 0; seeds.size() < sc_.seeds && pool > 0 && tries < 8 * sc_.seeds;
         ++tries) {
      const auto j = static_cast<std::uint32_t>(rng_.uniform(pool));
      if (nodes_[j].state != State::kUp || nodes_[j].departed) continue;
      const Address a = node_addr(j);
      if (std::find(seeds.begin(), seeds.end(), a) == seeds.end()) seeds.push_back(a);
    }
    if (!seeds.empty()) n.engine->join(seeds, now_);
    if (i >= n_steady_) {
      const PhantomSpec& ph = sc_.phantoms;
      push(now_ + ph.min_life_ns + rng_.uniform(ph.max_life_ns - ph.min_life_ns + 1), Kind::kCrash,
           i);
    }
    after(i);
  }

  void fail_members(const FailureSpec& f) {
    std::vector<std::uint32_t> candidates;
    for (std::uint32_t i = 0; i < n_steady_; ++i)
      if (nodes_[i].state == State::kUp && !nodes_[i].departed) candidates.push_back(i);
    rng_.shuffle(candidates);
    for (std::uint32_t k = 0; k < f.count && k < candidates.size(); ++k) {
      const std::uint32_t i = candidates[k];
      nodes_[i].failure_slot = static_cast<std::int32_t>(failures_.size());
      TrackedFailure t{i, now_, std::vector<std::uint64_t>(n_steady_, kNever),
                       std::vector<bool>(n_steady_, false)};
      // Who knew it as live when it failed: only they can detect its failure.
      const std::string name = node_name(i);
      for (std::uint32_t o = 0; o < n_steady_; ++o) {
        if (o == i || nodes_[o].state != State::kUp) continue;
        const cp::engine::Member* m = nodes_[o].engine->member(name);
        t.aware[o] = m != nullptr && !m->is_tombstone();
      }
      failures_.push_back(std::move(t));
      if (f.leave)
        leave(i);
      else
        crash(i);
    }
  }

  void mark_departed(Node& n) {
    if (n.departed) return;
    n.departed = true;
    n.departed_at = now_;
  }

  void leave(std::uint32_t i) {
    Node& n = nodes_[i];
    if (n.state != State::kUp) return;
    mark_departed(n);
    n.engine->leave(now_);
    after(i);
    push(now_ + kLeaveLingerNs, Kind::kCrash, i);
  }

  void crash(std::uint32_t i) {
    Node& n = nodes_[i];
    if (n.state != State::kUp) return;
    mark_departed(n);
    n.state = State::kDown;
    const cp::engine::Counters c = n.engine->counters();
    for (std::size_t k = 0; k < 4; ++k) dead_broadcast_drops_[k] += c.broadcast_drop[k];
    dead_outbox_drops_ += c.outbox_drop_full;
    dead_suspicions_ += c.suspicions;
    dead_refutations_ += c.refutations;
    n.engine.reset();  // a phantom storm must not keep 41,000 dead engines
    for (auto& q : n.egress) {
      for (std::uint32_t slot : q) free_slot(slot);
      q.clear();
    }
    n.queued_bytes = 0;
    for (std::uint32_t slot : n.inbox) free_slot(slot);
    n.inbox.clear();
  }

  void stall_begin(std::uint32_t i) {
    Node& n = nodes_[i];
    if (now_ >= sc_.stalls.end_ns) return;
    push(now_ + sc_.stalls.period_ns, Kind::kStallBegin, i);
    if (n.state != State::kUp) return;
    n.stalled = true;
    push(now_ + sc_.stalls.duration_ns, Kind::kStallEnd, i);
  }

  void stall_end(std::uint32_t i) {
    Node& n = nodes_[i];
    n.stalled = false;
    if (n.state != State::kUp) return;
    // Timers that came due during the stall fire first, then the backlog is
    // read: a starved member sees its probe timeouts before the acks that
    // arrived meanwhile (the slow-member case Lifeguard targets).
    n.scheduled_tick = kNever;
    if (n.engine->next_deadline() <= now_) n.engine->tick(now_);
    std::vector<std::uint32_t> backlog;
    backlog.swap(n.inbox);
    for (std::uint32_t slot : backlog) handle(i, slot);
    after(i);
  }

  // ---- engine I/O ----
  void deliver(std::uint32_t i, std::uint32_t slot) {
    Node& n = nodes_[i];
    if (n.state != State::kUp) {
      free_slot(slot);
      return;
    }
    if (n.stalled) {
      n.inbox.push_back(slot);
      return;
    }
    handle(i, slot);
    after(i);
  }

  void handle(std::uint32_t i, std::uint32_t slot) {
    Datagram& d = pool_[slot];
    const cp::DecodeResult dec = cp::decode(d.bytes);
    const std::uint32_t from = d.from;
    free_slot(slot);
    if (!dec.ok()) {
      ++r_.decode_failures;
      return;
    }
    ++r_.datagrams_delivered;
    nodes_[i].engine->handle(node_addr(from), dec.messages, now_);
  }

  void on_tick(std::uint32_t i) {
    Node& n = nodes_[i];
    if (n.state != State::kUp || n.scheduled_tick != now_) return;
    n.scheduled_tick = kNever;
    if (n.stalled) return;  // stall_end runs the timers
    if (n.engine->next_deadline() <= now_) n.engine->tick(now_);
    after(i);
  }

  // Collects what the engine produced and arms its next timer.
  void after(std::uint32_t i) {
    Node& n = nodes_[i];
    for (MemberEvent& ev : n.engine->take_events()) on_member_event(i, ev);
    for (Outgoing& out : n.engine->take_outbox()) send(i, out);
    if (n.state != State::kUp) return;
    std::uint64_t next = n.engine->next_deadline();
    if (next == kNever) return;
    next = std::max(next, now_);
    if (next < n.scheduled_tick) {
      n.scheduled_tick = next;
      push(next, Kind::kTick, i);
    }
  }

  // ---- network ----
  std::uint32_t alloc_slot() {
    if (!free_.empty()) {
      const std::uint32_t s = free_.back();
      free_.pop_back();
      return s;
    }
    pool_.emplace_back();
    return static_cast<std::uint32_t>(pool_.size() - 1);
  }

  void free_slot(std::uint32_t s) {
    pool_[s].bytes.clear();
    free_.push_back(s);
  }

  void send(std::uint32_t i, const Outgoing& out) {
    const std::uint32_t slot = alloc_slot();
    Datagram& d = pool_[slot];
    d.bytes.clear();
    cp::encode_append(out.messages, d.bytes);
    d.from = i;
    d.cls = static_cast<std::uint8_t>(out.priority);
    const auto to = index_of(out.to);
    r_.max_datagram_bytes = std::max<std::uint64_t>(r_.max_datagram_bytes, d.bytes.size());
    ++r_.datagrams_sent;
    Node& n = nodes_[i];
    if (sc_.network.egress_bytes_per_s == 0) {
      depart(i, slot, to);
      return;
    }
    // Budget queue: strict priority; when full, the lowest class goes first.
    const std::uint64_t size = d.bytes.size();
    while (n.queued_bytes + size > sc_.network.egress_queue_bytes) {
      std::size_t lowest = 4;
      for (std::size_t c = 4; c-- > 0;)
        if (!n.egress[c].empty()) {
          lowest = c;
          break;
        }
      if (lowest == 4 || lowest <= d.cls) {
        ++r_.egress_drops[d.cls];
        free_slot(slot);
        return;
      }
      const std::uint32_t victim = n.egress[lowest].back();
      n.egress[lowest].pop_back();
      n.queued_bytes -= pool_[victim].bytes.size();
      ++r_.egress_drops[lowest];
      free_slot(victim);
    }
    pool_[slot].to = to ? *to : kNoNode;
    n.egress[d.cls].push_back(slot);
    n.queued_bytes += size;
    if (!n.tx_busy) start_tx(i);
  }

  void start_tx(std::uint32_t i) {
    Node& n = nodes_[i];
    for (auto& q : n.egress) {
      if (q.empty()) continue;
      const std::uint32_t slot = q.front();
      q.pop_front();
      const std::uint64_t size = pool_[slot].bytes.size();
      n.queued_bytes -= size;
      n.tx_busy = true;
      const std::uint64_t tx_ns = std::max<std::uint64_t>(
          1, size * 1'000'000'000ULL / sc_.network.egress_bytes_per_s);
      push(now_ + tx_ns, Kind::kTxDone, i, slot);
      return;
    }
  }

  void on_tx_done(std::uint32_t i, std::uint32_t slot) {
    Node& n = nodes_[i];
    n.tx_busy = false;
    const std::uint32_t to = pool_[slot].to;
    if (n.state == State::kUp)
      depart(i, slot, to == kNoNode ? std::nullopt : std::optional<std::uint32_t>(to));
    else
      free_slot(slot);
    if (n.state == State::kUp) start_tx(i);
  }

  bool partitioned(std::uint32_t a, std::uint32_t b) const {
    for (const PartitionSpec& p : sc_.partitions) {
      if (now_ < p.start_ns || now_ >= p.end_ns) continue;
      const auto cut = static_cast<std::uint32_t>(p.fraction * static_cast<double>(n_steady_));
      // Phantoms (indices past the steady members) are on the second side.
      const bool sa = a < cut;
      const bool sb = b < cut;
      if (sa != sb) return true;
    }
    return false;
  }

  // The datagram leaves node i's NIC now.
  void depart(std::uint32_t i, std::uint32_t slot, std::optional<std::uint32_t> to) {
    Node& n = nodes_[i];
    const std::uint64_t size = pool_[slot].bytes.size();
    n.bytes_out += size;
    ++n.packets_out;
    n.interval_bytes += size;
    r_.bytes_sent += size;
    if (!to || *to >= nodes_.size()) {
      free_slot(slot);
      return;
    }
    if ((sc_.network.loss > 0 && uniform01() < sc_.network.loss) || partitioned(i, *to)) {
      ++r_.datagrams_lost;
      free_slot(slot);
      return;
    }
    const double jitter = -std::log1p(-uniform01()) * static_cast<double>(sc_.network.latency_jitter_ns);
    const std::uint64_t at = now_ + sc_.network.latency_base_ns + static_cast<std::uint64_t>(jitter);
    push(at, Kind::kDeliver, *to, slot);
  }

  // ---- metrics ----
  bool steady(std::uint32_t i) const { return i < n_steady_; }

  void set_dead_bit(std::uint32_t subject, std::uint32_t observer) {
    auto& bits = dead_bits_[subject];
    if (bits.empty()) bits.assign((n_steady_ + 63) / 64, 0);
    bits[observer / 64] |= 1ULL << (observer % 64);
  }

  bool dead_bit(std::uint32_t subject, std::uint32_t observer) const {
    auto it = dead_bits_.find(subject);
    return it != dead_bits_.end() && ((it->second[observer / 64] >> (observer % 64)) & 1) != 0;
  }

  void on_member_event(std::uint32_t observer, const MemberEvent& ev) {
    ++r_.member_events;
    ++interval_events_;
    if (!steady(observer)) return;  // phantoms' views do not count
    const auto subject = index_of(ev.node);
    if (!subject || *subject >= nodes_.size()) return;
    const Node& s = nodes_[*subject];
    switch (ev.kind) {
      case EventKind::kFailed:
      case EventKind::kLeave:
        if (s.departed) {
          set_dead_bit(*subject, observer);
          if (s.failure_slot >= 0) {
            auto& at = failures_[static_cast<std::size_t>(s.failure_slot)].detected_at[observer];
            at = std::min(at, now_);
          }
        } else if (ev.kind == EventKind::kFailed) {
          ++r_.false_positives;
          if (!s.stall_prone) ++r_.false_positives_healthy;
          if (partitioned(observer, *subject)) ++r_.false_positives_partition;
        }
        break;
      case EventKind::kJoin:
        // The dead stay dead: a member gone for good that comes back alive where
        // it was already declared gone is a resurrection.
        if (s.departed && dead_bit(*subject, observer)) ++r_.resurrections;
        // Learning of a member only after it is gone: stale gossip still moving.
        if (s.departed) ++r_.joins_after_departure;
        break;
      case EventKind::kUpdate:
        break;
    }
  }

  std::uint32_t expected_view() const {
    std::uint32_t n = 0;
    for (const Node& x : nodes_)
      if (x.state == State::kUp && !x.departed) ++n;
    return n;
  }

  void sample() {
    Sample s;
    s.t_s = static_cast<double>(now_) / kNsPerS;
    s.expected_view = expected_view();
    std::uint64_t bytes = 0;
    std::uint64_t packets = 0;
    std::uint64_t views = 0;
    std::uint64_t tables = 0;
    std::uint32_t observers = 0;
    s.view_min = UINT32_MAX;
    s.converged = true;
    const double interval_s = static_cast<double>(sc_.sample_interval_ns) / kNsPerS;
    const double budget = static_cast<double>(sc_.network.egress_bytes_per_s) * interval_s;
    for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
      Node& n = nodes_[i];
      if (n.state == State::kUp) ++s.up;
      bytes += n.bytes_out - prev_bytes_[i];
      packets += n.packets_out - prev_packets_[i];
      prev_bytes_[i] = n.bytes_out;
      prev_packets_[i] = n.packets_out;
      if (now_ > 0) {
        r_.egress_peak_interval_bytes_per_s = std::max(
            r_.egress_peak_interval_bytes_per_s, static_cast<double>(n.interval_bytes) / interval_s);
        // One datagram may straddle the interval edge.
        if (budget > 0 && static_cast<double>(n.interval_bytes) >
                              budget + 2.0 * static_cast<double>(std::max<std::uint64_t>(
                                                       sc_.engine.max_packet_bytes,
                                                       r_.max_datagram_bytes)))
          ++r_.budget_violations;
      }
      if (!n.marked && now_ >= sc_.measure_from_ns && n.state == State::kUp) {
        n.marked = true;
        n.bytes_mark = n.bytes_out;
        n.packets_mark = n.packets_out;
      }
      if (n.state != State::kUp || !steady(i) || n.departed) continue;
      const std::size_t live = n.engine->num_live();
      const std::size_t table = n.engine->table().size();
      r_.table_entries_max = std::max<std::uint64_t>(r_.table_entries_max, table);
      views += live;
      tables += table;
      ++observers;
      s.view_min = std::min<std::uint32_t>(s.view_min, static_cast<std::uint32_t>(live));
      s.view_max = std::max<std::uint32_t>(s.view_max, static_cast<std::uint32_t>(live));
      if (live != s.expected_view) s.converged = false;
    }
    if (sc_.network.members_per_link > 0 && now_ > 0) {
      const double cap = static_cast<double>(sc_.network.link_capacity_bytes_per_s) * interval_s;
      for (std::size_t first = 0; first < n_steady_; first += sc_.network.members_per_link) {
        std::uint64_t link = 0;
        const std::size_t last = std::min<std::size_t>(n_steady_, first + sc_.network.members_per_link);
        for (std::size_t i = first; i < last; ++i) link += nodes_[i].interval_bytes;
        const double frac = static_cast<double>(link) / cap;
        s.link_fraction_max = std::max(s.link_fraction_max, frac);
        link_fraction_sum_ += frac;
        ++link_fraction_n_;
      }
      r_.link_fraction_max = std::max(r_.link_fraction_max, s.link_fraction_max);
    }
    for (Node& n : nodes_) n.interval_bytes = 0;
    if (observers == 0) {
      s.view_min = 0;
      s.converged = false;
    } else {
      s.view_mean = static_cast<double>(views) / observers;
      s.table_mean = static_cast<double>(tables) / observers;
    }
    if (s.up > 0 && now_ > 0) {
      s.egress_bytes_per_member_s = static_cast<double>(bytes) / s.up / interval_s;
      s.egress_packets_per_member_s = static_cast<double>(packets) / s.up / interval_s;
    }
    s.member_events = interval_events_;
    interval_events_ = 0;
    if (s.converged && r_.first_converged_s < 0 && now_ >= sc_.join_over_ns)
      r_.first_converged_s = s.t_s;
    std::uint64_t heal = 0;
    for (const PartitionSpec& p : sc_.partitions) heal = std::max(heal, p.end_ns);
    if (heal > 0 && now_ >= heal && s.converged && r_.converged_after_heal_s < 0)
      r_.converged_after_heal_s = static_cast<double>(now_ - heal) / kNsPerS;
    // mallinfo2 walks the arenas: not every sample.
    const double heap = ++samples_ % kHeapEvery == 1 ? heap_in_use() : 0;
    if (heap > r_.perf.heap_peak_bytes) {
      r_.perf.heap_peak_bytes = heap;
      if (s.up > 0) r_.perf.heap_bytes_per_member = heap / s.up;
    }
    r_.table_bytes_per_member_est =
        std::max(r_.table_bytes_per_member_est, s.table_mean * kTableEntryBytes);
    r_.series.push_back(s);
    if (hook_) hook_(s);
  }

  void finish() {
    // Egress per steady member that was up for the whole measured window.
    std::vector<double> bps;
    std::vector<double> pps;
    const double window_s = static_cast<double>(sc_.duration_ns - sc_.measure_from_ns) / kNsPerS;
    for (std::uint32_t i = 0; i < n_steady_; ++i) {
      const Node& n = nodes_[i];
      if (!n.marked || n.state != State::kUp || n.departed) continue;
      bps.push_back(static_cast<double>(n.bytes_out - n.bytes_mark) / window_s);
      pps.push_back(static_cast<double>(n.packets_out - n.packets_mark) / window_s);
    }
    r_.egress_bytes_per_s = summarize(bps);
    r_.egress_packets_per_s = summarize(pps);

    // Detection: over the steady members still up (the observers).
    std::vector<std::uint32_t> observers;
    for (std::uint32_t i = 0; i < n_steady_; ++i)
      if (nodes_[i].state == State::kUp && !nodes_[i].departed) observers.push_back(i);
    std::vector<double> firsts;
    std::vector<double> p99s;
    std::vector<double> alls;
    for (const TrackedFailure& f : failures_) {
      Detection d;
      d.node = node_name(f.node);
      d.failed_at_s = static_cast<double>(f.at) / kNsPerS;
      std::vector<double> lat;
      for (std::uint32_t o : observers) {
        if (!f.aware[o]) {
          ++d.unaware;
          continue;
        }
        ++d.observers;
        if (f.detected_at[o] != kNever) lat.push_back(static_cast<double>(f.detected_at[o] - f.at) / kNsPerS);
      }
      d.detected = static_cast<std::uint32_t>(lat.size());
      std::sort(lat.begin(), lat.end());
      if (!lat.empty()) {
        d.first_s = lat.front();
        firsts.push_back(d.first_s);
        const std::size_t k = static_cast<std::size_t>(std::ceil(0.99 * d.observers));
        if (k >= 1 && k <= lat.size()) {
          d.p99_s = lat[k - 1];
          p99s.push_back(d.p99_s);
        }
      }
      if (d.detected == d.observers && !lat.empty()) {
        d.all_s = lat.back();
        alls.push_back(d.all_s);
      } else {
        ++r_.undetected;
      }
      r_.detections.push_back(d);
    }
    r_.detection_first_s = summarize(firsts);
    r_.detection_p99_s = summarize(p99s);
    r_.detection_all_s = summarize(alls);

    const double member_hours =
        static_cast<double>(observers.size()) * r_.duration_s / 3600.0;
    if (member_hours > 0)
      r_.false_positives_per_member_hour = static_cast<double>(r_.false_positives) / member_hours;

    // Final views, and gone members that some steady view still holds live.
    const std::uint32_t expected = expected_view();
    r_.final_expected_view = expected;
    r_.final_view_min = UINT32_MAX;
    r_.converged_at_end = !observers.empty();
    for (std::uint32_t o : observers) {
      const Engine& e = *nodes_[o].engine;
      const auto live = static_cast<std::uint32_t>(e.num_live());
      r_.final_view_min = std::min(r_.final_view_min, live);
      r_.final_view_max = std::max(r_.final_view_max, live);
      bool exact = live == expected;
      for (const auto& [name, m] : e.table().all()) {
        if (m.is_tombstone()) continue;
        const auto j = index_of(name);
        if (!j || *j >= nodes_.size() || nodes_[*j].departed || nodes_[*j].state != State::kUp) {
          ++r_.zombies_at_end;
          if (r_.zombies.size() < kMaxZombiesListed)
            r_.zombies.push_back(Zombie{node_name(o), name, m.status == MemberStatus::kSuspect,
                                        m.incarnation, static_cast<double>(m.state_change_ns) / kNsPerS,
                                        j && *j < nodes_.size() ? static_cast<double>(nodes_[*j].departed_at) / kNsPerS : -1.0});
          exact = false;
        }
      }
      if (!exact) r_.converged_at_end = false;
    }
    if (observers.empty()) r_.final_view_min = 0;

    for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
      if (!nodes_[i].engine) continue;
      const cp::engine::Counters c = nodes_[i].engine->counters();
      for (std::size_t k = 0; k < 4; ++k) r_.broadcast_drops[k] += c.broadcast_drop[k];
      r_.outbox_drops += c.outbox_drop_full;
      r_.suspicions += c.suspicions;
      r_.refutations += c.refutations;
    }
    r_.suspicions += dead_suspicions_;
    r_.refutations += dead_refutations_;
    // Crashed engines are gone with their counters; collected at crash time.
    for (std::size_t k = 0; k < 4; ++k) r_.broadcast_drops[k] += dead_broadcast_drops_[k];
    r_.outbox_drops += dead_outbox_drops_;
    r_.urgent_drops = r_.broadcast_drops[0];
    if (link_fraction_n_ > 0) r_.link_fraction_mean = link_fraction_sum_ / static_cast<double>(link_fraction_n_);
  }

  const Scenario& sc_;
  const SampleHook& hook_;
  Rng rng_;
  std::uint32_t n_steady_;
  std::vector<Node> nodes_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  std::uint64_t seq_ = 0;
  std::uint64_t now_ = 0;
  std::vector<Datagram> pool_;
  std::vector<std::uint32_t> free_;
  std::vector<TrackedFailure> failures_;
  std::unordered_map<std::uint32_t, std::vector<std::uint64_t>> dead_bits_;
  std::vector<std::uint64_t> prev_bytes_ = std::vector<std::uint64_t>(nodes_.size(), 0);
  std::vector<std::uint64_t> prev_packets_ = std::vector<std::uint64_t>(nodes_.size(), 0);
  std::uint64_t interval_events_ = 0;
  std::uint64_t samples_ = 0;
  static constexpr std::uint64_t kHeapEvery = 10;
  double link_fraction_sum_ = 0;
  std::uint64_t link_fraction_n_ = 0;
  std::array<std::uint64_t, 4> dead_broadcast_drops_ = {};
  std::uint64_t dead_outbox_drops_ = 0;
  std::uint64_t dead_suspicions_ = 0;
  std::uint64_t dead_refutations_ = 0;
  Results r_;
};

}  // namespace

Results run_scenario(const Scenario& scenario, const SampleHook& on_sample) {
  return Simulator(scenario, on_sample).run();
}

std::vector<std::string> check_expectations(const Scenario& s, const Results& r) {
  std::vector<std::string> bad;
  const ExpectSpec& e = s.expect;
  if (e.converged && !r.converged_at_end)
    bad.push_back("converged: views at the end are " + std::to_string(r.final_view_min) + ".." +
                  std::to_string(r.final_view_max) + ", expected exactly " +
                  std::to_string(r.final_expected_view) + " (zombies " +
                  std::to_string(r.zombies_at_end) + ")");
  if (e.no_resurrection && (r.resurrections != 0 || r.zombies_at_end != 0))
    bad.push_back("no_resurrection: " + std::to_string(r.resurrections) + " resurrections, " +
                  std::to_string(r.zombies_at_end) + " zombies at the end");
  if (e.no_urgent_drop && (r.urgent_drops != 0 || r.egress_drops[0] != 0))
    bad.push_back("no_urgent_drop: " + std::to_string(r.urgent_drops) + " broadcast, " +
                  std::to_string(r.egress_drops[0]) + " egress");
  if (e.budget_respected && r.budget_violations != 0)
    bad.push_back("budget_respected: " + std::to_string(r.budget_violations) + " node-intervals over budget");
  if (e.all_failures_detected && r.undetected != 0)
    bad.push_back("all_failures_detected: " + std::to_string(r.undetected) + " failures not seen by every member");
  if (e.max_false_positives >= 0 &&
      r.false_positives > static_cast<std::uint64_t>(e.max_false_positives))
    bad.push_back("max_false_positives: " + std::to_string(r.false_positives) + " > " +
                  std::to_string(e.max_false_positives));
  return bad;
}

}  // namespace gw::sim
