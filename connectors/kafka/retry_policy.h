// RetryPolicy: what a job's worker does with an attempt that did not succeed (try again later,
// give up to the dead-letter topic, or hand the job back to Kafka untouched), and how long a
// retry waits.
//
// Retryable: shed by admission (429), past the attempt's deadline (504), unavailable (503) and
// a node's failure (500): each may succeed later, on a less loaded or healthier worker. Not
// retryable: the job itself is wrong (400: a bad body, an unknown class; 404: an unknown
// model): another attempt would fail the same way. A job whose own absolute deadline has passed
// is not retried either. Abandoned at shutdown or cancelled by a drain: handed back (neither
// retried nor dead-lettered, and not acknowledged), so the partition's next owner takes it as
// it was.
//
// The delay before attempt n+1 (n attempts made): base_delay x 2^(n-1), at most max_delay,
// scaled by a jitter drawn uniformly from [0.5, 1] (so workers shed at once do not come back
// at once), and never less than the Retry-After the shedding computed.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "graph/clock.h"
#include "graph/status.h"

namespace sluice::kafka {

enum class AttemptVerdict { kRetry, kDeadLetter, kHandBack };

struct RetrySettings {
  std::uint32_t max_attempts = 5;
  Nanos base_delay = kNanosPerSecond;
  Nanos max_delay = 300 * kNanosPerSecond;
};

// For an attempt that ended with `status` (not ok), the attempt being number `attempt` (1 =
// the first), and whether the job's own deadline has passed.
AttemptVerdict judge_attempt(const Status& status, std::uint32_t attempt, bool job_deadline_passed,
                             const RetrySettings& settings);

// The wait before the next attempt after `attempts` attempts; `unit_random` in [0, 1).
Nanos retry_delay(const RetrySettings& settings, std::uint32_t attempts, double retry_after_seconds, double unit_random);

}  // namespace sluice::kafka
