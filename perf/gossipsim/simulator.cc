// The event loop, the virtual network and the metrics of gossipsim.
#include "perf/gossipsim/simulator.h"

#include <malloc.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <queue>
#include <unordered_map>

#include "control/codec.h"
#include "control/engine/engine.h"
#include "control/host/egress_shaper.h"
#include "crypto/wire_header.h"
#include "dataplane/api/handoff.h"

namespace gw::sim {

void EngineTotals::add(const cp::engine::Counters& c) {
  for (std::size_t i = 0; i < kCount; ++i) values[i] += c.*cp::engine::kCounterInfo[i].field;
}

void EngineTotals::add(const EngineTotals& o) {
  for (std::size_t i = 0; i < kCount; ++i) values[i] += o.values[i];
}

void EngineTotals::subtract(const EngineTotals& o) {
  for (std::size_t i = 0; i < kCount; ++i) values[i] -= o.values[i];
}

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
// One member table entry with its indexes (member_table.h), identities shared
// (used for the deterministic memory estimate; the measured figures are in
// Results::Perf).
constexpr double kTableEntryBytes = static_cast<double>(cp::engine::MemberTable::kEntryBytes);
// How long a gracefully leaving member keeps running to send its Leave.
constexpr std::uint64_t kLeaveLingerNs = 5'000'000'000ULL;
constexpr std::size_t kMaxZombiesListed = 20;
constexpr std::size_t kTypes = cp::engine::kMessageTypes;
static_assert(kWireOverheadBytes == crypto::kHeaderBytes + crypto::kTagBytes);

enum class Kind : std::uint8_t {
  kStart,
  kDeliver,
  kTick,
  kRelease,
  kRestart,
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

// A datagram in flight: the messages the sender's engine gave it (sized
// exactly by cp::encoded_size at the sender), and with
// Scenario::decode_at_receiver their codec bytes, which the receiver decodes
// instead (the same messages: a test runs scenarios both ways).
struct Datagram {
  Compound messages;
  std::vector<std::uint8_t> bytes;
  std::uint32_t from = 0;
};

enum class State : std::uint8_t { kNotStarted, kUp, kDown };

class Simulator;

// What a member's shaper queues: the messages of one datagram (its size the
// shaper knows) and, with Scenario::decode_at_receiver, their codec bytes.
struct Parcel {
  Compound messages;
  std::vector<std::uint8_t> bytes;
};
using Shaper = cp::EgressShaper<Parcel>;

// What a member's shaper transmits goes onto the virtual network.
class NodeSink final : public cp::ShaperSink<Parcel> {
 public:
  NodeSink(Simulator& sim, std::uint32_t node) : sim_(sim), node_(node) {}
  bool send(const dp::Endpoint& to, crypto::PriorityClass cls, Parcel& parcel, std::size_t len) noexcept override;

 private:
  Simulator& sim_;
  std::uint32_t node_;
};

struct TypeCount {
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;    // wire
  std::uint64_t payload = 0;  // codec
};

struct Node {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<NodeSink> sink;  // declared before the shaper: outlives it
  std::unique_ptr<Shaper> shaper;
  State state = State::kNotStarted;
  bool departed = false;  // crashed or leaving: it should leave every view
  bool stall_prone = false;
  bool stalled = false;
  bool interrupted = false;            // went down inside the measured window
  std::uint32_t lives = 0;             // starts so far
  std::uint64_t life_incarnation = 0;  // initial incarnation of the current life
  std::uint64_t departed_at = 0;
  std::uint64_t started_at = 0;  // of the current life
  std::uint64_t scheduled_tick = kNever;
  std::uint64_t release_at = kNever;
  // Something was submitted to the shaper or released since arm_release last
  // looked (or the shaper is new).
  bool shaper_changed = true;
  // The shaper had datagrams waiting when arm_release last looked.
  bool shaper_waiting = false;
  std::uint64_t bytes_out = 0;    // wire
  std::uint64_t payload_out = 0;  // codec
  std::uint64_t packets_out = 0;
  std::uint64_t bytes_mark = 0;  // at measure_from
  std::uint64_t payload_mark = 0;
  std::uint64_t packets_mark = 0;
  bool marked = false;
  std::uint64_t interval_bytes = 0;
  std::vector<std::uint32_t> inbox;  // deliveries held while stalled
  std::int32_t failure_slot = -1;    // index into tracked failures
  // The member's host clock (Scenario::clocks): local = offset + t + t * drift.
  std::uint64_t clock_offset = 0;
  std::int64_t drift_ppb = 0;
  std::uint64_t engine_last = 0;  // the last time its engine was handed
};

struct Batch {
  std::vector<std::uint32_t> members;
  std::uint64_t restarted_at = kNever;
  double all_alive_after_s = -1;
};

struct TrackedFailure {
  std::uint32_t node = 0;
  std::uint64_t at = 0;
  std::vector<std::uint64_t> detected_at;  // by steady observer index
  std::vector<bool> aware;                 // knew it as live when it failed
};

std::string node_name(std::uint32_t i) { return "n-" + std::to_string(i); }

Address node_addr(std::uint32_t i) {
  return Address{
      {10, static_cast<std::uint8_t>(i >> 16), static_cast<std::uint8_t>(i >> 8), static_cast<std::uint8_t>(i)}, kPort};
}

std::optional<std::uint32_t> index_of(const std::string& name) {
  if (name.size() < 3 || name[0] != 'n' || name[1] != '-') return std::nullopt;
  std::uint32_t v = 0;
  auto [p, ec] = std::from_chars(name.data() + 2, name.data() + name.size(), v);
  if (ec != std::errc() || p != name.data() + name.size()) return std::nullopt;
  return v;
}

// Charges a datagram's messages to their types: each message gets the bytes
// it adds to the encoded Compound (tag, length and body: they sum to the codec
// bytes); the packet and the header and tag go to the first message.
void charge_types(std::array<TypeCount, kTypes>& t, const Compound& messages) {
  bool first = true;
  for (const cp::engine::Message& m : messages) {
    TypeCount& c = t[m.index()];
    const std::size_t bytes = cp::encoded_size(m);
    c.payload += bytes;
    c.bytes += bytes;
    if (first) {
      ++c.packets;
      c.bytes += kWireOverheadBytes;
      first = false;
    }
  }
}

std::optional<std::uint32_t> index_of(const dp::Endpoint& e) {
  if (e.ip_len != 4 || e.ip[0] != 10 || e.port != kPort) return std::nullopt;
  return (std::uint32_t{e.ip[1]} << 16) | (std::uint32_t{e.ip[2]} << 8) | e.ip[3];
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
      : sc_(s),
        hook_(hook),
        rng_(s.seed * 0x9e3779b97f4a7c15ULL + 17),
        n_steady_(s.members),
        nodes_(static_cast<std::size_t>(s.members) + s.phantoms.count) {
    r_.scenario = s.name;
    r_.seed = s.seed;
    r_.members = s.members;
    r_.phantoms = s.phantoms.count;
    r_.duration_s = static_cast<double>(s.duration_ns) / kNsPerS;
    // Host clocks from a generator of their own: the other draws are the
    // same whatever the clocks.
    Rng clocks(s.seed * 0xd1342543de82ef95ULL + 0x636c6f636bULL);
    const auto drift_max_ppb = static_cast<std::int64_t>(std::llround(s.clocks.drift_max_ppm * 1000.0));
    for (Node& n : nodes_) {
      n.clock_offset = s.clocks.offset_max_ns > 0 ? clocks.uniform(s.clocks.offset_max_ns + 1) : 0;
      n.drift_ppb = drift_max_ppb > 0 ? static_cast<std::int64_t>(clocks.uniform(2 * drift_max_ppb + 1)) - drift_max_ppb
                                      : 0;
      r_.clocks.push_back(Results::Clock{n.clock_offset, n.drift_ppb});
    }
  }

  // Member i's own clock at global time t (what its engine is handed).
  std::uint64_t local_at(std::uint32_t i, std::uint64_t t) const {
    const Node& n = nodes_[i];
    const auto whole = static_cast<std::int64_t>(t / 1'000'000'000ULL);
    const auto rem = static_cast<std::int64_t>(t % 1'000'000'000ULL);
    // Exact to the nanosecond (truncated), and never decreasing in t: the
    // drift is above -1 (|drift| <= 1 %).
    const std::int64_t skew = whole * n.drift_ppb + rem * n.drift_ppb / 1'000'000'000LL;
    return n.clock_offset + static_cast<std::uint64_t>(static_cast<std::int64_t>(t) + skew);
  }
  std::uint64_t local(std::uint32_t i) const { return local_at(i, now_); }

  // Member i's clock now, for its engine: counted if it ever went back from
  // the last time that engine was handed (a restarted engine starts afresh).
  std::uint64_t engine_now(std::uint32_t i) {
    Node& n = nodes_[i];
    const std::uint64_t t = local(i);
    if (t < n.engine_last) ++r_.clock_regressions;
    n.engine_last = t;
    return t;
  }

  // The global time at which member i's clock read `at` (an instant its
  // engine recorded), to the nanosecond's estimate; 0 before its clock began.
  std::uint64_t global_past(std::uint32_t i, std::uint64_t at) const {
    const Node& n = nodes_[i];
    if (at <= n.clock_offset) return 0;
    const long double rate = 1.0L + static_cast<long double>(n.drift_ppb) / 1e9L;
    return static_cast<std::uint64_t>(static_cast<long double>(at - n.clock_offset) / rate);
  }

  // The first global time >= now at which member i's clock reads at least
  // `at` (a deadline its engine gave): kNever stays kNever.
  std::uint64_t global_at(std::uint32_t i, std::uint64_t at) const {
    if (at == kNever) return kNever;
    if (at <= local(i)) return now_;
    const Node& n = nodes_[i];
    const long double rate = 1.0L + static_cast<long double>(n.drift_ppb) / 1e9L;
    auto t = static_cast<std::uint64_t>(static_cast<long double>(at - n.clock_offset) / rate);
    t = std::max(t, now_);
    // The estimate is within a few ns: step to the exact first instant.
    while (local_at(i, t) < at) ++t;
    while (t > now_ && local_at(i, t - 1) >= at) --t;
    return t;
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
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
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
        push(sc_.stalls.start_ns + rng_.uniform(sc_.stalls.period_ns), Kind::kStallBegin, order[k]);
      }
    }
    for (std::uint32_t f = 0; f < sc_.failures.size(); ++f) push(sc_.failures[f].at_ns, Kind::kFailures, 0, f);
    for (std::uint64_t t = 0; t <= sc_.duration_ns; t += sc_.sample_interval_ns) push(t, Kind::kSample, 0);
  }

  void dispatch(const Event& e) {
    switch (e.kind) {
      case Kind::kStart:
        start(e.node);
        break;
      case Kind::kDeliver:
        deliver(e.node, e.aux);
        break;
      case Kind::kTick:
        on_tick(e.node);
        break;
      case Kind::kRelease:
        on_release(e.node);
        break;
      case Kind::kRestart:
        restart_batch(e.aux);
        break;
      case Kind::kCrash:
        // A scheduled end (phantom lifetime, leave linger) of this life only.
        if (e.aux == nodes_[e.node].lives) crash(e.node);
        break;
      case Kind::kLeave:
        leave(e.node);
        break;
      case Kind::kStallBegin:
        stall_begin(e.node);
        break;
      case Kind::kStallEnd:
        stall_end(e.node);
        break;
      case Kind::kSample:
        sample();
        break;
      case Kind::kFailures:
        fail_members(sc_.failures[e.aux]);
        break;
    }
  }

  // ---- members ----
  std::vector<Address> pick_seeds(std::uint32_t i, bool restart) {
    std::vector<Address> seeds;
    if (sc_.seed_mode == SeedMode::kShared) {
      // One seed list for everyone, as configured: members 0..seeds-1 whether
      // up or not. The seeds themselves join the seeds started before them (a
      // restarted seed: all the others).
      const std::uint32_t shared = std::min(sc_.seeds, n_steady_);
      for (std::uint32_t k = 0; k < shared; ++k) {
        if (k == i || (i < shared && !restart && k > i)) continue;
        seeds.push_back(node_addr(k));
      }
      return seeds;
    }
    // Random steady members already up (not departed): earlier ones on a
    // first start, any other on a restart.
    const std::uint32_t pool = restart ? n_steady_ : std::min(i, n_steady_);
    for (std::uint32_t tries = 0; seeds.size() < sc_.seeds && pool > 0 && tries < 8 * sc_.seeds; ++tries) {
      const auto j = static_cast<std::uint32_t>(rng_.uniform(pool));
      if (j == i || nodes_[j].state != State::kUp || nodes_[j].departed) continue;
      const Address a = node_addr(j);
      if (std::find(seeds.begin(), seeds.end(), a) == seeds.end()) seeds.push_back(a);
    }
    return seeds;
  }

  void start(std::uint32_t i) {
    Node& n = nodes_[i];
    if (n.state == State::kUp) return;
    const bool restart = n.lives > 0;
    cp::engine::EngineConfig cfg = sc_.engine;
    cfg.name = node_name(i);
    cfg.addr = node_addr(i);
    // Like the gateway, which starts at its host's Unix time: a new life
    // outranks the old one's tombstone. Read from the member's own clock (the
    // host's, kept across the restart), not the simulator's: no other member
    // needs to agree with it.
    cfg.initial_incarnation = restart ? local(i) / 1'000'000'000ULL + 1 : 0;
    // Like the gateway, which gives the engine membership.egress_bytes_per_sec.
    cfg.egress_bytes_per_sec = sc_.network.egress_bytes_per_s;
    // Like the gateway, which announces its build (control/gateway/
    // engine_config.h): one of its length, fixed so that a run does not
    // depend on the checkout it was built from.
    cfg.build = "0.1.0+000000000000";
    n.engine = std::make_unique<Engine>(
        cfg, sc_.seed * 1000003ULL + i * 7919ULL + 1 + std::uint64_t{n.lives} * 104729ULL, engine_now(i));
    ++n.lives;
    n.life_incarnation = cfg.initial_incarnation;
    n.started_at = now_;
    n.state = State::kUp;
    n.departed = false;
    n.scheduled_tick = kNever;
    n.release_at = kNever;
    const cp::ShaperConfig shaper{sc_.network.egress_bytes_per_s, sc_.network.egress_burst_bytes,
                                  sc_.network.egress_queue_bytes, sc_.network.egress_max_age_ns};
    n.sink = std::make_unique<NodeSink>(*this, i);
    n.shaper = std::make_unique<Shaper>(shaper, *n.sink, now_);
    n.shaper_changed = true;
    n.shaper_waiting = false;
    const std::vector<Address> seeds = pick_seeds(i, restart);
    if (!seeds.empty()) n.engine->join(seeds, engine_now(i));
    if (i >= n_steady_) {
      const PhantomSpec& ph = sc_.phantoms;
      push(now_ + ph.min_life_ns + rng_.uniform(ph.max_life_ns - ph.min_life_ns + 1), Kind::kCrash, i, n.lives);
    }
    after(i);
  }

  void fail_members(const FailureSpec& f) {
    std::vector<std::uint32_t> candidates;
    for (std::uint32_t i = 0; i < n_steady_; ++i)
      if (nodes_[i].state == State::kUp && !nodes_[i].departed) candidates.push_back(i);
    rng_.shuffle(candidates);
    Batch batch;
    for (std::uint32_t k = 0; k < f.count && k < candidates.size(); ++k) {
      const std::uint32_t i = candidates[k];
      nodes_[i].failure_slot = static_cast<std::int32_t>(failures_.size());
      TrackedFailure t{i, now_, std::vector<std::uint64_t>(n_steady_, kNever), std::vector<bool>(n_steady_, false)};
      // Who knew it as live when it failed: only they can detect its failure.
      // A probationer is not in its holder's view (no join event was ever
      // reported), so its holder reports no failure either: it is dropped
      // when its proof pings go unanswered or the news of its death comes.
      const std::string name = node_name(i);
      for (std::uint32_t o = 0; o < n_steady_; ++o) {
        if (o == i || nodes_[o].state != State::kUp) continue;
        const cp::engine::Member* m = nodes_[o].engine->member(name);
        t.aware[o] = m != nullptr && !m->is_tombstone() && !m->probation;
      }
      failures_.push_back(std::move(t));
      batch.members.push_back(i);
      if (f.leave)
        leave(i);
      else
        crash(i);
    }
    if (batch.members.empty()) return;
    const std::string what = (f.leave ? "leave " : "crash ") + std::to_string(batch.members.size());
    r_.markers.push_back(Marker{what, static_cast<double>(now_) / kNsPerS, static_cast<double>(now_) / kNsPerS});
    if (f.restart_after_ns) {
      push(now_ + *f.restart_after_ns, Kind::kRestart, 0, static_cast<std::uint32_t>(batches_.size()));
      batches_.push_back(std::move(batch));
    }
  }

  void restart_batch(std::uint32_t b) {
    Batch& batch = batches_[b];
    batch.restarted_at = now_;
    for (std::uint32_t i : batch.members) {
      crash(i);  // a leaving member still lingering stops now
      start(i);
    }
    r_.markers.push_back(Marker{"restart " + std::to_string(batch.members.size()), static_cast<double>(now_) / kNsPerS,
                                static_cast<double>(now_) / kNsPerS});
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
    n.engine->leave(engine_now(i));
    after(i);
    push(now_ + kLeaveLingerNs, Kind::kCrash, i, n.lives);
  }

  void crash(std::uint32_t i) {
    Node& n = nodes_[i];
    if (n.state != State::kUp) return;
    mark_departed(n);
    n.state = State::kDown;
    if (n.marked) n.interrupted = true;
    if (i >= n_steady_) last_phantom_death_ = std::max(last_phantom_death_, now_);
    const cp::engine::Counters c = n.engine->counters();
    for (std::size_t k = 0; k < 4; ++k) dead_broadcast_drops_[k] += c.broadcast_drop[k];
    dead_outbox_drops_ += c.outbox_drop_full;
    dead_suspicions_ += c.suspicions;
    dead_refutations_ += c.refutations;
    dead_totals_.add(c);
    for (std::size_t k = 0; k < crypto::kClassCount; ++k) {
      dead_shaper_drops_[k] += n.shaper->counters()[k].dropped;
      dead_shaper_deferred_[k] += n.shaper->counters()[k].deferred;
      dead_shaper_expired_[k] += n.shaper->counters()[k].expired;
    }
    n.engine.reset();  // a phantom storm must not keep 41,000 dead engines
    n.shaper.reset();  // its queue dies with it
    n.sink.reset();
    n.shaper_waiting = false;
    n.release_at = kNever;
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
    if (n.engine->next_deadline() <= local(i)) tick(i);
    std::vector<std::uint32_t> backlog;
    backlog.swap(n.inbox);
    for (std::uint32_t slot : backlog) handle(i, slot);
    // The shaper runs on the stalled control lcore too: it resumes now.
    n.shaper->release(now_);
    n.shaper_changed = true;
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
    const std::uint32_t from = d.from;
    Compound messages;
    if (sc_.decode_at_receiver) {
      cp::DecodeResult dec = cp::decode(d.bytes);
      if (!dec.ok()) {
        free_slot(slot);
        ++r_.decode_failures;
        return;
      }
      messages = std::move(dec.messages);
    } else {
      messages = std::move(d.messages);
    }
    free_slot(slot);
    ++r_.datagrams_delivered;
    for (const cp::engine::Message& m : messages) {
      const auto* sync = std::get_if<cp::engine::SyncRequest>(&m);
      if (sync == nullptr || !sync->join) continue;
      ++r_.join_requests;
      if (i < sc_.seeds) ++r_.join_requests_at_seeds;
    }
    nodes_[i].engine->handle(node_addr(from), messages, engine_now(i));
  }

  // Runs member i's timers on its own clock; it never goes back.
  void tick(std::uint32_t i) {
    Node& n = nodes_[i];
    n.engine->tick(engine_now(i));
  }

  void on_tick(std::uint32_t i) {
    Node& n = nodes_[i];
    if (n.state != State::kUp || n.scheduled_tick != now_) return;
    n.scheduled_tick = kNever;
    if (n.stalled) return;  // stall_end runs the timers
    if (n.engine->next_deadline() <= local(i)) tick(i);
    after(i);
  }

  // Collects what the engine produced and arms its next timer.
  void after(std::uint32_t i) {
    Node& n = nodes_[i];
    n.engine->take_events(events_scratch_);
    for (MemberEvent& ev : events_scratch_) on_member_event(i, ev);
    n.engine->take_outbox(outbox_scratch_);
    for (Outgoing& out : outbox_scratch_) send(i, std::move(out));
    if (n.state != State::kUp) return;
    arm_release(i);
    // The engine's deadline is on its own clock.
    std::uint64_t next = global_at(i, n.engine->next_deadline());
    if (next == kNever) return;
    next = std::max(next, now_);
    if (next < n.scheduled_tick) {
      n.scheduled_tick = next;
      push(next, Kind::kTick, i);
    }
  }

  // ---- egress: the real shaper, then the network ----
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
    pool_[s].messages.clear();
    free_.push_back(s);
  }

  // The engine's datagram, sealed-sized (its exact codec size with the
  // header and tag), into the member's shaper.
  void send(std::uint32_t i, Outgoing&& out) {
    Node& n = nodes_[i];
    ++r_.datagrams_sent;
    // The codec bytes themselves only when the receiver decodes them.
    Parcel parcel{std::move(out.messages), {}};
    std::size_t codec_bytes;
    if (sc_.decode_at_receiver) {
      cp::encode_append(parcel.messages, parcel.bytes);
      codec_bytes = parcel.bytes.size();
    } else {
      codec_bytes = cp::encoded_size(parcel.messages);
    }
    const std::size_t len = codec_bytes + kWireOverheadBytes;
    r_.max_datagram_bytes = std::max<std::uint64_t>(r_.max_datagram_bytes, codec_bytes);
    n.shaper->submit(cp::to_endpoint(out.to), out.priority, std::move(parcel), len, now_);
    // What a member's queue holds is what the simulator holds for it: the
    // figure that shows the default 4 MiB queue held in bounded memory.
    r_.egress_queue_bytes_max = std::max(r_.egress_queue_bytes_max, n.shaper->queued_bytes());
    n.shaper_changed = true;
  }

  // Arms a release for when the shaper's head datagram becomes affordable,
  // as the gateway's control loop would find on its next pass.
  void arm_release(std::uint32_t i) {
    Node& n = nodes_[i];
    if (!n.shaper) return;
    // Nothing submitted or released since the last look, which found nothing
    // waiting: this one would find the same, and reading the shaper is a cache
    // miss on every event of ten thousand members.
    if (!n.shaper_changed && !n.shaper_waiting) return;
    n.shaper_changed = false;
    const std::uint64_t next = n.shaper->next_release_ns(now_);
    n.shaper_waiting = next != Shaper::kNever;
    if (!n.shaper_waiting) return;
    const std::uint64_t at = std::max<std::uint64_t>(next, now_ + 1000);  // never a busy loop on rounding
    if (n.release_at != kNever && n.release_at >= now_ && n.release_at <= at) return;
    n.release_at = at;
    push(at, Kind::kRelease, i);
  }

  void on_release(std::uint32_t i) {
    Node& n = nodes_[i];
    if (n.state != State::kUp || n.release_at != now_) return;
    n.release_at = kNever;
    if (n.stalled) return;  // stall_end releases
    n.shaper->release(now_);
    n.shaper_changed = true;
    arm_release(i);
  }

 public:
  // A datagram leaves member i's shaper now: onto the virtual network.
  void on_wire(std::uint32_t i, const dp::Endpoint& to_ep, Parcel& parcel, std::size_t len) {
    Node& n = nodes_[i];
    const std::size_t plen = len - kWireOverheadBytes;
    n.bytes_out += len;
    n.payload_out += plen;
    ++n.packets_out;
    n.interval_bytes += len;
    r_.bytes_sent += len;
    r_.payload_bytes_sent += plen;
    ++r_.datagrams_on_wire;
    if (steady(i) && n.marked) charge_types(type_counts_[i], parcel.messages);
    const auto to = index_of(to_ep);
    if (!to || *to >= nodes_.size()) return;
    if (sc_.network.loss > 0 && uniform01() < sc_.network.loss) {
      ++r_.datagrams_lost;
      return;
    }
    if (const int side = cut_off(i, *to)) {
      ++r_.datagrams_lost;
      ++r_.datagrams_partitioned[static_cast<std::size_t>(side - 1)];
      return;
    }
    const std::uint32_t slot = alloc_slot();
    if (sc_.decode_at_receiver) pool_[slot].bytes = std::move(parcel.bytes);
    pool_[slot].messages = std::move(parcel.messages);
    pool_[slot].from = i;
    const double jitter = -std::log1p(-uniform01()) * static_cast<double>(sc_.network.latency_jitter_ns);
    const std::uint64_t at = now_ + sc_.network.latency_base_ns + static_cast<std::uint64_t>(jitter);
    push(at, Kind::kDeliver, *to, slot);
  }

 private:
  // A partition healed less than the longest a suspicion started before the
  // heal can take to end (its maximum timeout, plus probe rounds stretched by
  // local health to start it). Either side's verdicts from the split spread to
  // both sides after the heal, so any pair counts, not only pairs across it.
  bool healed_recently() const {
    const cp::engine::EngineConfig& e = sc_.engine;
    const std::uint64_t window =
        e.suspicion_max_timeout_mult *
            cp::engine::suspicion_min_timeout(e.suspicion_mult, nodes_.size(), e.probe_interval_ns) +
        2 * e.awareness_max_multiplier * e.probe_interval_ns;
    for (const PartitionSpec& p : sc_.partitions) {
      if (now_ >= p.end_ns && now_ < p.end_ns + window) return true;
    }
    return false;
  }

  // A datagram from member `from` to member `to` is lost to an active
  // partition: one that cuts both ways, or a one-way one whose unheard side
  // (the first) `from` is on and `to` is not. 0: it is not; else the side
  // `from` is on (1 = the first).
  int cut_off(std::uint32_t from, std::uint32_t to) const {
    for (const PartitionSpec& p : sc_.partitions) {
      if (now_ < p.start_ns || now_ >= p.end_ns) continue;
      const auto cut = static_cast<std::uint32_t>(p.fraction * static_cast<double>(n_steady_));
      // Phantoms (indices past the steady members) are on the second side.
      const bool sf = from < cut;
      const bool st = to < cut;
      if (sf == st) continue;
      if (p.direction == PartitionDirection::kBoth || sf) return sf ? 1 : 2;
    }
    return 0;
  }

  // a and b are on two sides of an active partition, either way: a probe
  // between them fails whichever way the cut goes (a ping or its ack is lost).
  bool partitioned(std::uint32_t a, std::uint32_t b) const { return cut_off(a, b) != 0 || cut_off(b, a) != 0; }

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

  void clear_dead_bit(std::uint32_t subject, std::uint32_t observer) {
    auto it = dead_bits_.find(subject);
    if (it != dead_bits_.end()) it->second[observer / 64] &= ~(1ULL << (observer % 64));
  }

  void on_member_event(std::uint32_t observer, const MemberEvent& ev) {
    ++r_.member_events;
    ++interval_events_;
    if (!steady(observer)) return;  // phantoms' views do not count
    const auto subject = index_of(ev.node);
    if (!subject || *subject >= nodes_.size()) return;
    const Node& s = nodes_[*subject];
    // About an earlier life of a restarted member (its old incarnation): that
    // life is gone, whatever the new one does.
    const bool old_life = ev.incarnation < s.life_incarnation;
    const bool gone = s.departed || old_life;
    switch (ev.kind) {
      case EventKind::kFailed:
      case EventKind::kLeave:
        if (gone) {
          set_dead_bit(*subject, observer);
          if (s.failure_slot >= 0) {
            auto& at = failures_[static_cast<std::size_t>(s.failure_slot)].detected_at[observer];
            at = std::min(at, now_);
          }
        } else if (ev.kind == EventKind::kFailed) {
          ++r_.false_positives;
          if (!s.stall_prone) ++r_.false_positives_healthy;
          if (!steady(*subject)) ++r_.false_positives_phantom;
          if (s.lives > 1) ++r_.false_positives_restarted;
          if (partitioned(observer, *subject))
            ++r_.false_positives_partition;
          else if (healed_recently())
            ++r_.false_positives_after_heal;
        }
        break;
      case EventKind::kJoin:
        // The dead stay dead: a member gone for good that comes back alive where
        // it was already declared gone is a resurrection.
        if (gone && dead_bit(*subject, observer)) ++r_.resurrections;
        // Learning of a member only after it is gone: stale gossip still moving.
        if (s.departed) ++r_.joins_after_departure;
        // A restarted member's new life seen: its old death no longer applies.
        if (!gone) clear_dead_bit(*subject, observer);
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
    std::uint64_t payload = 0;
    std::uint64_t packets = 0;
    std::uint64_t suspicions = dead_suspicions_;
    std::uint64_t refutations = dead_refutations_;
    std::uint64_t views = 0;
    std::uint64_t tables = 0;
    std::uint32_t observers = 0;
    s.view_min = UINT32_MAX;
    s.converged = true;
    const double interval_s = static_cast<double>(sc_.sample_interval_ns) / kNsPerS;
    // What a token bucket of this rate and depth can let out in one interval:
    // a full bucket plus the refill, plus the debt one datagram larger than
    // the bucket may leave. Measured on what reached the wire.
    const double burst = static_cast<double>(sc_.network.egress_burst_bytes);
    const double largest = static_cast<double>(r_.max_datagram_bytes + kWireOverheadBytes);
    const double allowed =
        static_cast<double>(sc_.network.egress_bytes_per_s) * interval_s + burst + std::max(0.0, largest - burst);
    views_.clear();
    // Sync counters at the first sample of the measured window.
    const bool take_totals_mark = !totals_marked_ && now_ >= sc_.measure_from_ns;
    if (take_totals_mark) {
      totals_marked_ = true;
      totals_mark_ = dead_totals_;
    }
    for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
      Node& n = nodes_[i];
      if (n.state == State::kUp) {
        ++s.up;
        if (!steady(i)) ++s.phantoms_up;
        const cp::engine::Counters c = n.engine->counters();
        suspicions += c.suspicions;
        refutations += c.refutations;
        if (take_totals_mark) totals_mark_.add(c);
      }
      bytes += n.bytes_out - prev_bytes_[i];
      payload += n.payload_out - prev_payload_[i];
      packets += n.packets_out - prev_packets_[i];
      prev_bytes_[i] = n.bytes_out;
      prev_payload_[i] = n.payload_out;
      prev_packets_[i] = n.packets_out;
      if (now_ > 0) {
        r_.egress_peak_interval_bytes_per_s =
            std::max(r_.egress_peak_interval_bytes_per_s, static_cast<double>(n.interval_bytes) / interval_s);
        if (sc_.network.egress_bytes_per_s > 0 && static_cast<double>(n.interval_bytes) > allowed + 1)
          ++r_.budget_violations;
      }
      if (!n.marked && now_ >= sc_.measure_from_ns && n.state == State::kUp) {
        n.marked = true;
        n.bytes_mark = n.bytes_out;
        n.payload_mark = n.payload_out;
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
      views_.push_back(static_cast<std::uint32_t>(live));
      if (live != s.expected_view) s.converged = false;
    }
    if (!views_.empty()) {
      const std::size_t mid = views_.size() / 2;
      std::nth_element(views_.begin(), views_.begin() + static_cast<long>(mid), views_.end());
      const double hi = views_[mid];
      if (views_.size() % 2 == 1) {
        s.view_median = hi;
      } else {
        const double lo = *std::max_element(views_.begin(), views_.begin() + static_cast<long>(mid));
        s.view_median = (lo + hi) / 2;
      }
    }
    s.suspicions = suspicions - prev_suspicions_;
    s.refutations = refutations - prev_refutations_;
    prev_suspicions_ = suspicions;
    prev_refutations_ = refutations;
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
      s.egress_payload_bytes_per_member_s = static_cast<double>(payload) / s.up / interval_s;
      s.egress_packets_per_member_s = static_cast<double>(packets) / s.up / interval_s;
    }
    s.member_events = interval_events_;
    interval_events_ = 0;
    if (s.converged && r_.first_converged_s < 0 && now_ >= sc_.join_over_ns) r_.first_converged_s = s.t_s;
    std::uint64_t heal = 0;
    for (const PartitionSpec& p : sc_.partitions) heal = std::max(heal, p.end_ns);
    if (heal > 0 && now_ >= heal && s.converged && r_.converged_after_heal_s < 0)
      r_.converged_after_heal_s = static_cast<double>(now_ - heal) / kNsPerS;
    const std::uint64_t last_start = n_steady_ > 1 ? sc_.join_over_ns * (n_steady_ - 1) / n_steady_ : 0;
    if (now_ >= last_start && s.converged && r_.converged_after_last_join_s < 0)
      r_.converged_after_last_join_s = static_cast<double>(now_ - last_start) / kNsPerS;
    if (observers > 0) {
      const std::int64_t excess = std::int64_t{s.view_max} - std::int64_t{s.expected_view};
      if (excess > r_.view_excess_max) {
        r_.view_excess_max = excess;
        r_.view_excess_max_fraction = s.expected_view > 0 ? static_cast<double>(excess) / s.expected_view : 0;
      }
    }
    check_restarts();
    sample_ring_clocks();
    // mallinfo2 walks the arenas: not every sample.
    const double heap = ++samples_ % kHeapEvery == 1 ? heap_in_use() : 0;
    if (heap > r_.perf.heap_peak_bytes) {
      r_.perf.heap_peak_bytes = heap;
      if (s.up > 0) r_.perf.heap_bytes_per_member = heap / s.up;
      // What the tables and the shared identities hold, per entry, measured
      // from the structures themselves at the heap's peak.
      std::size_t entries = 0;
      std::size_t table_bytes = 0;
      for (const Node& n : nodes_) {
        if (!n.engine) continue;
        entries += n.engine->table().size();
        table_bytes += n.engine->table().bytes();
      }
      if (entries > 0) {
        r_.perf.table_entries_at_peak = static_cast<double>(entries);
        r_.perf.table_bytes_per_entry = static_cast<double>(table_bytes) / entries;
        r_.perf.identity_pool_bytes = static_cast<double>(cp::engine::identities().bytes());
        r_.perf.heap_bytes_per_entry = heap / static_cast<double>(entries);
      }
    }
    r_.table_bytes_per_member_est = std::max(r_.table_bytes_per_member_est, s.table_mean * kTableEntryBytes);
    r_.series.push_back(s);
    if (hook_) hook_(s);
  }

  void sample_ring_clocks() {
    std::uint64_t lo = kNever;
    std::uint64_t hi = 0;
    for (std::uint32_t i = 0; i < n_steady_; ++i) {
      const Node& n = nodes_[i];
      if (n.state != State::kUp || n.departed || now_ - n.started_at < kRingSettleNs) continue;
      const std::uint64_t t = n.engine->ring_clock(local(i));
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    if (lo == kNever) return;
    const double spread = static_cast<double>(hi - lo) / 1e6;
    r_.ring_clock_spread_end_ms = spread;
    if (now_ >= sc_.measure_from_ns) r_.ring_clock_spread_max_ms = std::max(r_.ring_clock_spread_max_ms, spread);
  }

  // Each restarted batch: the first sample at which every steady view holds
  // every restarted member live in its new life (incarnation at least the new
  // initial one), so a view still holding the old life does not count.
  void check_restarts() {
    for (Batch& b : batches_) {
      if (b.restarted_at == kNever || b.all_alive_after_s >= 0) continue;
      bool all = true;
      for (std::uint32_t m : b.members) {
        const Node& subject = nodes_[m];
        if (subject.state != State::kUp || subject.departed) continue;  // down again
        const std::string name = node_name(m);
        for (std::uint32_t o = 0; o < n_steady_ && all; ++o) {
          const Node& obs = nodes_[o];
          if (o == m || obs.state != State::kUp || obs.departed) continue;
          const cp::engine::Member* x = obs.engine->member(name);
          all = x != nullptr && !x->is_tombstone() && x->incarnation >= subject.life_incarnation;
        }
        if (!all) break;
      }
      if (all) b.all_alive_after_s = static_cast<double>(now_ - b.restarted_at) / kNsPerS;
    }
  }

  void finish_storm() {
    if (sc_.phantoms.count == 0 || r_.series.empty()) return;
    // Recovery needs every phantom dead: one still running at the end leaves it open.
    for (std::uint32_t i = n_steady_; i < nodes_.size(); ++i)
      if (nodes_[i].state != State::kDown) return;
    r_.last_phantom_death_s = static_cast<double>(last_phantom_death_) / kNsPerS;
    // The first sample at or after the last death from which all are converged.
    std::size_t k = r_.series.size();
    while (k > 0 && r_.series[k - 1].converged && r_.series[k - 1].t_s >= r_.last_phantom_death_s) --k;
    if (k == r_.series.size()) return;
    r_.recovered_after_last_phantom_s = r_.series[k].t_s - r_.last_phantom_death_s;
  }

  void finish_restarts() {
    bool all = !batches_.empty();
    double worst = 0;
    for (const Batch& b : batches_) {
      RestartBatch rb;
      rb.at_s = b.restarted_at == kNever ? -1 : static_cast<double>(b.restarted_at) / kNsPerS;
      rb.members = static_cast<std::uint32_t>(b.members.size());
      rb.all_alive_after_s = b.all_alive_after_s;
      r_.restarts.push_back(rb);
      if (b.all_alive_after_s < 0) all = false;
      worst = std::max(worst, b.all_alive_after_s);
    }
    r_.restarts_all_alive_after_s = all ? worst : -1;
  }

  void finish_markers() {
    if (sc_.phantoms.count > 0) {
      const double start = static_cast<double>(sc_.phantoms.start_ns) / kNsPerS;
      const double end = last_phantom_death_ > 0 ? static_cast<double>(last_phantom_death_) / kNsPerS : r_.duration_s;
      r_.markers.push_back(Marker{"phantoms", start, std::max(start, end)});
    }
    for (const PartitionSpec& p : sc_.partitions)
      r_.markers.push_back(Marker{p.direction == PartitionDirection::kOneWay ? "partition (one way)" : "partition",
                                  static_cast<double>(p.start_ns) / kNsPerS,
                                  static_cast<double>(std::min(p.end_ns, sc_.duration_ns)) / kNsPerS});
  }

  void finish() {
    // Egress per steady member that was up for the whole measured window.
    std::vector<double> bps;
    std::vector<double> payload_bps;
    std::vector<double> pps;
    std::array<TypeCount, kTypes> types{};
    const double window_s = static_cast<double>(sc_.duration_ns - sc_.measure_from_ns) / kNsPerS;
    for (std::uint32_t i = 0; i < n_steady_; ++i) {
      const Node& n = nodes_[i];
      if (!n.marked || n.interrupted || n.state != State::kUp || n.departed) continue;
      bps.push_back(static_cast<double>(n.bytes_out - n.bytes_mark) / window_s);
      payload_bps.push_back(static_cast<double>(n.payload_out - n.payload_mark) / window_s);
      pps.push_back(static_cast<double>(n.packets_out - n.packets_mark) / window_s);
      for (std::size_t t = 0; t < kTypes; ++t) {
        types[t].packets += type_counts_[i][t].packets;
        types[t].bytes += type_counts_[i][t].bytes;
        types[t].payload += type_counts_[i][t].payload;
      }
    }
    r_.egress_bytes_per_s = summarize(bps);
    r_.egress_payload_bytes_per_s = summarize(payload_bps);
    r_.egress_packets_per_s = summarize(pps);
    if (!bps.empty()) {
      const double per = static_cast<double>(bps.size()) * window_s;
      for (std::size_t t = 0; t < kTypes; ++t)
        r_.egress_by_type[t] =
            TypeRate{static_cast<double>(types[t].packets) / per, static_cast<double>(types[t].bytes) / per,
                     static_cast<double>(types[t].payload) / per};
    }
    r_.egress_budget_bytes_per_s = static_cast<double>(sc_.network.egress_bytes_per_s);

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
        // Up since before the failure: a member restarted since lost what it knew.
        if (nodes_[o].started_at > f.at) continue;
        if (!f.aware[o]) {
          ++d.unaware;
          continue;
        }
        ++d.observers;
        if (f.detected_at[o] != kNever) lat.push_back(static_cast<double>(f.detected_at[o] - f.at) / kNsPerS);
      }
      r_.detection_times_s.insert(r_.detection_times_s.end(), lat.begin(), lat.end());
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
    for (const Detection& d : r_.detections) r_.detection_observers += d.observers;

    const double member_hours = static_cast<double>(observers.size()) * r_.duration_s / 3600.0;
    if (member_hours > 0) r_.false_positives_per_member_hour = static_cast<double>(r_.false_positives) / member_hours;

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
      e.table().for_each([&](const cp::engine::Member& m) {
        if (m.is_tombstone()) return;
        const std::string& name = m.name;
        const auto j = index_of(name);
        if (!j || *j >= nodes_.size() || nodes_[*j].departed || nodes_[*j].state != State::kUp) {
          ++r_.zombies_at_end;
          if (r_.zombies.size() < kMaxZombiesListed)
            r_.zombies.push_back(
                Zombie{node_name(o), name, m.status == MemberStatus::kSuspect, m.incarnation,
                       static_cast<double>(global_past(o, m.state_change_ns)) / kNsPerS,
                       j && *j < nodes_.size() ? static_cast<double>(nodes_[*j].departed_at) / kNsPerS : -1.0,
                       e.health_score(), e.in_storm(local(o))});
          exact = false;
          return;
        }
        if (*j == o) return;
        ++r_.build_pairs_at_end;
        if (m.build().empty()) ++r_.builds_unknown_at_end;
      });
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
      r_.engine.add(c);
    }
    r_.engine.add(dead_totals_);
    r_.engine_measured = r_.engine;
    r_.engine_measured.subtract(totals_mark_);
    r_.suspicions += dead_suspicions_;
    r_.refutations += dead_refutations_;
    // Crashed engines are gone with their counters; collected at crash time.
    for (std::size_t k = 0; k < 4; ++k) r_.broadcast_drops[k] += dead_broadcast_drops_[k];
    r_.outbox_drops += dead_outbox_drops_;
    r_.egress_drops = dead_shaper_drops_;
    r_.egress_deferred = dead_shaper_deferred_;
    r_.egress_expired = dead_shaper_expired_;
    for (const Node& n : nodes_) {
      if (!n.shaper) continue;
      for (std::size_t k = 0; k < crypto::kClassCount; ++k) {
        r_.egress_drops[k] += n.shaper->counters()[k].dropped;
        r_.egress_deferred[k] += n.shaper->counters()[k].deferred;
        r_.egress_expired[k] += n.shaper->counters()[k].expired;
      }
    }
    finish_storm();
    finish_restarts();
    finish_markers();
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
  std::vector<std::uint64_t> prev_payload_ = std::vector<std::uint64_t>(nodes_.size(), 0);
  std::vector<std::array<TypeCount, kTypes>> type_counts_ = std::vector<std::array<TypeCount, kTypes>>(n_steady_);
  std::vector<std::uint32_t> views_;
  std::vector<Batch> batches_;
  std::uint64_t last_phantom_death_ = 0;
  std::uint64_t prev_suspicions_ = 0;
  std::uint64_t prev_refutations_ = 0;
  std::array<std::uint64_t, 4> dead_shaper_drops_ = {};
  std::array<std::uint64_t, 4> dead_shaper_deferred_ = {};
  std::array<std::uint64_t, 4> dead_shaper_expired_ = {};
  std::uint64_t interval_events_ = 0;
  // What after() drains an engine into: storage traded with the engines, so
  // none is allocated per event.
  std::vector<MemberEvent> events_scratch_;
  std::vector<Outgoing> outbox_scratch_;
  std::uint64_t samples_ = 0;
  static constexpr std::uint64_t kHeapEvery = 10;
  static constexpr std::uint64_t kRingSettleNs = 30'000'000'000ULL;
  double link_fraction_sum_ = 0;
  std::uint64_t link_fraction_n_ = 0;
  std::array<std::uint64_t, 4> dead_broadcast_drops_ = {};
  std::uint64_t dead_outbox_drops_ = 0;
  std::uint64_t dead_suspicions_ = 0;
  std::uint64_t dead_refutations_ = 0;
  EngineTotals dead_totals_;
  EngineTotals totals_mark_;  // summed at the first sample of the measured window
  bool totals_marked_ = false;
  Results r_;
};

bool NodeSink::send(const dp::Endpoint& to, crypto::PriorityClass, Parcel& parcel, std::size_t len) noexcept {
  sim_.on_wire(node_, to, parcel, len);
  return true;
}

}  // namespace

Results run_scenario(const Scenario& scenario, const SampleHook& on_sample) {
  return Simulator(scenario, on_sample).run();
}

std::vector<std::string> check_expectations(const Scenario& s, const Results& r) {
  std::vector<std::string> bad;
  const ExpectSpec& e = s.expect;
  if (e.converged && !r.converged_at_end)
    bad.push_back("converged: views at the end are " + std::to_string(r.final_view_min) + ".." +
                  std::to_string(r.final_view_max) + ", expected exactly " + std::to_string(r.final_expected_view) +
                  " (zombies " + std::to_string(r.zombies_at_end) + ")");
  if (e.no_resurrection && (r.resurrections != 0 || r.zombies_at_end != 0))
    bad.push_back("no_resurrection: " + std::to_string(r.resurrections) + " resurrections, " +
                  std::to_string(r.zombies_at_end) + " zombies at the end");
  if (e.no_urgent_drop && (r.urgent_drops != 0 || r.egress_drops[0] != 0 || r.egress_expired[0] != 0))
    bad.push_back("no_urgent_drop: " + std::to_string(r.urgent_drops) + " broadcast, " +
                  std::to_string(r.egress_drops[0]) + " egress, " + std::to_string(r.egress_expired[0]) +
                  " expired in the egress queue");
  if (e.budget_respected && r.budget_violations != 0)
    bad.push_back("budget_respected: " + std::to_string(r.budget_violations) + " node-intervals over budget");
  if (e.all_failures_detected && r.undetected != 0)
    bad.push_back("all_failures_detected: " + std::to_string(r.undetected) + " failures not seen by every member");
  const auto within = [&](double limit, double got, const std::string& what) {
    if (limit < 0) return;
    if (got < 0)
      bad.push_back(what + ": never (limit " + std::to_string(limit) + ")");
    else if (got > limit)
      bad.push_back(what + ": " + std::to_string(got) + " > " + std::to_string(limit));
  };
  within(e.join_converged_within_s, r.converged_after_last_join_s,
         "join_converged_within_s: convergence.after_last_join_s");
  within(e.recovered_within_s, r.recovered_after_last_phantom_s,
         "recovered_within_s: storm.recovered_after_last_phantom_s");
  within(e.restarts_alive_within_s, r.restarts_all_alive_after_s,
         "restarts_alive_within_s: restarts.all_alive_after_s");
  within(e.healed_within_s, r.converged_after_heal_s, "healed_within_s: convergence.after_heal_s");
  if (e.view_excess_max_fraction >= 0 && r.view_excess_max_fraction > e.view_excess_max_fraction)
    bad.push_back("view_excess_max_fraction: " + std::to_string(r.view_excess_max_fraction) + " > " +
                  std::to_string(e.view_excess_max_fraction) + " (view " + std::to_string(r.view_excess_max) +
                  " over the expected)");
  if (e.detection_all_within_s >= 0) {
    for (const Detection& d : r.detections) {
      if (d.all_s >= 0 && d.all_s <= e.detection_all_within_s) continue;
      bad.push_back("detection_all_within_s: " + d.node + " failed at " + std::to_string(d.failed_at_s) +
                    " s seen by all " +
                    (d.all_s < 0 ? std::string("never") : "after " + std::to_string(d.all_s) + " s") + " (" +
                    std::to_string(d.detected) + " of " + std::to_string(d.observers) + " observers)");
    }
  }
  if (e.egress_bytes_per_member_max >= 0 && r.egress_bytes_per_s.mean > e.egress_bytes_per_member_max)
    bad.push_back("egress_bytes_per_member_max: mean " + std::to_string(r.egress_bytes_per_s.mean) +
                  " wire B/s per member > " + std::to_string(e.egress_bytes_per_member_max));
  if (e.max_false_positives >= 0 && r.false_positives > static_cast<std::uint64_t>(e.max_false_positives))
    bad.push_back("max_false_positives: " + std::to_string(r.false_positives) + " > " +
                  std::to_string(e.max_false_positives));
  return bad;
}

}  // namespace gw::sim
