// A tiny multi-node harness for engine tests: N engines on a virtual network with
// a virtual clock. Every datagram goes through the real codec (encode, then
// decode on delivery), arrives after a seeded random latency, and may be lost
// with a seeded probability. No threads, no sleeps, no wall clock.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "control/codec.h"
#include "control/engine/engine.h"

namespace gw::cp::engine::testing {

inline Address sim_addr(std::size_t i) {
  return Address{{10, 0, static_cast<std::uint8_t>(i >> 8), static_cast<std::uint8_t>(i & 0xff)}, 7946};
}

inline std::string sim_name(std::size_t i) { return "node-" + std::to_string(i); }

class SimNet {
 public:
  explicit SimNet(std::uint64_t seed) : rng_(seed ^ 0x5eed5eedULL), seed_(seed) {}

  // Adds node i (= current size) with `base` config; it is up at once.
  std::size_t add(EngineConfig base, std::uint64_t incarnation = 0) {
    const std::size_t i = nodes_.size();
    nodes_.emplace_back();
    start(i, std::move(base), incarnation);
    return i;
  }

  // (Re)starts node i as a fresh engine (a restart loses all state).
  void start(std::size_t i, EngineConfig base, std::uint64_t incarnation = 0) {
    base.name = sim_name(i);
    base.addr = sim_addr(i);
    base.initial_incarnation = incarnation;
    nodes_[i].engine = std::make_unique<Engine>(base, seed_ * 1000003ULL + i * 7919ULL + restarts_++, now_);
    nodes_[i].up = true;
    by_addr_[base.addr] = i;
  }

  Engine& engine(std::size_t i) { return *nodes_[i].engine; }
  std::size_t size() const { return nodes_.size(); }
  std::uint64_t now() const { return now_; }
  void set_up(std::size_t i, bool up) { nodes_[i].up = up; }
  bool up(std::size_t i) const { return nodes_[i].up; }
  // Loss probability in parts per million, for every datagram.
  void set_loss_ppm(std::uint32_t ppm) { loss_ppm_ = ppm; }
  // Drops everything to or from node i while set (a flaky link).
  void set_isolated(std::size_t i, bool isolated) { nodes_[i].isolated = isolated; }

  void join(std::size_t i, const std::vector<std::size_t>& seeds) {
    std::vector<Address> addrs;
    for (std::size_t s : seeds) addrs.push_back(sim_addr(s));
    engine(i).join(addrs, now_);
    flush(i);
  }

  void leave(std::size_t i) {
    engine(i).leave(now_);
    flush(i);
  }

  // Feeds node i a datagram as if from node `from` (through the codec).
  void inject(std::size_t i, std::size_t from, const Compound& msgs) { deliver(i, sim_addr(from), encode(msgs)); }

  // Runs the virtual network until `until_ns`.
  void run_until(std::uint64_t until_ns) {
    std::size_t same_time_steps = 0;
    for (;;) {
      std::uint64_t next = queue_.empty() ? UINT64_MAX : std::get<0>(queue_.begin()->first);
      for (std::size_t i = 0; i < nodes_.size(); ++i)
        if (nodes_[i].up) next = std::min(next, nodes_[i].engine->next_deadline());
      if (next > until_ns) break;
      same_time_steps = next == now_ ? same_time_steps + 1 : 0;
      ASSERT_LT(same_time_steps, 100000u) << "engine timers do not advance";
      now_ = std::max(now_, next);
      while (!queue_.empty() && std::get<0>(queue_.begin()->first) <= now_) {
        Datagram d = std::move(queue_.begin()->second);
        queue_.erase(queue_.begin());
        deliver(d.to, d.from, d.bytes);
      }
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (!nodes_[i].up || nodes_[i].engine->next_deadline() > now_) continue;
        nodes_[i].engine->tick(now_);
        flush(i);
      }
    }
    now_ = std::max(now_, until_ns);
  }

  void run_for(std::uint64_t ns) { run_until(now_ + ns); }

  // Every encoded datagram any node sent, in order: the determinism fingerprint.
  const std::vector<std::uint8_t>& trace() const { return trace_; }
  const std::vector<MemberEvent>& events(std::size_t i) const { return nodes_[i].events; }
  std::uint64_t max_datagram_bytes() const { return max_datagram_; }
  std::uint64_t datagrams() const { return datagrams_; }
  std::uint64_t decode_failures() const { return decode_failures_; }

  // Status node i has for node j (nullopt: unknown).
  std::optional<MemberStatus> status(std::size_t i, std::size_t j) {
    const Member* m = engine(i).member(sim_name(j));
    if (m == nullptr) return std::nullopt;
    return m->status;
  }

  std::size_t count_events(std::size_t i, EventKind kind, const std::string& node) const {
    std::size_t n = 0;
    for (const MemberEvent& e : nodes_[i].events)
      if (e.kind == kind && e.node == node) ++n;
    return n;
  }

 private:
  struct Node {
    std::unique_ptr<Engine> engine;
    bool up = true;
    bool isolated = false;
    std::vector<MemberEvent> events;
  };
  struct Datagram {
    std::size_t to = 0;
    Address from;
    std::vector<std::uint8_t> bytes;
  };

  void deliver(std::size_t to, const Address& from, const std::vector<std::uint8_t>& bytes) {
    if (!nodes_[to].up) return;
    DecodeResult r = decode(bytes);
    if (!r.ok()) {
      ++decode_failures_;
      return;
    }
    nodes_[to].engine->handle(from, r.messages, now_);
    flush(to);
  }

  void flush(std::size_t i) {
    Node& n = nodes_[i];
    for (MemberEvent& e : n.engine->take_events()) n.events.push_back(std::move(e));
    for (Outgoing& out : n.engine->take_outbox()) {
      std::vector<std::uint8_t> bytes = encode(out.messages);
      ++datagrams_;
      max_datagram_ = std::max<std::uint64_t>(max_datagram_, bytes.size());
      trace_.push_back(static_cast<std::uint8_t>(out.priority));
      trace_.insert(trace_.end(), out.to.ip.begin(), out.to.ip.end());
      trace_.insert(trace_.end(), bytes.begin(), bytes.end());
      auto dst = by_addr_.find(out.to);
      // Unknown destination, a down or isolated node, or random loss: gone.
      if (dst == by_addr_.end() || !n.up || n.isolated || nodes_[dst->second].isolated) continue;
      if (loss_ppm_ != 0 && rng_.uniform(1'000'000) < loss_ppm_) continue;
      const std::uint64_t at = now_ + kLatencyNs + rng_.uniform(kLatencyNs);
      queue_.emplace(std::make_tuple(at, next_id_++), Datagram{dst->second, sim_addr(i), std::move(bytes)});
    }
  }

  static constexpr std::uint64_t kLatencyNs = 1 * kMillisecond;

  std::vector<Node> nodes_;
  std::map<Address, std::size_t> by_addr_;
  std::map<std::tuple<std::uint64_t, std::uint64_t>, Datagram> queue_;
  Rng rng_;
  std::uint64_t seed_;
  std::uint64_t restarts_ = 0;
  std::uint64_t now_ = 1 * kSecond;
  std::uint64_t next_id_ = 0;
  std::uint32_t loss_ppm_ = 0;
  std::vector<std::uint8_t> trace_;
  std::uint64_t max_datagram_ = 0;
  std::uint64_t datagrams_ = 0;
  std::uint64_t decode_failures_ = 0;
};

}  // namespace gw::cp::engine::testing
