// A worker's guard state: everything the ladder's stateful steps and the
// unkeyed classifier keep per lcore (replay windows, token buckets,
// Hyperscan scratch) and the clock they read. Owned by the WorkerContext,
// touched only by its lcore.
//
// Pure: no DPDK. The worker feeds the clock raw TSC readings.
#pragma once

#include <cstdint>
#include <memory>

#include "config/config.h"
#include "dataplane/api/token_bucket.h"
#include "dataplane/classifier.h"
#include "dataplane/ladder.h"
#include "dataplane/rate_limit.h"
#include "dataplane/replay.h"

namespace gw::dp {

// TSC readings to wall-clock seconds and monotonic nanoseconds.
struct WorkerClock {
  std::uint64_t tsc_hz = 0;  // 0: no clock (the ladder skips the timestamp window)
  std::uint64_t tsc0 = 0;
  std::uint64_t unix_ns0 = 0;  // wall clock when the TSC read tsc0
  // Test aid (gossipgw --freeze-clock): time stands still at unix_ns0, so
  // pcap cases see exact timestamp and token-bucket outcomes.
  bool frozen = false;

  // Sets st.now_s and st.now_ns for a TSC reading `tsc`.
  void read(std::uint64_t tsc, LadderState& st) const noexcept {
    if (tsc_hz == 0) return;
    const std::uint64_t d = frozen || tsc < tsc0 ? 0 : tsc - tsc0;
    const std::uint64_t ns = d / tsc_hz * 1'000'000'000ULL + d % tsc_hz * 1'000'000'000ULL / tsc_hz;
    st.have_clock = true;
    st.now_ns = ns;
    st.now_s = static_cast<std::uint32_t>((unix_ns0 + ns) / 1'000'000'000ULL);
  }
};

// A token bucket of classifier scans (classifier.max_scans_per_sec), one
// tenth of a second deep, refilled from the worker's burst clock. Only its
// rate 0 differs from the shared bucket's: here it means no limit.
class ScanBudget {
 public:
  // 0: no limit.
  void configure(std::uint32_t per_sec) noexcept {
    unlimited_ = per_sec == 0;
    bucket_ = TokenBucket(per_sec, per_sec / 10 > 0 ? per_sec / 10 : 1, 0);
  }
  // How many of `want` scans may run at monotonic time `now_ns`; takes them.
  std::uint32_t take(std::uint32_t want, std::uint64_t now_ns) noexcept {
    if (unlimited_) return want;
    return static_cast<std::uint32_t>(bucket_.take_up_to(want, now_ns));
  }

 private:
  bool unlimited_ = true;
  TokenBucket bucket_{0, 0, 0};
};

struct alignas(64) LcoreGuard {
  LadderState state;  // points at the tables below once set up
  WorkerClock clock;
  std::unique_ptr<ReplayTable> replay;
  std::unique_ptr<RateLimiter> rate;
  std::unique_ptr<FailedHeaders> failed;
  // Null: unkeyed packets are counted as unscanned.
  const Classifier* classifier = nullptr;
  Classifier::Scratch scratch;
  // Unkeyed packets scanned per burst at most (0: all); the rest are
  // unscanned, so an unkeyed flood costs a bounded share of each burst.
  std::uint32_t max_scans_per_burst = 0;
  // And per second (classifier.max_scans_per_sec); unconfigured: no limit.
  ScanBudget scan_budget;
};

// Builds the tables from cfg.limits and a scratch from `classifier` (null
// when classifier.enabled is false). `seed` keys the table hashes. Allocates;
// call at start, never on the data path.
void setup_guard(LcoreGuard& g, const config::Config& cfg, const Classifier* classifier, std::uint64_t seed);

}  // namespace gw::dp
