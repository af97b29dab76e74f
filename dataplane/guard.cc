#include "dataplane/guard.h"

#include <sodium.h>

#include "dataplane/hash.h"

namespace gw::dp {

std::uint64_t random_table_seed() noexcept {
  std::uint64_t s = 0;
  randombytes_buf(&s, sizeof s);
  return s;
}

void setup_guard(LcoreGuard& g, const config::Config& cfg, const Classifier* classifier, std::uint64_t seed) {
  const config::LimitsConfig& l = cfg.limits;
  g.replay = std::make_unique<ReplayTable>(l.replay_senders, seed, l.replay_window_s, l.replay_senders_per_source);
  g.rate = std::make_unique<RateLimiter>(l.sources, RateBudget{l.known_rate_pps, l.known_burst},
                                         RateBudget{l.unknown_rate_pps, l.unknown_burst}, seed ^ 0x9E3779B97F4A7C15ULL);
  g.failed = std::make_unique<FailedHeaders>(seed ^ 0xC2B2AE3D27D4EB4FULL);
  g.state.replay = g.replay.get();
  g.state.failed = g.failed.get();
  g.state.rate = g.rate.get();
  g.classifier = classifier;
  if (classifier != nullptr) g.scratch = classifier->make_scratch();
  g.max_scans_per_burst = cfg.classifier.max_scans_per_burst;
  g.scan_budget.configure(cfg.classifier.max_scans_per_sec);
}

}  // namespace gw::dp
