// Clock: the one source of time for the runtime, injectable so tests are deterministic.
//
// Time is monotonic nanoseconds (`Nanos`) from an arbitrary epoch; only differences mean
// anything, and never against std::chrono::steady_clock. Production code uses SteadyClock;
// tests use ManualClock and move time by hand.
// Both are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "graph/monotonic_time.h"

namespace sluice {

using Nanos = std::int64_t;

constexpr Nanos kNanosPerMicro = 1'000;
constexpr Nanos kNanosPerMilli = 1'000'000;
constexpr Nanos kNanosPerSecond = 1'000'000'000;
constexpr Nanos kNoDeadline = INT64_MAX;

inline double nanos_to_seconds(Nanos n) { return static_cast<double>(n) / 1e9; }
inline Nanos seconds_to_nanos(double s) { return static_cast<Nanos>(s * 1e9); }

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Nanos now() const = 0;
};

class SteadyClock final : public Clock {
 public:
  // graph/monotonic_time.h: the time-stamp counter where the kernel trusts it, else
  // CLOCK_MONOTONIC.
  Nanos now() const override { return monotonic_nanos(); }
  // The process-wide instance; lives forever.
  static SteadyClock& instance() {
    static SteadyClock clock;
    return clock;
  }
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(Nanos start = kNanosPerSecond) : now_(start) {}
  Nanos now() const override { return now_.load(std::memory_order_acquire); }
  void set(Nanos t) { now_.store(t, std::memory_order_release); }
  void advance(Nanos d) { now_.fetch_add(d, std::memory_order_acq_rel); }

 private:
  std::atomic<Nanos> now_;
};

}  // namespace sluice
