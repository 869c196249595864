#include "nodes/admission/prefill_rate_estimator.h"

#include <cmath>

namespace sluice {

bool PrefillRateEstimator::sample(Nanos now) {
  // Both sums decay alike, so idle stretches leave their ratio (the stage's speed) unchanged.
  double keep = std::exp(-nanos_to_seconds(now - sampled_at_) / nanos_to_seconds(memory_));
  token_sum_ = token_sum_ * keep + tokens_done_;
  saturated_sum_ = saturated_sum_ * keep + nanos_to_seconds(saturated_);
  saturated_total_ += saturated_;
  tokens_done_ = 0;
  saturated_ = 0;
  sampled_at_ = now;
  // Warm-up: one memory's worth of saturated time before the rate is trusted.
  if (saturated_total_ < memory_ || token_sum_ <= 0 || saturated_sum_ <= 0) return false;
  rate_ = token_sum_ / saturated_sum_;
  known_ = true;
  return true;
}

}  // namespace sluice
