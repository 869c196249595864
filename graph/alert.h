// StageAlert and AlertSink: what a stage's budget reports when its over-budget state changes
// (graph/stage_budget.h), and the interface of whatever passes it on beyond the log line and
// the gauge (graph/alert_webhook.h posts it to AlertsSpec.webhook).
//
// notify() runs on the thread that finished the stage's batch: an implementation must not
// block (queue and return).
#pragma once

#include <string>

#include "graph/clock.h"

namespace sluice {

struct StageAlert {
  std::string pipeline;
  std::string stage;
  bool firing = false;  // true: p95 > budget now; false: back within (resolved)
  Nanos p95 = 0;        // the stage's p95 service time over its window
  Nanos budget = 0;     // its fixed budget (NodeSpec.budget)
  std::size_t window = 0;  // batches the p95 is over
};

class AlertSink {
 public:
  virtual ~AlertSink() = default;
  virtual void notify(const StageAlert& alert) = 0;
};

}  // namespace sluice
