// Lifeguard suspicion timers. A suspicion starts at a long timeout (max) and
// shrinks toward min as independent members confirm it, because k independent
// accusers make a false positive unlikely:
//   timeout = max(min, max - (max - min) * log(C + 1) / log(K + 1))
// with C confirmations so far and K expected ones (memberlist's formula).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace gw::cp::engine {

// min = mult * max(1, log10(max(1, n))) * interval (memberlist suspicionTimeout).
std::uint64_t suspicion_min_timeout(std::uint32_t mult, std::size_t n, std::uint64_t interval_ns);

// The shrinking timeout for `confirmations` out of `expected`.
std::uint64_t suspicion_timeout(std::uint64_t min_ns, std::uint64_t max_ns,
                                std::uint32_t confirmations, std::uint32_t expected);

class Suspicion {
 public:
  // `from` is the accuser that started it; it does not count as a confirmation.
  Suspicion(std::string from, std::uint32_t expected, std::uint64_t min_ns,
            std::uint64_t max_ns, std::uint64_t start_ns);

  // True if `from` is a new independent confirmation (then re-gossip it).
  bool confirm(const std::string& from);

  std::uint64_t deadline() const;
  // Not before `t`, whatever the confirmations (after a stall of our own).
  void hold_until(std::uint64_t t) { hold_ns_ = t > hold_ns_ ? t : hold_ns_; }
  std::uint32_t confirmations() const { return static_cast<std::uint32_t>(confirmers_.size()); }

 private:
  std::string from_;
  std::uint32_t expected_;
  std::uint64_t min_ns_;
  std::uint64_t max_ns_;
  std::uint64_t start_ns_;
  std::uint64_t hold_ns_ = 0;
  std::set<std::string> confirmers_;  // at most expected_ entries
};

// Suspicions by member name; bounded by the member table (one per member).
using SuspicionMap = std::map<std::string, Suspicion>;

}  // namespace gw::cp::engine
