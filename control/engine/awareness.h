// Lifeguard local health ("awareness"): a score in [0, max). A node that misses
// acks, gets no nacks from its helpers, or must refute a suspicion about itself is
// probably the slow one, so it stretches its own probe interval and timeout by
// (score + 1) instead of accusing healthy peers.
#pragma once

#include <cstdint>

namespace gw::cp::engine {

class Awareness {
 public:
  explicit Awareness(std::uint32_t max_multiplier) : max_(max_multiplier == 0 ? 1 : max_multiplier) {}

  // Raise on failures (positive), lower on successful probes (negative).
  void apply_delta(int delta) {
    long next = static_cast<long>(score_) + delta;
    if (next < 0) next = 0;
    if (next > static_cast<long>(max_) - 1) next = static_cast<long>(max_) - 1;
    score_ = static_cast<std::uint32_t>(next);
  }

  std::uint32_t score() const { return score_; }

  // A duration stretched by the current health: d * (score + 1).
  std::uint64_t scale(std::uint64_t d) const { return d * (score_ + 1ULL); }

 private:
  std::uint32_t max_;
  std::uint32_t score_ = 0;
};

}  // namespace gw::cp::engine
