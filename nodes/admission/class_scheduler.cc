#include "nodes/admission/class_scheduler.h"

#include <algorithm>

namespace sluice {

int ClassScheduler::strict_pick(std::span<const Nanos> fronts, Nanos now, Nanos aging) {
  // Strict priority with aging: the effective class falls one step per `aging` waited.
  int best = -1;
  std::int64_t best_eff = 0;
  Nanos best_at = 0;
  for (std::size_t i = 0; i < fronts.size(); ++i) {
    if (fronts[i] == kEmptyQueue) continue;
    std::int64_t eff = static_cast<std::int64_t>(i);
    if (aging > 0) eff = std::max<std::int64_t>(0, eff - (now - fronts[i]) / aging);
    if (best < 0 || eff < best_eff || (eff == best_eff && fronts[i] < best_at)) {
      best = static_cast<int>(i);
      best_eff = eff;
      best_at = fronts[i];
    }
  }
  return best;
}

int ClassScheduler::weighted_pick(std::span<const Nanos> fronts) {
  // Smooth weighted round robin (nginx's): each waiting class gains its weight, the richest
  // goes and pays the total.
  int best = -1;
  std::int64_t total = 0;
  for (std::size_t i = 0; i < fronts.size(); ++i) {
    if (fronts[i] == kEmptyQueue) continue;
    wrr_current_[i] += s_.weights[i];
    total += s_.weights[i];
    if (best < 0 || wrr_current_[i] > wrr_current_[static_cast<std::size_t>(best)]) best = static_cast<int>(i);
  }
  if (best >= 0) wrr_current_[static_cast<std::size_t>(best)] -= total;
  return best;
}

int ClassScheduler::pick(std::span<const Nanos> fronts, Nanos now, bool strict) {
  int pick = -1;
  if (!strict) {
    pick = weighted_pick(fronts);
  } else if (s_.aging <= 0) {
    pick = strict_pick(fronts, now, 0);
  } else {
    int aged = strict_pick(fronts, now, s_.aging);
    int native = strict_pick(fronts, now, 0);
    // Aging passes waiting higher-class work only within its share of the slots.
    if (aged == native || aging_credit_ < 1) {
      pick = native;
    } else {
      aging_credit_ -= 1;
      pick = aged;
    }
  }
  // Every slot given out earns aged work a share of a pass.
  if (pick >= 0) aging_credit_ = std::min(1.0, aging_credit_ + s_.aging_share);
  return pick;
}

}  // namespace sluice
