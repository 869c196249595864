#include "connectors/kafka/retry_policy.h"

#include <algorithm>
#include <cmath>

namespace sluice::kafka {

AttemptVerdict judge_attempt(const Status& status, std::uint32_t attempt, bool job_deadline_passed,
                             const RetrySettings& settings) {
  if (status.cause == AbortCause::kShutdown) return AttemptVerdict::kHandBack;
  switch (status.code) {
    case StatusCode::kOverloaded:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kUnavailable:
    case StatusCode::kInternal:
    case StatusCode::kCancelled:
      if (job_deadline_passed || attempt >= settings.max_attempts) return AttemptVerdict::kDeadLetter;
      return AttemptVerdict::kRetry;
    case StatusCode::kOk:
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
      break;
  }
  return AttemptVerdict::kDeadLetter;
}

Nanos retry_delay(const RetrySettings& settings, std::uint32_t attempts, double retry_after_seconds, double unit_random) {
  const double base = static_cast<double>(settings.base_delay);
  const double cap = static_cast<double>(settings.max_delay);
  // 2^(attempts-1), without overflow for large attempt counts: the cap is reached long before.
  const double doubled = base * std::exp2(std::min<double>(attempts > 0 ? attempts - 1 : 0, 62));
  const double jitter = 0.5 + 0.5 * std::clamp(unit_random, 0.0, 1.0);
  const double delay = std::min(doubled, cap) * jitter;
  const double floor = std::max(0.0, retry_after_seconds) * static_cast<double>(kNanosPerSecond);
  return static_cast<Nanos>(std::max(delay, std::min(floor, cap)));
}

}  // namespace sluice::kafka
