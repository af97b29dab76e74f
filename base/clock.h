// The clocks, read in one place: monotonic nanoseconds for timers and
// deadlines, the Unix time for wire timestamps and incarnations. The engine
// never reads them (its hosts pass `now` in); the control lcore, the
// gateway's composition root and the dataplane's start-up read them here.
#pragma once

#include <cstdint>

namespace gw::base {

// Any thread. Monotonic (CLOCK_MONOTONIC through std::chrono::steady_clock), in ns.
std::uint64_t monotonic_ns() noexcept;

// Any thread. The wall clock, in nanoseconds since the Unix epoch.
std::uint64_t unix_time_ns() noexcept;

// Any thread. The wall clock, in whole seconds since the Unix epoch.
std::uint32_t unix_seconds() noexcept;

}  // namespace gw::base
