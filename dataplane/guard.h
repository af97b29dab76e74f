// A worker's guard state: everything the ladder's stateful steps and the
// unkeyed classifier keep per lcore (replay windows, token buckets,
// Hyperscan scratch) and the clock they read. Owned by the WorkerContext,
// touched only by its lcore.
//
// Pure: no DPDK. The worker feeds the clock raw TSC readings.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "config/config.h"
#include "dataplane/api/token_bucket.h"
#include "dataplane/classifier.h"
#include "dataplane/ladder.h"
#include "dataplane/rate_limit.h"
#include "dataplane/replay.h"

namespace gw::dp {

// How far the system's wall clock has moved from the workers' TSC-based
// one since start (issue 51 item 8). The workers count Unix time from one
// reading of the wall clock at start and the TSC; without this they never
// saw NTP step the clock, so a gateway started with a wrong clock stayed
// deaf (every datagram stale) until restarted. The control lcore compares
// the two every housekeeping pass (poll()) and publishes the difference;
// each worker adds it at its next burst. Steps both ways keep invariant (b):
// the replay tables' floors only rise (replay.h), and the restart watermark
// moves with the clock (it marks the start *instant*: ladder.h).
class WallClockFollower {
 public:
  // Before the workers run: the reference every worker clock counts from.
  void start(std::uint64_t tsc_hz, std::uint64_t tsc0, std::uint64_t unix_ns0) noexcept {
    tsc_hz_ = tsc_hz;
    tsc0_ = tsc0;
    unix_ns0_ = unix_ns0;
  }
  std::uint64_t tsc_hz() const noexcept { return tsc_hz_; }
  std::uint64_t tsc0() const noexcept { return tsc0_; }
  std::uint64_t unix_ns0() const noexcept { return unix_ns0_; }

  // Control lcore: the wall clock read `unix_ns` when the TSC read `tsc`.
  // Publishes the difference when it moved by kMinChangeNs or more (NTP's
  // slewing too, in 10 ms steps); returns the change published (0: none).
  std::int64_t poll(std::uint64_t tsc, std::uint64_t unix_ns) noexcept {
    if (tsc_hz_ == 0 || tsc < tsc0_) return 0;
    const std::uint64_t d = tsc - tsc0_;
    const std::uint64_t ns = d / tsc_hz_ * 1'000'000'000ULL + d % tsc_hz_ * 1'000'000'000ULL / tsc_hz_;
    const std::int64_t step = static_cast<std::int64_t>(unix_ns - (unix_ns0_ + ns));
    const std::int64_t change = step - step_ns_.load(std::memory_order_relaxed);
    if (change > -kMinChangeNs && change < kMinChangeNs) return 0;
    step_ns_.store(step, std::memory_order_relaxed);
    return change;
  }
  // What the workers add to their clocks, in ns.
  const std::atomic<std::int64_t>* step() const noexcept { return &step_ns_; }
  std::int64_t step_ns() const noexcept { return step_ns_.load(std::memory_order_relaxed); }

  static constexpr std::int64_t kMinChangeNs = 10'000'000;

 private:
  std::uint64_t tsc_hz_ = 0;
  std::uint64_t tsc0_ = 0;
  std::uint64_t unix_ns0_ = 0;
  // Written by the control lcore about once a second at most, read by every
  // worker once per burst: a line that stays shared in their caches.
  alignas(64) std::atomic<std::int64_t> step_ns_{0};
};

// TSC readings to wall-clock seconds and monotonic nanoseconds.
struct WorkerClock {
  std::uint64_t tsc_hz = 0;  // 0: no clock (the ladder skips the timestamp window)
  std::uint64_t tsc0 = 0;
  std::uint64_t unix_ns0 = 0;  // wall clock when the TSC read tsc0
  // Test aid (gossipgw --freeze-clock): time stands still at unix_ns0, so
  // pcap cases see exact timestamp and token-bucket outcomes. A frozen
  // clock follows no step.
  bool frozen = false;
  // The wall clock's steps since start (WallClockFollower); null: none.
  const std::atomic<std::int64_t>* step = nullptr;

  // Sets st.now_s, st.now_ns and st.wall_step_s for a TSC reading `tsc`.
  void read(std::uint64_t tsc, LadderState& st) const noexcept {
    if (tsc_hz == 0) return;
    const std::uint64_t d = frozen || tsc < tsc0 ? 0 : tsc - tsc0;
    const std::uint64_t ns = d / tsc_hz * 1'000'000'000ULL + d % tsc_hz * 1'000'000'000ULL / tsc_hz;
    const std::int64_t s = step != nullptr && !frozen ? step->load(std::memory_order_relaxed) : 0;
    st.have_clock = true;
    st.now_ns = ns;  // monotonic: the token buckets never see a step
    st.now_s = static_cast<std::uint32_t>((unix_ns0 + ns + static_cast<std::uint64_t>(s)) / 1'000'000'000ULL);
    st.wall_step_s = static_cast<std::int32_t>(s / 1'000'000'000LL);
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
