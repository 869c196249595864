// ShedLadder: the load-shedding level (0, 1, 2) from measured signals, with hysteresis.
//
// Every `evaluate_every` the owner feeds one sample: the bottleneck's busy fraction over the
// interval; the measured request rates into the queues (admitted, per second, of the classes
// the current level still admits) and out of them (let on to the bottleneck), for all classes
// and for the most urgent class alone; the rate the current level refuses in the class that
// one level lower would admit again; and how long the queued work would take to drain at the
// measured rate.
//
// The backlog *grows* when work comes in faster than it drains: inflow > outflow x (1 + growth).
// Rates are decayed averages over several seconds, so they look through a bottleneck that
// drains in bursts (one batch per service cycle), which a depth compared between two samples
// 250 ms apart cannot: it rises inside every cycle and falls at its end.
//
// A sample is "overloaded" when the busy fraction is at or above `utilisation` AND (the backlog
// of all classes or of the first class grows, OR the backlog exceeds `max_backlog`). Overload
// sustained for `sustain` raises the level one step (the clock restarts, so level 2 needs a
// second sustained period of growth with the lowest class already shed). A sample is "calm"
// when the busy fraction is below `recover_utilisation`, or when readmitting the class one
// level down would not make the backlog grow (inflow + its refused rate within the same
// margin of the outflow) and the backlog is under half of `max_backlog`; calm lasting
// `cooldown` lowers the level one step. Samples in between hold the level: that, the gap
// between the thresholds, and counting the refused demand in the calm test are the hysteresis
// (a level that sheds exactly the excess does not fall the moment its shedding works).
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
  double growth = 0.2;
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
    double busy_fraction = 0;       // 0..1 over the last interval
    double inflow = 0;              // requests/s admitted, classes the current level admits
    double outflow = 0;             // requests/s let on to the bottleneck, all classes
    double first_class_inflow = 0;  // the same two for the most urgent class alone
    double first_class_outflow = 0;
    double readmit_inflow = 0;      // requests/s that one level lower would admit again
    double backlog_seconds = 0;     // queued requests / measured drain rate
    std::int64_t queued = 0;        // all classes
  };
  // Feeds one sample; returns the level after it.
  int observe(const Sample& x);
  int level() const { return level_; }

 private:
  bool grows(double inflow, double outflow) const { return inflow > 0 && inflow > outflow * (1 + s_.growth); }

  ShedLadderSettings s_;
  int level_ = 0;
  Nanos overload_since_ = -1;
  Nanos calm_since_ = -1;
};

}  // namespace sluice
