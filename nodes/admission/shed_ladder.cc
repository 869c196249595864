#include "nodes/admission/shed_ladder.h"

namespace sluice {

int ShedLadder::observe(const Sample& x) {
  if (!s_.enabled) return level_;
  double max_backlog = nanos_to_seconds(s_.max_backlog);
  bool first_grows = grows(x.first_class_inflow, x.first_class_outflow);
  bool overloaded = x.busy_fraction >= s_.utilisation &&
                    (grows(x.inflow, x.outflow) || first_grows || x.backlog_seconds > max_backlog);
  // Calm: one level lower would not make the backlog grow (the demand it refuses counted in).
  bool calm = x.busy_fraction < s_.recover_utilisation ||
              (!grows(x.inflow + x.readmit_inflow, x.outflow) && !first_grows && x.backlog_seconds < max_backlog / 2);
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
