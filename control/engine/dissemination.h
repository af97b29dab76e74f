// Dissemination: news spread by gossip (SWIM's infection style).
//
// Each member's latest news (alive, suspect, dead, leave; user data) waits in
// the broadcast queue, most urgent class first, fewest transmissions first;
// every datagram we send carries as much of it as fits (piggybacking), and
// every gossip_interval_ns a round sends it to gossip_nodes random peers,
// each item retransmit_limit() times in all. A death or departure brings the
// next rounds forward (eager rounds); the recently dead still get gossip for
// a while, so that one alive after all hears and refutes.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "control/engine/broadcast_queue.h"
#include "control/engine/core.h"
#include "control/engine/effects.h"

namespace gw::cp::engine {

class Dissemination {
 public:
  Dissemination(Core& core, Effects& fx, std::uint64_t now_ns);

  // News about `node` (`transmit_cap`: BroadcastQueue::push's, 0 = retransmit_limit()).
  void queue(const std::string& node, Message msg, PriorityClass cls, std::uint32_t transmit_cap = 0);
  // Our user data (the latest replaces an unsent older one).
  void queue_user_data(std::string data);
  // Fills `messages` with news up to `budget_bytes`; the most urgent class
  // taken (kBulk if none).
  PriorityClass piggyback(std::size_t budget_bytes, Compound& messages);
  // News that should not wait for the next gossip round (a death or a
  // departure of an established member): the round is brought forward.
  void soon(std::uint64_t now_ns);
  // `name` was declared dead: gossiped to for gossip_to_the_dead_ns still.
  void gossip_to_the_dead(const Name& name);
  // Our Leave has gone out retransmit_limit() times (retired from the queue).
  bool told_our_leave() const;
  const BroadcastQueue& broadcasts() const { return broadcasts_; }

  // ---- timers ----
  void run(std::uint64_t now_ns);
  std::uint64_t next_deadline() const { return next_gossip_ns_; }

 private:
  void gossip(std::uint64_t now_ns);
  std::vector<std::string> gossip_targets(std::uint64_t now_ns);
  std::uint64_t eager_gap_ns() const { return core_.config.gossip_interval_ns / 10; }
  static constexpr std::uint32_t kEagerRounds = 3;
  static constexpr std::size_t kMaxRecentlyDead = 64;

  Core& core_;
  Effects& fx_;
  BroadcastQueue broadcasts_;
  std::uint64_t next_gossip_ns_ = 0;
  std::uint64_t last_gossip_ns_ = 0;
  std::uint32_t eager_rounds_ = 0;  // brought-forward gossip rounds still to run
  // When the last series of brought-forward rounds began (soon()); at most
  // one series per gossip interval.
  std::optional<std::uint64_t> eager_series_ns_;
  // Members declared dead recently: still gossiped to for gossip_to_the_dead_ns.
  std::deque<Name> recently_dead_;  // interned: the per-round check finds them by id
};

}  // namespace gw::cp::engine
