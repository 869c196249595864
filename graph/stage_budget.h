// StageBudget: one stage's latency budget and the degradation it applies (NodeSpec.budget,
// budget_share, degrade; docs/operations.md, "Latency budgets").
//
// A request's whole budget is its deadline minus its arrival (X-Request-Timeout, a job's
// deadline, its class's `deadline`, or runtime.default_deadline). Before a stage with a
// `degrade` works on a request, the runtime asks decide(): if the time left before the
// deadline is less than the stage's expected cost plus what the stages after it reserve (the
// largest sum of their budgets along any path to a leaf), the request gets the stage's
// degradation, once; otherwise the stage runs in full. The expected cost is measured, not
// declared: the p90 service time of the stage's last kWindow batches that ran in full (before
// kMinSamples of them, the stage's own budget stands in).
//
// The same window feeds the alert: when its p95 exceeds the stage's budget for a typical
// request (its fixed budget plus its share of `typical_whole`, the pipeline's
// runtime.default_deadline: a share alone has no fixed size to hold a stage to), the
// over-budget gauge goes to 1, one line is logged and the alert sink (if any: the pipeline's
// alerts.webhook) is told; back within, 0, another line and another notice.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "graph/alert.h"
#include "graph/clock.h"
#include "graph/degradation.h"
#include "graph/metrics.h"
#include "graph/mutex.h"

namespace sluice {

// A budget: a fixed time plus a share of the request's whole budget.
struct BudgetAmount {
  Nanos fixed = 0;
  double share = 0;
  Nanos of(Nanos whole) const { return fixed + static_cast<Nanos>(share * static_cast<double>(whole)); }
  bool empty() const { return fixed == 0 && share == 0; }
};

// Adds `path` (one path's total to a leaf) to `set`, keeping only totals no other total beats
// on both parts: the largest sum for any whole budget is among them.
void add_budget_path(std::vector<BudgetAmount>& set, BudgetAmount path);

// Rolling service-time quantiles of a stage. observe() takes a short lock; p90()/p95() are
// one atomic load.
class ServiceTimeWindow {
 public:
  static constexpr std::size_t kWindow = 256;   // batches remembered
  static constexpr std::size_t kRefresh = 16;   // quantiles recomputed every this many
  static constexpr std::size_t kMinSamples = 8; // before this many, quantiles read 0

  // Records one batch's service time; returns true when the quantiles were recomputed.
  bool observe(Nanos service);
  Nanos p90() const { return p90_.load(std::memory_order_relaxed); }
  Nanos p95() const { return p95_.load(std::memory_order_relaxed); }

 private:
  Mutex mu_;
  std::array<Nanos, kWindow> ring_ GUARDED_BY(mu_){};
  std::size_t count_ GUARDED_BY(mu_) = 0;  // observations ever
  std::atomic<Nanos> p90_{0};
  std::atomic<Nanos> p95_{0};
};

class StageBudget {
 public:
  // `reserve`: the budgets the stages after this one hold, one total per path to a leaf (see
  // add_budget_path); empty when none declares a budget.
  StageBudget(std::string stage, BudgetAmount own, Degradation action, std::vector<BudgetAmount> reserve,
              Nanos typical_whole, MetricsRegistry& metrics);

  // What the stage does for a request with `arrival` and `deadline` at `now`: kNone (run in
  // full) or its degradation.
  Degradation decide(Nanos arrival, Nanos deadline, Nanos now) const {
    if (action_ == Degradation::kNone) return Degradation::kNone;
    const Nanos whole = deadline - arrival;
    Nanos need = service_.p90();
    if (need == 0) need = own_.of(whole);
    Nanos reserved = 0;
    for (const BudgetAmount& r : reserve_) reserved = std::max(reserved, r.of(whole));
    return need + reserved > deadline - now ? action_ : Degradation::kNone;
  }
  // A batch the stage ran in full took `service`: the expected cost, and the alert, follow it.
  void observe(Nanos service);
  // Where over-budget changes go besides the log and the gauge (null: nowhere); set before
  // the pipeline starts. `pipeline` names the pipeline in the alert.
  void set_alert_sink(AlertSink* sink, std::string pipeline) {
    alerts_ = sink;
    pipeline_ = std::move(pipeline);
  }
  // Counts the degradation applied to one request.
  void count_degraded() { degraded_->inc(); }


 private:
  const std::string stage_;
  const BudgetAmount own_;
  const Degradation action_;
  const std::vector<BudgetAmount> reserve_;
  const Nanos alert_budget_;  // own_ for a request of the typical whole budget; 0: no alert
  ServiceTimeWindow service_;
  Counter* degraded_;    // sluice_degradations_total{node, action}
  Gauge* over_budget_;  // 1 while the window's p95 exceeds alert_budget_
  Gauge* p95_;
  AlertSink* alerts_ = nullptr;
  std::string pipeline_;
};

}  // namespace sluice
