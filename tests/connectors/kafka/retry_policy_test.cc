#include "connectors/kafka/retry_policy.h"

#include <gtest/gtest.h>

namespace sluice::kafka {
namespace {

TEST(RetryPolicy, VerdictsByStatus) {
  RetrySettings s;
  s.max_attempts = 3;
  auto verdict = [&](StatusCode code, std::uint32_t attempt, AbortCause cause = AbortCause::kFailure, bool passed = false) {
    return judge_attempt(Status::Error(code, "x", cause), attempt, passed, s);
  };
  EXPECT_EQ(verdict(StatusCode::kOverloaded, 1, AbortCause::kShed), AttemptVerdict::kRetry);
  EXPECT_EQ(verdict(StatusCode::kDeadlineExceeded, 2, AbortCause::kTimeout), AttemptVerdict::kRetry);
  EXPECT_EQ(verdict(StatusCode::kInternal, 1), AttemptVerdict::kRetry);
  EXPECT_EQ(verdict(StatusCode::kInternal, 3), AttemptVerdict::kDeadLetter);  // out of attempts
  EXPECT_EQ(verdict(StatusCode::kInvalidArgument, 1), AttemptVerdict::kDeadLetter);
  EXPECT_EQ(verdict(StatusCode::kNotFound, 1), AttemptVerdict::kDeadLetter);
  EXPECT_EQ(verdict(StatusCode::kUnavailable, 1, AbortCause::kShutdown), AttemptVerdict::kHandBack);
  EXPECT_EQ(verdict(StatusCode::kDeadlineExceeded, 1, AbortCause::kTimeout, /*passed=*/true), AttemptVerdict::kDeadLetter);
}

TEST(RetryPolicy, DelaysDoubleWithJitterAndRespectRetryAfter) {
  RetrySettings s;
  s.base_delay = kNanosPerSecond;
  s.max_delay = 10 * kNanosPerSecond;
  EXPECT_EQ(retry_delay(s, 1, 0, 1.0), kNanosPerSecond);
  EXPECT_EQ(retry_delay(s, 1, 0, 0.0), kNanosPerSecond / 2);
  EXPECT_EQ(retry_delay(s, 3, 0, 1.0), 4 * kNanosPerSecond);
  EXPECT_EQ(retry_delay(s, 30, 0, 1.0), 10 * kNanosPerSecond);  // capped
  EXPECT_EQ(retry_delay(s, 1000, 0, 1.0), 10 * kNanosPerSecond);  // no overflow
  EXPECT_EQ(retry_delay(s, 1, 3.0, 0.0), 3 * kNanosPerSecond);  // at least the Retry-After
  EXPECT_EQ(retry_delay(s, 1, 60.0, 0.0), 10 * kNanosPerSecond);  // ... within max_delay
}

}  // namespace
}  // namespace sluice::kafka
