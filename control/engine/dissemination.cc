#include "control/engine/dissemination.h"

#include <algorithm>

namespace gw::cp::engine {

Dissemination::Dissemination(Core& core, Effects& fx, std::uint64_t now_ns)
    : core_(core), fx_(fx), broadcasts_(core.config.max_broadcasts) {
  // Random phase, as for probes.
  next_gossip_ns_ = now_ns + core_.rng.uniform(core_.config.gossip_interval_ns) + 1;
}

void Dissemination::queue(const std::string& node, Message msg, PriorityClass cls, std::uint32_t transmit_cap) {
  // One entry per member fits (plus user data): news is superseded per member,
  // never dropped because the cluster grew past a fixed bound.
  broadcasts_.set_capacity(std::max<std::size_t>(core_.config.max_broadcasts, core_.table.size() + 64));
  broadcasts_.push({BroadcastQueue::Kind::kMember, node}, std::move(msg), cls, transmit_cap);
}

void Dissemination::queue_user_data(std::string data) {
  broadcasts_.push({BroadcastQueue::Kind::kUserData, core_.config.name}, UserData{core_.config.name, std::move(data)},
                   PriorityClass::kGossip);
}

PriorityClass Dissemination::piggyback(std::size_t budget_bytes, Compound& messages) {
  return broadcasts_.take(budget_bytes, core_.retransmit_limit(), messages);
}

bool Dissemination::told_our_leave() const {
  return !broadcasts_.contains({BroadcastQueue::Kind::kMember, core_.config.name});
}

void Dissemination::soon(std::uint64_t now_ns) {
  // Three rounds in a row, a tenth of the interval apart: one round of pushes
  // to gossip_nodes peers each misses about e^-gossip_nodes of the members,
  // who would then wait for the regular rounds; three leave almost none.
  // At most one such series per gossip interval, however much news arrives:
  // a mass crash brings hundreds of deaths over a second or two, and a series
  // for each kept every member sending ten rounds an interval, each datagram
  // carrying the few deaths heard since the last (at 10,000 members with 100
  // crashes, 200 datagrams per member, a third of the deaths' bytes in
  // datagram overhead). A death heard after the series waits for the next
  // regular round, or the next series an interval on.
  if (eager_series_ns_ && now_ns - std::min(now_ns, *eager_series_ns_) < core_.config.gossip_interval_ns) return;
  eager_series_ns_ = now_ns;
  eager_rounds_ = kEagerRounds;
  const std::uint64_t at = std::max(now_ns, last_gossip_ns_ + eager_gap_ns());
  if (at >= next_gossip_ns_) return;
  next_gossip_ns_ = at;
  ++core_.counters.gossip_eager;
}

void Dissemination::gossip_to_the_dead(const Name& name) {
  if (recently_dead_.size() >= kMaxRecentlyDead) recently_dead_.pop_front();
  recently_dead_.push_back(name);
}

std::vector<std::string> Dissemination::gossip_targets(std::uint64_t now_ns) {
  const EngineConfig& c = core_.config;
  const MemberTable& table = core_.table;
  // Forget the dead that are past gossip_to_the_dead_ns, rejoined or expired.
  std::erase_if(recently_dead_, [&](const Name& name) {
    const Member* m = table.find(name);
    return m == nullptr || m->status != MemberStatus::kDead || m->state_change_ns + c.gossip_to_the_dead_ns <= now_ns;
  });
  // Suspects too (as memberlist): they need the news most, and skipping them
  // lets an update's whole retransmit budget pass them by.
  std::vector<std::string> peers = fx_.random_peers(c.gossip_nodes, {}, true);
  // In a storm most newcomers are phantoms on their way out: a round spent on
  // them is lost to the members that stay, and news (a refutation above all)
  // that misses a steady member in its burst of transmissions may not reach
  // it before a verdict does. Twice the candidates, the settled first.
  if (fx_.in_storm(now_ns) && !peers.empty()) {
    peers = fx_.random_peers(2 * c.gossip_nodes, {}, true);
    std::stable_partition(peers.begin(), peers.end(),
                          [&](const std::string& p) { return !core_.young(*table.find(p), now_ns); });
    if (peers.size() > c.gossip_nodes) peers.resize(c.gossip_nodes);
  }
  if (recently_dead_.empty()) return peers;
  // memberlist draws gossip targets from live and recently dead members alike:
  // each slot goes to a recently dead member with probability D / (L + D).
  const std::uint64_t dead = recently_dead_.size();
  const std::uint64_t live = table.live_count() > 0 ? table.live_count() - 1 : 0;
  // At most one slot per round goes to the dead, so that however many have
  // just died (a mass crash), the living get most of each round.
  const std::size_t slots = std::max<std::size_t>(peers.size(), peers.empty() ? 1 : 0);
  peers.resize(slots);
  for (std::string& p : peers) {
    if (core_.rng.uniform(live + dead) >= dead) continue;
    const std::string& pick = recently_dead_[static_cast<std::size_t>(core_.rng.uniform(dead))].str();
    if (std::find(peers.begin(), peers.end(), pick) == peers.end()) p = pick;
    break;
  }
  std::erase(peers, std::string{});
  return peers;
}

void Dissemination::gossip(std::uint64_t now_ns) {
  // Nothing to disseminate: no datagrams (and no draws from the RNG).
  if (broadcasts_.empty()) return;
  EgressBudget& budget = core_.budget;
  for (const std::string& peer : gossip_targets(now_ns)) {
    // Nothing (left) to disseminate: no empty datagrams.
    if (broadcasts_.empty()) break;
    // Each datagram as large as the budget's gossip has room for (egress_budget.h):
    // the news not sent waits in the queue, in its order, for the next round.
    budget.refill(now_ns);
    const std::uint64_t room = budget.gossip_room();
    if (room < EgressBudget::kMinGossipBytes) {
      ++core_.counters.gossip_budget_short;
      break;
    }
    const auto bytes = static_cast<std::size_t>(std::min<std::uint64_t>(
        core_.config.max_packet_bytes, room == UINT64_MAX ? room : room - EgressBudget::kDatagramOverheadBytes));
    Compound msgs;
    const PriorityClass cls = broadcasts_.take(bytes, core_.retransmit_limit(), msgs);
    if (msgs.empty()) break;
    fx_.send_gossip(core_.table.find(peer)->addr(), cls, std::move(msgs));
  }
}

void Dissemination::run(std::uint64_t now_ns) {
  if (now_ns < next_gossip_ns_) return;
  gossip(now_ns);
  last_gossip_ns_ = now_ns;
  next_gossip_ns_ = now_ns + core_.config.gossip_interval_ns;
  if (eager_rounds_ > 0 && --eager_rounds_ > 0) next_gossip_ns_ = now_ns + eager_gap_ns();
}

}  // namespace gw::cp::engine
