// What every part of the engine shares: the configuration, who we are, the
// seeded RNG, the member table, the counters and the outputs. The engine owns
// one Core; each policy reads it and asks the engine (effects.h) for any
// change that another policy has to hear about.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "base/martian.h"
#include "control/engine/config.h"
#include "control/engine/counters.h"
#include "control/engine/egress_budget.h"
#include "control/engine/member_table.h"
#include "control/engine/messages.h"
#include "control/engine/return_routes.h"
#include "control/engine/rng.h"

namespace gw::cp::engine {

// One datagram to send: the host encodes `messages` (control/codec.h), seals it
// and queues it in `priority`'s egress class.
struct Outgoing {
  Address to;
  PriorityClass priority = PriorityClass::kGossip;
  Compound messages;
};

enum class EventKind : std::uint8_t { kJoin, kLeave, kFailed, kUpdate };

struct MemberEvent {
  EventKind kind = EventKind::kJoin;
  std::string node;
  Address addr;
  std::uint64_t incarnation = 0;
  std::vector<Tag> tags;
};

// Bytes of a member's metadata as max_tag_bytes counts them.
inline std::size_t tag_bytes(const std::vector<Tag>& tags) {
  std::size_t n = 0;
  for (const Tag& t : tags) n += t.key.size() + t.value.size();
  return n;
}

// A name longer than this is no member's.
inline constexpr std::size_t kMaxNameBytes = 255;

// The share of our direct pings to live members that went unanswered: lost
// on the way there or back. A probe answered only through helpers is a
// direct round trip lost to a member that was alive; a probe nobody answered
// says nothing (the member may be dead: a storm's phantoms are not loss).
// Decayed (halved every kWindow samples), so it follows the network within a
// few minutes of probes; zero until kMinSamples.
class RoundTripLoss {
 public:
  void note(bool lost) {
    ++(lost ? lost_ : answered_);
    if (lost_ + answered_ >= 2 * kWindow) {
      lost_ /= 2;
      answered_ /= 2;
    }
  }
  double fraction() const {
    const std::uint32_t n = lost_ + answered_;
    return n < kMinSamples ? 0.0 : static_cast<double>(lost_) / n;
  }

 private:
  static constexpr std::uint32_t kWindow = 64;
  static constexpr std::uint32_t kMinSamples = 16;
  std::uint32_t lost_ = 0;
  std::uint32_t answered_ = 0;
};

struct Core {
  // `config` is sanitized (zero intervals raised to 1 ms, incarnation bounds
  // clamped), and we are the table's first entry.
  Core(EngineConfig c, std::uint64_t seed, std::uint64_t now_ns);

  EngineConfig config;
  Name self_name;  // config.name, interned: self() finds our entry by id
  Rng rng;
  MemberTable table;
  Counters counters;
  // Which addresses receive our datagrams, and their cookies (issue 51 item
  // 4: no reflection).
  ReturnRoutes routes;
  EgressBudget budget;              // config.egress_bytes_per_sec, planned by class
  std::uint32_t next_seq = 1;       // probes, relays, proof pings and syncs share one numbering
  std::uint64_t last_now_ns = 0;    // latest time seen (tick or handle)
  bool leaving = false;             // our Leave is out: we probe, sync and accuse nobody
  RoundTripLoss round_trip_loss;     // our direct pings to live members unanswered
  std::vector<Outgoing> outbox;
  std::deque<MemberEvent> events;
  std::deque<UserData> user_data;

  Member& self() { return *table.find(self_name); }
  const Member& self() const { return *table.find(self_name); }
  bool is_self(const std::string& name) const { return name == config.name; }
  // An address a message names that no member can have (base/martian.h, or
  // our own endpoint): nothing is ever sent there, and no member stored with
  // it (issue 51: 29 datagrams went to broadcast, multicast, loopback, 0.0.0.0
  // and ourselves). Empty is not martian (the sender's own address is meant).
  bool martian(const Address& a) const {
    if (a.empty()) return false;
    return base::martian_ip(a.ip.data(), a.ip.size()) || a == config.addr;
  }
  Alive self_alive() const {
    const Member& me = self();
    // No build: our life's news was told with our join (our entry in it);
    // what we say again (a refutation, a tag change) leaves it as held.
    return Alive{me.incarnation, me.name, me.addr(), me.tags(), me.protocol_version()};
  }
  std::uint32_t take_seq() { return next_seq++; }
  // How long an address stays proven (return_routes.h): two rounds of our
  // probe ring if that is longer than ReturnRoutes::kProvenTtlNs, so that
  // the members we probe stay proven between two probes.
  std::uint64_t proven_ttl() const { return 2 * table.live_count() * config.probe_interval_ns; }

  // How often a broadcast is sent: retransmit_mult * ceil(log10(N + 1)).
  std::uint32_t retransmit_limit() const;
  // How often we send a Suspect ourselves (config suspicion_retransmit_mult).
  std::uint32_t suspicion_retransmit_limit() const;
  // The periodic sync interval, scaled with the view.
  std::uint64_t sync_interval() const;

  // A newcomer: live in our view for less than young_member_ns.
  bool newcomer(const Member& m, std::uint64_t now_ns) const {
    return now_ns - std::min(now_ns, m.live_since_ns) < config.young_member_ns;
  }
  // A newcomer that also arrived well after us: in a cluster that is
  // starting, everybody is new and nobody is young.
  bool young(const Member& m, std::uint64_t now_ns) const {
    const std::uint64_t ours = now_ns - std::min(now_ns, self().live_since_ns);
    const std::uint64_t age = now_ns - std::min(now_ns, m.live_since_ns);
    return age < config.young_member_ns && 2 * age < ours;
  }
  // How long we have been live ourselves.
  std::uint64_t our_age(std::uint64_t now_ns) const { return now_ns - std::min(now_ns, self().live_since_ns); }

  // Bounded: an undrained stream loses its oldest events, counted.
  void emit(EventKind kind, const Member& m);
};

}  // namespace gw::cp::engine
