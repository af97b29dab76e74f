// The engine's unit tests share this: control/engine/engine.h driven by hand,
// one engine, messages injected, outbox inspected (Driver), and the members,
// configs and peers the tests build it from. The tests are split by the
// engine's policies: state_test.cc and state_bounds_test.cc (member state),
// newcomers_test.cc, joining_test.cc, probing_test.cc, dissemination_test.cc,
// anti_entropy_test.cc. Whole-cluster behaviour is in cluster_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "control/engine/engine.h"

namespace gw::cp::engine {

inline Address addr(std::size_t i) {
  return Address{{10, 1, static_cast<std::uint8_t>(i >> 8), static_cast<std::uint8_t>(i & 0xff)}, 7946};
}
inline std::string name(std::size_t i) { return "n" + std::to_string(i); }
inline Alive alive(std::size_t i, std::uint64_t inc = 1, std::vector<Tag> tags = {}) {
  return Alive{inc, name(i), addr(i), std::move(tags), 1};
}

inline EngineConfig config(std::size_t self = 0) {
  EngineConfig c = EngineConfig::lan();
  c.name = name(self);
  c.addr = addr(self);
  return c;
}

inline constexpr std::uint64_t kStart = 1000 * kSecond;

// Member n<i> as a MemberTable entry (tests of the table itself).
inline Member table_member(std::size_t i, std::uint64_t inc) {
  Member m;
  m.name = name(i);
  m.set_profile(addr(i), {}, 0);
  m.incarnation = inc;
  return m;
}

template <typename T>
const T* find_msg(const Outgoing& o) {
  for (const Message& m : o.messages)
    if (const T* t = std::get_if<T>(&m)) return t;
  return nullptr;
}

// Drives one engine: ticks at each deadline up to `until`, collecting output.
struct Driver {
  explicit Driver(EngineConfig c, std::uint64_t seed = 1) : e(std::move(c), seed, kStart) {}

  void add_members(std::size_t from, std::size_t to) {
    Compound msgs;
    for (std::size_t i = from; i < to; ++i) msgs.push_back(alive(i));
    e.handle(addr(from), msgs, now);
    collect();
  }

  // From member `from`'s address, proven to receive our datagrams
  // (return_routes.h): tests of the proof itself call e.handle.
  void handle(std::size_t from, Compound msgs) {
    e.prove_address(addr(from), now);
    e.handle(addr(from), msgs, now);
    collect();
  }

  // Runs timers until `until`, calling `on_packet` for every new datagram.
  template <typename Fn>
  void run_until(std::uint64_t until, Fn&& on_packet) {
    for (;;) {
      const std::uint64_t next = e.next_deadline();
      if (next > until) break;
      now = std::max(now, next);
      e.tick(now);
      const std::size_t before = sent.size();
      collect();
      for (std::size_t i = before; i < sent.size(); ++i) on_packet(sent[i]);
    }
    now = std::max(now, until);
  }
  void run_until(std::uint64_t until) {
    run_until(until, [](const Outgoing&) {});
  }

  // The first sync request (periodic only, if `periodic`) sent at or after
  // sent[from], with its index; {nullptr, sent.size()} if none.
  std::pair<const SyncRequest*, std::size_t> sync_request_after(std::size_t from, bool periodic = false) const {
    for (std::size_t i = from; i < sent.size(); ++i)
      if (const SyncRequest* r = find_msg<SyncRequest>(sent[i]); r != nullptr && !(periodic && r->join)) return {r, i};
    return {nullptr, sent.size()};
  }

  // Runs second by second, every probe answered, for at most `within` or
  // until the next sync request goes out (see sync_request_after).
  std::pair<const SyncRequest*, std::size_t> next_sync_request(std::uint64_t within, bool periodic = false) {
    const std::size_t from = sent.size();
    const std::uint64_t until = now + within;
    while (now < until) {
      run_until(std::min(until, now + kSecond), [&](const Outgoing& o) {
        if (const Ping* p = find_msg<Ping>(o)) e.handle(o.to, {Ack{p->seq_no, p->target}}, now);
      });
      if (auto r = sync_request_after(from, periodic); r.first != nullptr) return r;
    }
    return {nullptr, sent.size()};
  }

  void collect() {
    for (Outgoing& o : e.take_outbox()) {
      sent_at.push_back(now);
      sent.push_back(std::move(o));
    }
    for (MemberEvent& ev : e.take_events()) events.push_back(std::move(ev));
  }

  Engine e;
  std::uint64_t now = kStart;
  std::vector<Outgoing> sent;
  std::vector<std::uint64_t> sent_at;
  std::vector<MemberEvent> events;
};

inline std::size_t count_events(const std::vector<MemberEvent>& ev, EventKind k, const std::string& n) {
  std::size_t c = 0;
  for (const MemberEvent& e : ev)
    if (e.kind == k && e.node == n) ++c;
  return c;
}

// Joins through seed n1 and answers the join with members [1, n] alive.
inline void join_with_view(Driver& d, std::size_t n) {
  const std::vector<Address> seeds = {addr(1)};
  d.e.join(seeds, d.now);
  d.collect();
  const SyncRequest* req = find_msg<SyncRequest>(d.sent.at(0));
  ASSERT_NE(req, nullptr);
  std::vector<MemberState> view;
  for (std::size_t i = 1; i <= n; ++i) view.push_back(MemberState{name(i), addr(i), 1, MemberStatus::kAlive, {}});
  d.handle(1, {SyncResponse{req->seq_no, name(1), 0, 1, view}});
}

// Runs `d` until `until`: established members [1, est) answer pings and nack
// indirect pings they cannot complete; everyone else is silent (gone).
inline void run_with_established(Driver& d, std::size_t est, std::uint64_t until,
                                 std::vector<std::string>* helpers_asked = nullptr) {
  d.run_until(until, [&](const Outgoing& o) {
    const std::size_t to = o.to.ip[3] + 256u * o.to.ip[2];
    if (to == 0 || to >= est) return;
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, name(to)}}, d.now);
    if (const IndirectPing* ip = find_msg<IndirectPing>(o)) {
      if (helpers_asked) helpers_asked->push_back(name(to));
      const auto target = std::stoul(ip->target.substr(1));
      if (target < est)
        d.e.handle(o.to, {Ack{ip->seq_no, ip->target}}, d.now);
      else
        d.e.handle(o.to, {Nack{ip->seq_no, name(to)}}, d.now);
    }
  });
}

// A storm is recognised after 5 newcomer failures; admission never limits.
inline EngineConfig storm_config() {
  EngineConfig c = config();
  c.admit_rate = 100000;
  c.admit_burst = 100000;
  c.storm_newcomer_failures = 5;
  return c;
}

// An established cluster of members 1..8, then ten newcomers (100..109) that
// die: a storm, from the fifth death on. Newcomers [early_from, early_to)
// arrive just before the storm (in the view, young when it starts).
inline void start_storm(Driver& d, std::size_t early_from = 0, std::size_t early_to = 0) {
  d.add_members(1, 9);
  run_with_established(d, 9, kStart + 300 * kSecond);
  if (early_to > early_from) d.add_members(early_from, early_to);
  d.add_members(100, 110);
  for (std::size_t i = 100; i < 110; ++i) d.handle(1, {Dead{1, name(i), name(1)}});
}

// The member a test address belongs to (addr(i) -> i).
inline std::size_t index_of(const Address& a) { return a.ip[3] + 256u * a.ip[2]; }

// Runs timers until `until`; every member but the `silent` ones answers our
// pings, directly and through helpers. `on_packet` sees every datagram (with
// d.now the time it was sent).
template <typename Fn>
void run_answering(Driver& d, std::uint64_t until, const std::set<std::size_t>& silent, Fn&& on_packet) {
  d.run_until(until, [&](const Outgoing& o) {
    on_packet(o);
    const std::size_t to = index_of(o.to);
    if (to == 0 || silent.contains(to)) return;
    if (const Ping* p = find_msg<Ping>(o)) d.e.handle(o.to, {Ack{p->seq_no, name(to)}}, d.now);
    if (const IndirectPing* ip = find_msg<IndirectPing>(o)) {
      if (silent.contains(std::stoul(ip->target.substr(1))))
        d.e.handle(o.to, {Nack{ip->seq_no, name(to)}}, d.now);
      else
        d.e.handle(o.to, {Ack{ip->seq_no, ip->target}}, d.now);
    }
  });
}

// A member that has run 300 s with members 1..8 (all answering) and then saw
// an arrival surge (n100 and n101: two are enough with surge_min_arrivals 2):
// never-seen members are now admitted on probation.
inline EngineConfig surge_config() {
  EngineConfig c = config();
  c.surge_min_arrivals = 2;
  return c;
}

inline void start_surge(Driver& d) {
  d.add_members(1, 9);
  run_with_established(d, 9, kStart + 300 * kSecond);
  ASSERT_FALSE(d.e.in_surge(d.now));
  d.add_members(100, 102);
  ASSERT_TRUE(d.e.in_surge(d.now));
  ASSERT_FALSE(d.e.in_storm(d.now));
}

}  // namespace gw::cp::engine
