// TokenBucket: a rate limit of `rate` units per second with room for `capacity` at once (the
// burst). Time comes from the caller (a Clock's now()), so tests move it by hand.
//
// Two ways to spend: try_take(n) takes n only when n are there (requests/s: one per request);
// charge(n) takes n after the fact and may leave the bucket in debt, down to -capacity (tokens
// per minute: a request's token count is known only when it ends, so admission asks only that
// the bucket is not in debt, as AI gateways do). wait_until_available(n) is when n would be
// there, for Retry-After.
//
// Not thread-safe: the owner (RateLimiter) holds a lock around it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "graph/clock.h"

namespace sluice {

class TokenBucket {
 public:
  TokenBucket() = default;
  // Starts full at `now`.
  TokenBucket(double rate_per_second, double capacity, Nanos now)
      : rate_(rate_per_second), capacity_(capacity), level_(capacity), updated_(now) {}

  bool limited() const { return rate_ > 0; }
  double level(Nanos now) {
    refill(now);
    return level_;
  }

  bool try_take(Nanos now, double n = 1) {
    if (!limited()) return true;
    refill(now);
    if (level_ < n) return false;
    level_ -= n;
    return true;
  }

  void charge(Nanos now, double n) {
    if (!limited()) return;
    refill(now);
    level_ = std::max(-capacity_, level_ - n);
  }

  // Nanoseconds from `now` until `n` units are there (0 when they are).
  Nanos wait_for(Nanos now, double n = 1) {
    if (!limited()) return 0;
    refill(now);
    if (level_ >= n) return 0;
    return static_cast<Nanos>(std::ceil((n - level_) / rate_ * 1e9));
  }

  // Keeps the level (clamped to the new capacity) when a reload changes the limits.
  void reconfigure(double rate_per_second, double capacity, Nanos now) {
    refill(now);
    rate_ = rate_per_second;
    capacity_ = capacity;
    level_ = std::clamp(level_, -capacity_, capacity_);
  }

 private:
  void refill(Nanos now) {
    if (now > updated_) level_ = std::min(capacity_, level_ + rate_ * nanos_to_seconds(now - updated_));
    updated_ = std::max(updated_, now);
  }

  double rate_ = 0;  // 0: unlimited
  double capacity_ = 0;
  double level_ = 0;
  Nanos updated_ = 0;
};

}  // namespace sluice
