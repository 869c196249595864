#include "nodes/admission/shed_ladder.h"

namespace sluice {

int ShedLadder::observe(const Sample& x) {
  bool rising = have_previous_ && x.first_class_depth > previous_depth_;
  previous_depth_ = x.first_class_depth;
  have_previous_ = true;
  if (!s_.enabled) return level_;
  double max_backlog = nanos_to_seconds(s_.max_backlog);
  bool overloaded = x.busy_fraction >= s_.utilisation && (rising || x.backlog_seconds > max_backlog);
  bool calm = x.busy_fraction < s_.recover_utilisation || (!rising && x.backlog_seconds < max_backlog / 2);
  if (overloaded) {
    calm_since_ = -1;
    if (overload_since_ < 0) overload_since_ = x.now;
    if (x.now - overload_since_ >= s_.sustain && level_ < s_.max_level) {
      ++level_;
      overload_since_ = x.now;  // the next step needs its own sustained period
    }
  } else if (calm) {
    overload_since_ = -1;
    if (calm_since_ < 0) calm_since_ = x.now;
    if (x.now - calm_since_ >= s_.cooldown && level_ > 0) {
      --level_;
      calm_since_ = x.now;
    }
  } else {
    // Between the thresholds: hold the level and restart both clocks.
    overload_since_ = -1;
    calm_since_ = -1;
  }
  return level_;
}

}  // namespace sluice
