// Probing and suspicion: SWIM's failure detector with Lifeguard.
//
// One probe at a time, to the member this round of the probe ring gives us
// (or SWIM's randomised round-robin when the ring is not in use), a newcomer
// in a storm every other round, and a suspicion we hold on hearsay whose
// verdict never came. A missed direct ack brings indirect probes through
// helpers (and one fallback ping); a probe that fails accuses the target. We
// run the indirect probes others ask of us (relays). Suspicions wait a
// Lifeguard timeout that shrinks with independent confirmations; on the ring
// a suspicion is told to the suspect and its next probers rather than
// gossiped. Local health (awareness) stretches our own timing when we seem to
// be the slow one.
//
// probing.cc holds the probe cycle and relays, probing_suspicion.cc the
// suspicions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "control/engine/awareness.h"
#include "control/engine/core.h"
#include "control/engine/effects.h"
#include "control/engine/probe_scheduler.h"
#include "control/engine/suspicion.h"

namespace gw::cp::engine {

class Probing {
 public:
  Probing(Core& core, Effects& fx, std::uint64_t now_ns);

  // ---- messages ----
  void on_ping(const Address& from, const Ping& m, std::uint64_t now_ns);
  void on_indirect_ping(const Address& from, const IndirectPing& m, std::uint64_t now_ns);
  // An ack for our probe: true if it was (or claimed to be) one.
  bool on_probe_ack(const Ack& m, std::uint64_t now_ns);
  // An ack for a relay we run for another member.
  void on_relay_ack(const Ack& m);
  void on_nack(const Nack& m);

  // ---- members ----
  // A member became live: probed within this round.
  void add_member(const Name& name) { probes_.add_member(name, core_.rng); }
  // Candidates for random peer selection (may hold stale names: check them).
  const std::vector<Name>& candidates() const { return probes_.list(); }
  // Leaving: the probe in flight accuses nobody.
  void abandon_probe() { probes_.current().reset(); }
  // `m` answers our current probe, from the probed member itself.
  bool answers_probe(const Ack& m) const {
    const std::optional<Probe>& p = probes_.current();
    return p && p->seq_no == m.seq_no && p->target == m.source;
  }

  // ---- suspicions ----
  const Suspicion* suspicion(const std::string& name) const { return suspicions_.find(name); }
  // A Suspect of a member we already suspect: counted as a confirmation if
  // it is a new accuser (ours is told to the accusers) and `vouched`: its
  // `from` is a live member of the view whose address sent it (or we, from
  // our own probe), not a name anyone with the key can write (issue 51).
  // False if we held no suspicion of it.
  bool confirm(const Suspect& s, bool vouched);
  // Starts our suspicion of live `m` (its status is Suspect already); `merged`:
  // from a peer's sync rather than a message.
  void suspect(const Suspect& s, const Member& m, std::uint64_t now_ns, bool merged);
  void drop_suspicion(const std::string& name) { suspicions_.erase(name); }
  // The probe ring's schedule is in force cluster-wide (probe_ring, 3+ members).
  bool ring_shared() const;
  // The probe ring's clock at our `now_ns` (docs/membership.md, "The probe
  // ring's clock"): the cluster's, as the pings carry it (ring_ms), so that
  // every member reads the same round whatever its own clock says. A member
  // that has heard none yet runs on its own clock and tells nobody, for
  // kRingQuietIntervals probe intervals: it takes the first one it hears as
  // it is, so a joiner whose host clock is ahead does not move the whole
  // cluster's rounds. After that, or once it has heard one, a ring clock
  // heard ahead of ours is caught up with (the largest wins), and ours never
  // goes back.
  std::uint64_t ring_clock(std::uint64_t now_ns) const { return now_ns + ring_lead_ns_; }
  // A ping's ring_ms, heard at our `now_ns`.
  void note_ring_clock(std::uint64_t ring_ms, std::uint64_t now_ns);
  // What our pings carry: the ring clock in milliseconds (at least 1), or 0
  // (none) while we have heard none and are still quiet.
  std::uint64_t ring_ms(std::uint64_t now_ns) const {
    if (!ring_heard_ && now_ns < ring_quiet_until_ns_) return 0;
    return std::max<std::uint64_t>(1, ring_clock(now_ns) / 1'000'000ULL);
  }
  static constexpr std::uint64_t kRingQuietIntervals = 10;

  // ---- local health ----
  Awareness& awareness() { return awareness_; }
  const Awareness& awareness() const { return awareness_; }
  std::uint64_t probe_timeout_ns() const { return awareness_.scale(core_.config.probe_timeout_ns); }
  std::uint64_t probe_interval_ns() const { return awareness_.scale(core_.config.probe_interval_ns); }
  // We were not run for a while (a starved control lcore): our own timeouts
  // measured our absence, not the others'.
  void after_own_stall(std::uint64_t now_ns);

  // ---- timers ----
  // Relays due, the probe in flight, and the next probe.
  void run_probes(std::uint64_t now_ns);
  // Suspicions that ran out, and suspicions to tell again.
  void run_suspicions(std::uint64_t now_ns);
  std::uint64_t next_deadline() const;

 private:
  void start_probe(std::uint64_t now_ns);
  void send_indirect_probes(std::uint64_t now_ns);
  void finish_probe_failed(std::uint64_t now_ns);
  void expire_relays(std::uint64_t now_ns);
  void expire_suspicions(std::uint64_t now_ns);
  void retell_suspicions(std::uint64_t now_ns);
  // True if `h` may count against our health when it does not nack.
  bool helper_counts(const Member& h, std::uint64_t now_ns) const;
  // Up to k indirect-probe helpers: Alive, not `target`, the longest-known of a
  // random sample (in a storm of short-lived members, the established ones).
  std::vector<std::string> probe_helpers(std::size_t k, const std::string& target);
  // A member we suspect on others' word whose verdict should have reached us
  // by now (hearsay_checks_), if there is one.
  std::optional<std::string> hearsay_target(std::uint64_t now_ns);
  // Our target in this round of the probe ring, if the ring is in use.
  std::optional<std::string> ring_target(std::uint64_t now_ns);
  bool ring_in_use();
  // When our next probe is due: on our phase of the ring, or one scaled
  // interval from now.
  std::uint64_t next_probe_at(std::uint64_t now_ns);
  // Up to k members that probe `target` this round and the next ones, by our view.
  std::vector<const Member*> next_probers(const std::string& target, std::uint32_t k, std::uint64_t now_ns) const;
  // Our suspicion of m (or one merged from a sync), to those who act on it:
  // the suspect and its next probers on the ring (a newcomer's, or without
  // the ring: gossiped).
  void spread_suspicion(const Suspect& s, const Member& m, std::uint64_t now_ns, bool merged);
  // Our own failed probe confirmed a suspicion we held: the accusers are told.
  void confirm_to_accusers(const Suspect& s);
  // The transmit cap of a Suspect of `m`: suspicion_retransmit_limit(), or
  // none (0) for a newcomer.
  std::uint32_t suspicion_transmit_cap(const Member& m, std::uint64_t now_ns) const;

  Core& core_;
  Effects& fx_;
  ProbeScheduler probes_;  // the round-robin, the probe in flight, relays
  Awareness awareness_;
  SuspicionSet suspicions_;
  std::uint64_t next_probe_ns_ = 0;
  bool newcomer_next_ = false;  // in a storm every other probe goes to a newcomer
  // The probe ring (config probe_ring): our position in the table's view,
  // found again when the table's version moves.
  bool ring_self_ = false;
  // What our ring clock adds to our own (ring_clock), modulo 2^64: the
  // first ring clock heard may be behind ours (a "negative" lead); after
  // that it only grows.
  std::uint64_t ring_lead_ns_ = 0;
  bool ring_heard_ = false;               // a ring clock was heard and taken
  std::uint64_t ring_quiet_until_ns_ = 0;  // until then, unheard, we tell none of ours
  std::uint64_t ring_version_ = UINT64_MAX;
  std::size_t ring_pos_ = 0;
  // Suspicions we hold on others' word, by when the accusers' verdict should
  // have reached us: started + the shortest timeout + a probe interval. Only
  // the accusers' timers shrink (confirm_to_accusers), so a member that
  // missed every copy of their Dead would wait the longest timeout; it probes
  // the suspect itself instead (start_probe), and its own failed probe is a
  // confirmation that members holding the death answer with theirs.
  struct HearsayCheck {
    std::uint64_t due_ns;
    std::uint64_t incarnation;
    Name name;
  };
  std::deque<HearsayCheck> hearsay_checks_;
  // Suspicions we told on the ring (spread_suspicion), told to the suspect
  // again every probe interval while they last: one datagram is all it would
  // get otherwise, and after a partition heals the views (and so the ring's
  // probers) disagree for a while. In due order.
  struct Retell {
    std::uint64_t due_ns;
    Suspect suspect;
  };
  std::deque<Retell> retells_;
};

}  // namespace gw::cp::engine
