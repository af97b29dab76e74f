// Per-worker dataplane counters. Each worker owns one, written only by that
// worker's lcore; others read it only after the worker has stopped (or, for
// live export, tolerate a torn view of a single counter).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "dataplane/api/verdict.h"

namespace gw::dp {

// Unkeyed packets are also counted by what the classifier named them: one
// counter per rule (names from the classifier), plus these two. Stable names.
inline constexpr std::string_view kUnkeyedUnmatchedName = "unmatched";  // scanned, no rule matched
inline constexpr std::string_view kUnkeyedUnscannedName = "unscanned";  // classifier off or burst budget spent
// Slots for per-rule counters (dataplane/classifier.h kMaxClassifierRules).
inline constexpr std::size_t kUnkeyedRuleSlots = 64;

// The per-lcore guard tables (not verdicts): replay windows aged out (their
// newest datagram stale; the table never evicts a live one) and token
// buckets evicted.
inline constexpr std::string_view kReplayExpiredName = "replay_table_expired";
inline constexpr std::string_view kRateEvictName = "ratelimit_table_evict";
// Replay windows evicted by a new sender when the table was full (its floor
// rose past them), and windows rebased by a datagram stamped after all they
// accepted (after a key holder forged a counter ahead: replay.h).
inline constexpr std::string_view kReplayEvictName = "replay_table_evict";
inline constexpr std::string_view kReplayRebasedName = "replay_window_rebased";

struct alignas(64) WorkerCounters {
  std::uint64_t rx_total = 0;
  std::array<std::uint64_t, kVerdictCount> verdicts{};
  // Accepted packets by header priority class (urgent, probe, gossip, bulk).
  std::array<std::uint64_t, 4> accepted_by_class{};
  std::uint64_t rx_bursts = 0;
  std::uint64_t idle_polls = 0;
  // Unkeyed packets by classifier rule index; [kUnkeyedRuleSlots] is "unmatched".
  std::array<std::uint64_t, kUnkeyedRuleSlots + 1> unkeyed_by_rule{};
  std::uint64_t unkeyed_unscanned = 0;
  std::uint64_t replay_table_expired = 0;
  std::uint64_t ratelimit_table_evict = 0;
  // ARP (dataplane/arp.h), not verdicts: the frames stay drop_not_gossip.
  std::uint64_t arp_replies = 0;  // requests for our address answered
  std::uint64_t arp_hints = 0;    // senders taken as transmit MAC hints
  // The replay table's evictions and rebases (kReplayEvictName, kReplayRebasedName).
  std::uint64_t replay_table_evict = 0;
  std::uint64_t replay_window_rebased = 0;

  void count(Verdict v) noexcept { ++verdicts[static_cast<std::size_t>(v)]; }
  std::uint64_t get(Verdict v) const noexcept { return verdicts[static_cast<std::size_t>(v)]; }
};

}  // namespace gw::dp
