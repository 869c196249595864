// The runtime clock: monotonic, and after its calibration it keeps the pace of
// CLOCK_MONOTONIC (the counter path where this machine allows it, else clock_gettime).
#include "graph/monotonic_time.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace sluice {
namespace {

std::int64_t system_nanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TEST(MonotonicTime, NeverGoesBackAndKeepsThePaceOfClockMonotonic) {
  std::int64_t first = monotonic_nanos();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));  // past the 50 ms calibration
  monotonic_nanos();
  std::printf("runtime clock source: %s\n", monotonic_time_source());
  std::int64_t previous = monotonic_nanos();
  EXPECT_GT(previous, first);
  for (int i = 0; i < 1'000'000; ++i) {
    std::int64_t now = monotonic_nanos();
    ASSERT_GE(now, previous);
    previous = now;
  }
  // Over 200 ms the two clocks agree within 0.1% (the calibration is about 1 ppm; the slack
  // is for scheduling between the paired reads).
  std::int64_t ours0 = monotonic_nanos(), sys0 = system_nanos();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::int64_t ours1 = monotonic_nanos(), sys1 = system_nanos();
  double ratio = static_cast<double>(ours1 - ours0) / static_cast<double>(sys1 - sys0);
  EXPECT_NEAR(ratio, 1.0, 1e-3);
}

TEST(MonotonicTime, ThreadsSeeOneClock) {
  // A value read on one thread and handed to another is never ahead of the second thread's
  // next read (the counter is in step across cores where it is used).
  monotonic_nanos();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  for (int i = 0; i < 2000; ++i) {
    std::int64_t sent = 0;
    std::thread([&] { sent = monotonic_nanos(); }).join();
    EXPECT_GE(monotonic_nanos(), sent);
  }
}

}  // namespace
}  // namespace sluice
