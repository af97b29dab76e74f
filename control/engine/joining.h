// Joining: from our seeds to a whole view.
//
// A join asks each seed for its whole view, and retries unanswered rounds for
// ever with capped exponential backoff (a node started before its seeds joins
// when they come up), a retry also asking a member heard of meanwhile. Once
// an answer is in, two follow-up whole-view syncs with other members fill in
// what the seed's own view lacked, and the first periodic sync comes early.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "control/engine/core.h"
#include "control/engine/effects.h"

namespace gw::cp::engine {

class Joining {
 public:
  Joining(Core& core, Effects& fx) : core_(core), fx_(fx) {}

  // Sends a whole-view request to each seed (at most kMaxSeeds), retried
  // while no seed has answered. No seed (or only ourselves): joined at once.
  void join(std::span<const Address> seeds, std::uint64_t now_ns);
  // We were held dead by the member at `via` (we refuted): whole views with
  // it, as a join (at most one rejoin a push_pull_interval_ns), retried with
  // other members until one answers (kRejoinAttempts in all): at a heal,
  // every member rejoins at once, and syncs over the concurrency cap are
  // refused.
  void rejoin(const Address& via, std::uint64_t now_ns);
  // A response part to our sync `seq_no` was accepted: true if it answers a
  // join or a follow-up (merged as a join answer).
  bool on_answer(std::uint32_t seq_no, std::uint64_t now_ns);
  // Joined: a seed (or a member asked later) answered our join, or we had no seed.
  bool joined() const { return joined_; }
  std::uint32_t attempts() const { return attempts_; }

  // ---- timers ----
  void run(std::uint64_t now_ns);
  std::uint64_t next_deadline() const;

  static constexpr std::size_t kMaxSeeds = 16;
  // Join rounds whose sequence numbers are still recognised as join answers.
  static constexpr std::uint32_t kRoundsRemembered = 4;

 private:
  void send_join(std::uint64_t now_ns);
  void follow_up(std::uint64_t now_ns);

  // Whole-view syncs still to do after joining, and when the next is due.
  static constexpr std::uint32_t kFollowupJoins = 2;
  static constexpr std::uint32_t kMaxFollowupAttempts = 6;

  Core& core_;
  Effects& fx_;
  std::vector<Address> seeds_;
  std::vector<std::uint32_t> join_seqs_;  // join and follow-up requests of the latest rounds
  std::uint32_t attempts_ = 0;
  bool joined_ = false;
  std::uint64_t next_join_ns_ = UINT64_MAX;
  std::uint32_t followups_wanted_ = 0;  // whole follow-up answers still wanted
  bool answer_cut_ = false;             // the answer that ended our join lacked parts
  std::uint32_t followup_attempts_ = 0;
  std::vector<std::uint32_t> followup_seqs_;  // follow-ups sent, not yet wholly answered
  std::uint64_t next_followup_ns_ = UINT64_MAX;
  static constexpr std::uint32_t kRejoinAttempts = 5;
  std::uint64_t last_rejoin_ns_ = 0;
  bool rejoined_ = false;
  std::uint32_t rejoin_seq_ = 0;       // the latest rejoin request
  std::uint32_t rejoin_attempts_ = 0;  // sent so far; 0: no rejoin under way
  std::uint64_t next_rejoin_ns_ = UINT64_MAX;
  void send_rejoin(const Address& via, std::uint64_t now_ns);
};

}  // namespace gw::cp::engine
