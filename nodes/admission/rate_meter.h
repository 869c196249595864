// RateMeter: an exponentially decaying event rate (events per second), measured on the
// injected clock so tests are deterministic. `tau` is the memory: events older than a few tau
// stop counting. Not thread-safe: the owner serialises calls (the router holds its lock).
#pragma once

#include <cmath>

#include "graph/clock.h"

namespace sluice {

class RateMeter {
 public:
  explicit RateMeter(Nanos tau = 5 * kNanosPerSecond) : tau_(nanos_to_seconds(tau)) {}

  void record(Nanos now, double events = 1.0) {
    rate_ = rate_at(now) + events / tau_;
    last_ = now;
    seen_ = true;
  }
  // Events per second at `now`; 0 before the first event.
  double rate_at(Nanos now) const {
    if (!seen_) return 0;
    double dt = nanos_to_seconds(now - last_);
    return dt <= 0 ? rate_ : rate_ * std::exp(-dt / tau_);
  }
  bool seen() const { return seen_; }

 private:
  double tau_;
  double rate_ = 0;
  Nanos last_ = 0;
  bool seen_ = false;
};

}  // namespace sluice
