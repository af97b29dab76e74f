// Newcomers and storms: who may enter the view, and when.
//
// Admission: never-seen members pass a name/tag policy and a token bucket;
// those over the rate wait (bounded) and are admitted as tokens come. Storms:
// newcomers failing here in numbers (storm_newcomer_failures within
// storm_window_ns) mean a storm of short-lived members; arrivals faster than
// a running cluster grows mean a surge. In either, a never-seen member waits
// outside the view on probation, is asked for proof of life, and joins the
// view only if it lived through it; a newcomer that fails a probe in a storm
// gets one last ping before its verdict. The policy also keeps the list of
// live newcomers that a storm's probes are drawn from.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "control/engine/admission.h"
#include "control/engine/core.h"
#include "control/engine/effects.h"
#include "control/engine/identity.h"

namespace gw::cp::engine {

class Newcomers {
 public:
  Newcomers(Core& core, Effects& fx, std::uint64_t now_ns);

  // ---- the climate ----
  // A storm of short-lived members: storm_newcomer_failures newcomers failed
  // within storm_window_ns (and until storm_window_ns after the last such).
  bool in_storm(std::uint64_t now_ns) const;
  // An arrival surge (config: surge_*): never-seen members arrive faster
  // than a running cluster grows; they are admitted on probation.
  bool in_surge(std::uint64_t now_ns) const { return now_ns < surge_until_ns_; }
  // A newcomer was suspected here: a storm signal only if the suspicion still
  // stands a refutation's time later (kRefuteRounds probe intervals). A live
  // newcomer refutes; a phantom cannot. Counted at once, every suspicion of a
  // live newcomer on a lossy network read as a storm (issue 55: 10 % loss
  // made 200,000 false deaths while a cluster formed).
  void note_suspected(const Member& m, std::uint64_t now_ns);
  // A newcomer was declared dead here (or a member that had been one).
  void note_failure(const std::string& name, std::uint64_t now_ns);

  // ---- admission ----
  // A never-seen member's Alive (gossip or sync): admit it, refuse it, or keep
  // it waiting for a token.
  // `from_join`: from a whole-view answer on one member's word (issue 51: it
  // goes through admission as gossip does; one waiting comes back as a join
  // answer's, not re-gossiped and not an arrival).
  AdmitVerdict admit(const Alive& a, std::uint64_t now_ns, bool from_join = false);
  // The policy alone, no rate (a member coming back from a long split).
  bool policy_allows(const Alive& a) const { return admission_.policy_allows(a.node, a.tags); }
  // A never-seen member listed in a whole-view answer (our join, its
  // follow-ups, a rejoin) from `from`. One member's word goes through
  // admission as gossip does: a key-holding seed could otherwise put any
  // number of phantoms in a joiner's view at once (issue 51: 60,000, 16.7 h
  // to clear). Two members' word is the cluster as it is, admitted at once:
  // true if a whole-view answer from another address listed it within
  // kVouchTtlNs (the answers are bound to the address asked: SyncManager).
  // Otherwise the word of `from` is noted (bounded: max_members names) and
  // the answer is false. Without an address (a waiting entry coming back),
  // false and nothing noted.
  bool corroborated(const std::string& name, const Address* from, std::uint64_t now_ns);
  // A join, its follow-ups (2-4 s and 8 s later) and a rejoin's answers fall
  // well within it.
  static constexpr std::uint64_t kVouchTtlNs = 60 * kSecond;
  // A never-seen member entered the table (`introducer`: the sender of the
  // datagram that brought it, if any): counts towards a surge, joins the
  // newcomers, and on probation (storm or surge) starts it.
  // `arrival`: false for a member of our join answer (the cluster as it is,
  // not an arrival: it counts towards no surge).
  void admitted(Member& m, const Address* introducer, std::uint64_t now_ns, bool arrival = true);
  // A member came back from a tombstone: a newcomer again.
  void remember(Member& m);
  // Whether a never-seen member admitted now is held on probation.
  bool probation_now(std::uint64_t now_ns) const;
  std::size_t pending() const { return pending_.size(); }

  // ---- deaths ----
  // `m` is being buried (Dead or Left): it is no newcomer any more; a
  // probationer's introducer is told first-hand (unless it told us), the
  // Dead `unproven` if it is a probation's verdict (Dead::unproven). Returns
  // whether it was on probation.
  bool burying(Member& m, std::uint64_t incarnation, MemberStatus status, const Address* told_by,
               std::uint64_t now_ns, bool unproven);
  void forget(const std::string& name);

  // ---- probing ----
  // A random live newcomer, if there is one.
  std::optional<std::string> probe_target(std::uint64_t now_ns);
  // An ack for a proof ping or a last ping of ours: true if it was one.
  bool on_ack(const Ack& m, std::uint64_t now_ns);
  // A newcomer in a storm that failed our probe with no helper's word against
  // it: one more direct ping before the verdict. False if none could be sent.
  bool last_ping(const Member& m, std::uint64_t now_ns);

  // ---- timers ----
  // Suspicions of newcomers noted a refutation's time ago that still stand.
  void weigh_suspicions(std::uint64_t now_ns);
  void admit_waiting(std::uint64_t now_ns);
  void expire_last_pings(std::uint64_t now_ns);
  void end_probations(std::uint64_t now_ns);
  std::uint64_t next_deadline() const;

  // Proof pings a probationer gets before it is declared dead unproven: at
  // least kProofPings, and as many as keep a false verdict as rare as
  // kProofPings make it at kProofLossDesign round-trip loss, at the loss we
  // measure (Core::round_trip_loss), up to kMaxProofPings.
  static constexpr std::uint8_t kProofPings = 4;
  static constexpr std::uint8_t kMaxProofPings = 16;
  static constexpr double kProofLossDesign = 0.05;
  std::uint8_t proof_pings_needed() const;
  // Probe intervals a suspected newcomer has to refute before its suspicion
  // counts towards a storm: it hears it on the next probe of it (or a
  // retelling), and its refutation spreads in a gossip epidemic.
  static constexpr std::uint32_t kRefuteRounds = 2;

 private:
  void note_arrival(std::uint64_t now_ns);
  void forget_at(std::size_t i);
  // A ping of its own number, no helpers, no suspicion (a probationer's proof
  // ping, a newcomer's last ping), its number kept in proof_seqs_; nullopt
  // when proof_seqs_ is full.
  std::optional<std::uint32_t> send_proof_ping(const Member& m);

  Core& core_;
  Effects& fx_;
  Admission admission_;
  // Never-seen members over the admission rate, admitted as tokens come.
  struct Waiting {
    Alive alive;
    bool from_join = false;  // from the answer to our join
  };
  std::deque<Waiting> pending_;
  // Whole-view answers' word about never-seen members: name -> the address
  // whose answer listed it first, and when (in that order, for expiry).
  struct KeyedNameHash {
    std::size_t operator()(const std::string& s) const { return static_cast<std::size_t>(identities().index_hash(s)); }
  };
  struct Vouch {
    Address from;
    std::uint64_t at_ns = 0;
  };
  std::unordered_map<std::string, Vouch, KeyedNameHash> vouches_;
  std::deque<std::pair<std::uint64_t, std::string>> vouch_order_;
  // Live members admitted (or back from a tombstone) recently, in no order,
  // by name id (each knows its index: Member::newcomer_slot).
  std::vector<std::uint32_t> list_;
  // The last storm_newcomer_failures distinct newcomers that failed: (when, name hash).
  std::deque<std::pair<std::uint64_t, std::uint64_t>> failures_;
  std::uint64_t storm_until_ns_ = 0;
  // Newcomers suspected here, by when their suspicion counts if it stands.
  struct Suspected {
    std::uint64_t due_ns;
    std::uint64_t incarnation;
    Name name;  // held, so that its id is not reused meanwhile
  };
  std::deque<Suspected> suspected_;
  // When never-seen members were admitted, within the last surge_window_ns.
  std::deque<std::uint64_t> arrivals_;
  std::uint64_t surge_until_ns_ = 0;
  // Members on probation, by when they may join the view (in admission order).
  std::deque<std::pair<std::uint64_t, std::string>> probationers_;
  // Probationers sent a proof ping, by when to look again (in that order).
  std::deque<std::pair<std::uint64_t, std::string>> proof_checks_;
  // Probationers asked for proof of life, and newcomers sent a last ping:
  // name id -> that ping's number.
  std::unordered_map<std::uint32_t, std::uint32_t> proof_seqs_;
  // Who told us of each probationer (the sender of the datagram that brought
  // it), by name id. Nobody gossips a probationer, so few members know one;
  // when it dies on probation here, the member that vouched for it may be the
  // only one holding it in its view: it is told directly, since gossip of a
  // death reaches only members that knew the dead.
  std::unordered_map<std::uint32_t, Address> introducers_;
  // Newcomers sent a last ping before a storm burial, by when to give the
  // verdict (in that order).
  struct LastPing {
    std::uint64_t due_ns;
    std::uint64_t sent_ns;
    std::uint64_t incarnation;
    std::uint32_t seq_no;
    Name name;  // held, so that its id is not reused meanwhile
  };
  std::deque<LastPing> last_pings_;
};

}  // namespace gw::cp::engine
