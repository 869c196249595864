// PrefillRateEstimator: the token budget's measured prefill rate, in estimated prompt tokens
// per second of saturated time (all of the router's max_running slots in use).
//
// Measured only while saturated, so it is what the stages below can do, not the offered load.
// The owner reports:
//   - elapsed(dt): time passed since its last report; counted only while the clock runs;
//   - completed_while_saturated(tokens, ok): a request completed with every slot in use. The
//     first such completion starts the clock and is not counted (its work began before the
//     clock); later ones add their tokens when they succeeded;
//   - saturation_ended(): a slot stayed free; the clock stops until the next saturated
//     completion;
//   - sample(now), every evaluate_every: the tokens and saturated time since the last sample are
//     added into two sums that decay with `memory`; their ratio is the rate. Both decay alike,
//     so idle stretches leave the rate unchanged, and a constant bias of the token estimate
//     cancels (the queue is counted in the same estimate).
// Until `memory` of saturated time has been measured (undecayed: the warm-up) the rate is
// unknown and rate() is 0: the budget then refuses nothing.
//
// Pure logic on the owner's clock, no threads: not thread-safe, the owner serialises calls
// (the router holds its lock).
#pragma once

#include <cstdint>

#include "graph/clock.h"

namespace sluice {

class PrefillRateEstimator {
 public:
  // `memory` > 0; `now` is when the first sample interval starts.
  PrefillRateEstimator(Nanos memory, Nanos now) : memory_(memory), sampled_at_(now) {}

  void elapsed(Nanos dt) {
    if (measuring_) saturated_ += dt;
  }
  void completed_while_saturated(std::int64_t tokens, bool ok) {
    if (!measuring_) {
      measuring_ = true;
    } else if (ok) {
      tokens_done_ += static_cast<double>(tokens);
    }
  }
  void saturation_ended() { measuring_ = false; }
  // Folds the interval since the last sample in; true when the rate was (re)computed.
  bool sample(Nanos now);

  // Estimated prompt tokens per saturated second; 0 while unknown.
  double rate() const { return known_ ? rate_ : 0; }
  bool known() const { return known_; }
  bool measuring() const { return measuring_; }

 private:
  Nanos memory_;
  // Since the last sample.
  double tokens_done_ = 0;
  Nanos saturated_ = 0;
  bool measuring_ = false;     // the clock runs: saturated since a completion
  Nanos saturated_total_ = 0;  // measured saturated time, undecayed: the warm-up
  double token_sum_ = 0;
  double saturated_sum_ = 0;  // seconds
  Nanos sampled_at_;
  double rate_ = 0;
  bool known_ = false;
};

}  // namespace sluice
