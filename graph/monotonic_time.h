// monotonic_nanos(): the runtime's monotonic time in nanoseconds, cheap enough to stamp every
// stage boundary of every request.
//
// Where the kernel itself keeps time with the CPU's time-stamp counter (clocksource "tsc",
// with constant_tsc and nonstop_tsc: the counter ticks at a fixed rate, in every power state,
// in step on every core), the time is computed from the counter directly (RDTSC, a multiply
// and a shift: about a third of a clock_gettime call on the machines we measured). The rate
// is calibrated against CLOCK_MONOTONIC over the first 50 ms after the first read, during
// which clock_gettime itself is used; the switch is continuous (the two agree at the switch point)
// and from then on the two clocks differ only by the calibration error (about 1 ppm) and by
// whatever NTP slews CLOCK_MONOTONIC. Everywhere else, and with SLUICE_CLOCK=system, it is
// clock_gettime(CLOCK_MONOTONIC) throughout.
//
// Only differences of two monotonic_nanos() values mean anything: never mix them with
// std::chrono::steady_clock time points.
#pragma once

#include <atomic>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace sluice {

namespace detail {
struct TscCalibration {
  std::uint64_t tsc0;   // counter at the switch
  std::int64_t ns0;     // CLOCK_MONOTONIC at the switch
  std::uint64_t mult;   // nanoseconds per tick, times 2^32
};
extern std::atomic<const TscCalibration*> g_tsc_calibration;
std::int64_t monotonic_nanos_slow();
}  // namespace detail

inline std::int64_t monotonic_nanos() {
#if defined(__x86_64__)
  if (const detail::TscCalibration* c = detail::g_tsc_calibration.load(std::memory_order_acquire)) {
    // Signed: another core's counter may read a few ticks below the switch point.
    __int128 ticks = static_cast<std::int64_t>(__rdtsc() - c->tsc0);
    return c->ns0 + static_cast<std::int64_t>((ticks * static_cast<__int128>(c->mult)) >> 32);
  }
#endif
  return detail::monotonic_nanos_slow();
}

// "tsc" when monotonic_nanos() reads the counter, "clock_gettime" otherwise (also while
// still calibrating). For logs and benchmarks.
const char* monotonic_time_source();

}  // namespace sluice
