// ShedLadder: the load-shedding level (0, 1, 2) from measured signals, with hysteresis.
//
// Every `evaluate_every` the owner feeds one sample: the bottleneck's busy fraction over the
// interval, the depth of the most urgent class's queue, and how long the queued work would
// take to drain at the measured rate. A sample is "overloaded" when the busy fraction is at or
// above `utilisation` AND (the first class's queue grew since the last sample OR the backlog
// exceeds `max_backlog`). Overload sustained for `sustain` raises the level one step (the
// clock restarts, so level 2 needs a second sustained period); a sample is "calm" when the
// busy fraction is below `recover_utilisation`, or the first class's queue is not growing and
// the backlog is under half of `max_backlog`; calm lasting
// `cooldown` lowers it one step. Samples in between hold the level, which is the hysteresis.
//
// Pure logic, no threads: not thread-safe, the owner serialises calls.
#pragma once

#include <cstdint>

#include "graph/clock.h"

namespace sluice {

struct ShedLadderSettings {
  bool enabled = true;
  double utilisation = 0.9;
  double recover_utilisation = 0.75;
  Nanos sustain = 2 * kNanosPerSecond;
  Nanos cooldown = 5 * kNanosPerSecond;
  Nanos max_backlog = 10 * kNanosPerSecond;
  int max_level = 2;
};

class ShedLadder {
 public:
  explicit ShedLadder(ShedLadderSettings s) : s_(s) {}

  struct Sample {
    Nanos now = 0;
    double busy_fraction = 0;      // 0..1 over the last interval
    std::int64_t first_class_depth = 0;
    double backlog_seconds = 0;    // queued requests / measured drain rate
    std::int64_t queued = 0;       // all classes
  };
  // Feeds one sample; returns the level after it.
  int observe(const Sample& x);
  int level() const { return level_; }

 private:
  ShedLadderSettings s_;
  int level_ = 0;
  bool have_previous_ = false;
  std::int64_t previous_depth_ = 0;
  Nanos overload_since_ = -1;
  Nanos calm_since_ = -1;
};

}  // namespace sluice
