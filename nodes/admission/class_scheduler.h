// ClassScheduler: which priority class's queue gets the router's next free slot.
//
// The owner keeps one FIFO per class (0 most urgent) and, each time a slot is free, passes the
// admission time of every queue's front (kEmptyQueue for an empty queue) and lets on the
// front of the class pick() returns (-1: all empty). The policy:
//   - Strict priority when capacity is scarce: the measured busy fraction is at or above
//     `strict_above`, or the shedding ladder sheds anything. Aging promotes a waiting request
//     one class per `aging` waited (0: no aging); among equal effective classes the older front
//     goes first.
//   - Aging credit: an aged front passes waiting higher-class work only while it has credit.
//     Every pick adds `aging_share` (at most 1 banked, one banked at start), a pass costs 1,
//     so aged work takes at most that share of the slots ahead of P0 and the rest keep strict
//     priority (under sustained overload requests that waited `aging` would otherwise always
//     be older than every P0 and take its places batch after batch).
//   - Otherwise smooth weighted round robin (nginx's) by class weight: each waiting class gains
//     its weight, the richest goes and pays the total of the waiting classes' weights.
//
// Pure logic on the owner's clock, no threads: not thread-safe, the owner serialises calls
// (the router holds its lock).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "graph/clock.h"

namespace sluice {

struct ClassSchedulerSettings {
  std::vector<std::uint32_t> weights;  // one per class, each >= 1
  double strict_above = 0.9;           // busy fraction from which strict priority applies
  Nanos aging = 0;                     // 0: none
  double aging_share = 0.1;            // in (0, 1]
};

class ClassScheduler {
 public:
  // A front time meaning "this class's queue is empty".
  static constexpr Nanos kEmptyQueue = kNoDeadline;

  explicit ClassScheduler(ClassSchedulerSettings s) : s_(std::move(s)), wrr_current_(s_.weights.size(), 0) {}

  // True when the next slot goes by strict priority.
  bool strict(double busy_fraction, bool shedding) const { return shedding || busy_fraction >= s_.strict_above; }

  // The class whose front is let on next, or -1 when every queue is empty. `fronts[i]` is the
  // admission time of class i's front (kEmptyQueue: empty), one per class. Each call that
  // returns a class counts as one slot given out: the caller must let that front on.
  int pick(std::span<const Nanos> fronts, Nanos now, bool strict);

 private:
  // The class strict priority picks with this aging (0: none).
  static int strict_pick(std::span<const Nanos> fronts, Nanos now, Nanos aging);
  int weighted_pick(std::span<const Nanos> fronts);

  ClassSchedulerSettings s_;
  std::vector<std::int64_t> wrr_current_;
  double aging_credit_ = 1;  // passes aged work may still make (one banked at start)
};

}  // namespace sluice
