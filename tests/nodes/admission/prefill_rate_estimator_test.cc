// The token budget's prefill-rate estimator on hand-fed saturated intervals: the first
// saturated completion only starts the clock, the rate is unknown (0) until `memory` of
// saturated time has been measured, time outside saturation and failed requests count
// nothing, idle stretches keep the rate, and it follows a change of speed within a few memories.
#include "nodes/admission/prefill_rate_estimator.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

constexpr Nanos kStep = 250 * kNanosPerMilli;

struct Feed {
  PrefillRateEstimator rate{kNanosPerSecond, 0};
  Nanos now = 0;

  // One evaluate interval saturated throughout, with one successful completion of `tokens` at
  // its end; returns what sample() returned.
  bool saturated_interval(std::int64_t tokens) {
    now += kStep;
    rate.elapsed(kStep);
    rate.completed_while_saturated(tokens, true);
    return rate.sample(now);
  }
  bool idle_interval() {
    now += kStep;
    rate.elapsed(kStep);
    return rate.sample(now);
  }
};

TEST(PrefillRateEstimator, UnknownUntilOneMemoryOfSaturatedTimeThenTokensPerSaturatedSecond) {
  Feed f;
  EXPECT_FALSE(f.rate.measuring());
  f.rate.completed_while_saturated(25, true);  // starts the clock; its work began before
  EXPECT_TRUE(f.rate.measuring());
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(f.saturated_interval(25)) << i;  // 0.25 .. 0.75s of the 1s warm-up
    EXPECT_FALSE(f.rate.known());
    EXPECT_DOUBLE_EQ(f.rate.rate(), 0.0);
  }
  EXPECT_TRUE(f.saturated_interval(25));
  EXPECT_TRUE(f.rate.known());
  EXPECT_NEAR(f.rate.rate(), 100.0, 1e-9);  // 25 tokens per 250ms
}

TEST(PrefillRateEstimator, TheCompletionThatStartsTheClockIsNotCounted) {
  Feed f;
  f.rate.completed_while_saturated(100000, true);
  for (int i = 0; i < 4; ++i) f.saturated_interval(25);
  EXPECT_NEAR(f.rate.rate(), 100.0, 1e-9);
}

TEST(PrefillRateEstimator, FailedCompletionsAddNoTokens) {
  Feed f;
  f.rate.completed_while_saturated(25, true);
  for (int i = 0; i < 4; ++i) {
    f.rate.completed_while_saturated(1000, false);  // cancelled or failed: no prefill to count
    f.saturated_interval(25);
  }
  EXPECT_NEAR(f.rate.rate(), 100.0, 1e-9);
}

TEST(PrefillRateEstimator, TimeOutsideSaturationCountsNothing) {
  Feed f;
  // Before the first saturated completion the clock does not run.
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(f.idle_interval());
  f.rate.completed_while_saturated(25, true);
  for (int i = 0; i < 4; ++i) f.saturated_interval(25);
  ASSERT_NEAR(f.rate.rate(), 100.0, 1e-9);
  f.rate.saturation_ended();
  EXPECT_FALSE(f.rate.measuring());
  // 10s idle: both sums decay alike, the rate (the stage's speed) stays.
  for (int i = 0; i < 40; ++i) f.idle_interval();
  EXPECT_NEAR(f.rate.rate(), 100.0, 1e-6);
  // Saturated again: the next completion restarts the clock without counting.
  f.rate.completed_while_saturated(100000, true);
  for (int i = 0; i < 4; ++i) f.saturated_interval(25);
  EXPECT_NEAR(f.rate.rate(), 100.0, 1e-6);
}

TEST(PrefillRateEstimator, FollowsAChangeOfSpeedWithinAFewMemories) {
  Feed f;
  f.rate.completed_while_saturated(25, true);
  for (int i = 0; i < 8; ++i) f.saturated_interval(25);
  ASSERT_NEAR(f.rate.rate(), 100.0, 1e-9);
  f.saturated_interval(50);  // twice the speed: the rate moves towards it at once...
  EXPECT_GT(f.rate.rate(), 100.0);
  EXPECT_LT(f.rate.rate(), 150.0);
  for (int i = 0; i < 19; ++i) f.saturated_interval(50);
  EXPECT_NEAR(f.rate.rate(), 200.0, 2.0);  // ...and is there after 5 memories (e^-5 of the old)
}

}  // namespace
}  // namespace sluice
