// SWIM probe scheduling: randomised round-robin over the live members (shuffle,
// walk the list, reshuffle at the end; newcomers are inserted at a random later
// position), the state of the one probe in flight, and the indirect probes we
// run on behalf of others (bounded).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "control/engine/member_table.h"
#include "control/engine/messages.h"
#include "control/engine/rng.h"

namespace gw::cp::engine {

// The probe we are running (at most one at a time, as in SWIM).
struct Probe {
  std::string target;
  std::uint32_t seq_no = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t direct_deadline_ns = 0;  // start + scaled probe timeout
  std::uint64_t final_deadline_ns = 0;   // start + scaled probe interval
  std::uint64_t incarnation = 0;         // the target's, when the probe began
  bool indirect_sent = false;
  std::uint32_t helpers = 0;         // indirect helpers asked
  std::uint32_t expected_nacks = 0;  // of them, those whose silence counts (established)
  std::uint32_t nacks = 0;           // nacks from those
  std::vector<std::string> counted_helpers;
  // Helpers asked and not yet heard from (at most indirect_checks): each may nack once.
  std::vector<std::string> awaiting_nack;
};

// An indirect probe we run for another member (we are the helper).
struct Relay {
  std::uint32_t origin_seq = 0;
  Address origin;
  bool want_nack = false;
  std::uint64_t deadline_ns = 0;
  std::string target;
};

class ProbeScheduler {
 public:
  ProbeScheduler(std::uint32_t max_relays, std::uint32_t max_members)
      : max_relays_(max_relays), max_list_(max_members) {}

  // Next member to probe, skipping ourselves, tombstones and forgotten names.
  std::optional<std::string> next_target(const MemberTable& table, const std::string& self, Rng& rng);

  // A member became live: give it a random slot among those not yet probed this
  // round, so it is probed within the round (memberlist does the same).
  void add_member(const Name& name, Rng& rng);

  // Candidate names for random peer selection (may hold stale names: check them).
  const std::vector<Name>& list() const { return list_; }

  std::optional<Probe>& current() { return current_; }
  const std::optional<Probe>& current() const { return current_; }

  // Nullptr when the relay table is full (the caller counts the drop).
  Relay* add_relay(std::uint32_t our_seq, Relay relay);
  // The relay whose ping to the target had `our_seq`; nullptr if none.
  const Relay* find_relay(std::uint32_t our_seq) const;
  void erase_relay(std::uint32_t our_seq);
  // The earliest relay deadline, UINT64_MAX with none: O(1), since the engine
  // asks on every pass and a flood of indirect pings fills the table.
  std::uint64_t earliest_relay_deadline() const;
  // The relays whose deadline is <= now_ns, by our seq_no.
  std::vector<std::uint32_t> due_relays(std::uint64_t now_ns) const;
  std::size_t relay_count() const { return relays_.size(); }

 private:
  void rebuild(const MemberTable& table, const std::string& self, Rng& rng);

  std::uint32_t max_relays_;
  std::uint32_t max_list_;
  std::vector<Name> list_;
  std::size_t index_ = 0;
  std::optional<Probe> current_;
  std::map<std::uint32_t, Relay> relays_;                              // by the seq_no of our ping to the target
  std::set<std::pair<std::uint64_t, std::uint32_t>> relay_deadlines_;  // (deadline, seq) of each relay
};

}  // namespace gw::cp::engine
