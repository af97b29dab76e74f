// What a policy asks of the engine. A policy owns its queues and timers and
// decides; whatever its decision changes beyond its own state (a datagram, a
// member's status, news to spread) goes through here, and the engine applies
// it to the member table and tells the policies that have to hear of it. No
// policy calls another (foca's Runtime plays this part). The engine carries
// each request out at once, so the order of a policy's decisions is the
// order of their effects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/engine/member_table.h"
#include "control/engine/messages.h"

namespace gw::cp::engine {

class Effects {
 public:
  // ---- output ----
  // One datagram; `piggyback`: fill it up with broadcasts. False if nothing
  // went out (no address, or the outbox full: counted).
  virtual bool send(const Address& to, PriorityClass cls, Compound messages, bool piggyback) = 0;
  // One datagram of a gossip round: sent like send(), charged to the egress
  // budget's gossip (egress_budget.h), whatever class its news travels in.
  virtual bool send_gossip(const Address& to, PriorityClass cls, Compound messages) = 0;
  // A sync request of ours (a join, a follow-up, a periodic sync, a cookie's
  // retry): sent where we chose, never bounded as a reply to the datagram
  // being handled (docs/membership.md, "No reflection").
  virtual bool send_request(const Address& to, Compound messages) = 0;
  // News to disseminate about `node` (`transmit_cap` 0: retransmit_limit()).
  virtual void broadcast(const std::string& node, Message msg, PriorityClass cls, std::uint32_t transmit_cap = 0) = 0;

  // ---- state changes (the member table's rules: state.cc) ----
  // An Alive heard by gossip (one waiting for admission comes back this way;
  // `from_join`: it came in the answer to our join).
  virtual void alive(const Alive& a, std::uint64_t now_ns, bool from_join) = 0;
  // Our own accusation (a failed probe): `s.from` is us.
  virtual void suspect(const Suspect& s, std::uint64_t now_ns) = 0;
  // A verdict: Dead (`from` declared it) or Left.
  virtual void dead(std::uint64_t incarnation, const std::string& node, const std::string& from, MemberStatus status,
                    std::uint64_t now_ns) = 0;
  // A peer's members (a sync part) and the releases they refer to (its
  // `releases`); `from_join`: the answer to our join.
  virtual void merge(const std::vector<MemberState>& members, const std::vector<Release>& releases,
                     const std::string& from, std::uint64_t now_ns, bool from_join) = 0;
  // A probationer that lived through its probation joins the view.
  virtual void promote(Member& m, std::uint64_t now_ns) = 0;
  // A probationer never proved alive: forgotten without a verdict.
  virtual void forget_probationer(const std::string& name) = 0;

  // ---- questions answered by other policies ----
  // Up to k distinct random peers (not us, not `exclude`): Alive ones, and
  // Suspect ones too if `include_suspect`.
  virtual std::vector<std::string> random_peers(std::size_t k, const std::string& exclude,
                                                bool include_suspect = false) = 0;
  // A storm of short-lived members is under way (newcomers.h).
  virtual bool in_storm(std::uint64_t now_ns) const = 0;
  // Codec bytes a reply to `to` may still carry in a datagram of its own
  // while the datagram being handled is (SIZE_MAX: no bound, `to` has proven
  // that it receives our datagrams, or no datagram is being handled):
  // docs/membership.md, "No reflection".
  virtual std::size_t reply_room(const Address& to) const = 0;
  // A random live newcomer to probe, if there is one (newcomers.h).
  virtual std::optional<std::string> newcomer_to_probe(std::uint64_t now_ns) = 0;
  // A newcomer in a storm failed our probe with no helper's word against it:
  // one more direct ping before the verdict (newcomers.h). False if none
  // could be sent.
  virtual bool last_ping(const Member& m, std::uint64_t now_ns) = 0;
  // A whole-view sync request to `to` numbered `seq_no` (anti_entropy.h): a
  // join, or a follow-up to one.
  // `push_view`: our view goes with it (a follow-up, a rejoin); a join
  // round's request is ourselves alone.
  virtual void request_whole_view(const Address& to, std::uint32_t seq_no, std::uint64_t now_ns,
                                  bool push_view = true) = 0;
  // The answer to our sync `seq_no` is in as far as it will be (all parts, or
  // all but a few), and whether parts are still awaited.
  virtual bool sync_answered(std::uint32_t seq_no) const = 0;
  virtual bool sync_awaiting(std::uint32_t seq_no) const = 0;
  // Our next periodic sync no later than `at` (after joining).
  virtual void sync_by(std::uint64_t at_ns) = 0;

 protected:
  ~Effects() = default;
};

}  // namespace gw::cp::engine
