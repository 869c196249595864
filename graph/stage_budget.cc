#include "graph/stage_budget.h"

#include <cstdio>

namespace sluice {

void add_budget_path(std::vector<BudgetAmount>& set, BudgetAmount path) {
  for (const BudgetAmount& b : set) {
    if (b.fixed >= path.fixed && b.share >= path.share) return;  // dominated: never the largest
  }
  std::erase_if(set, [&](const BudgetAmount& b) { return path.fixed >= b.fixed && path.share >= b.share; });
  set.push_back(path);
}

bool ServiceTimeWindow::observe(Nanos service) {
  std::array<Nanos, kWindow> sorted;
  std::size_t n = 0;
  {
    MutexLock lock(mu_);
    ring_[count_ % kWindow] = service;
    ++count_;
    if (count_ < kMinSamples || (count_ % kRefresh != 0 && count_ != kMinSamples)) return false;
    n = std::min(count_, kWindow);
    std::copy(ring_.begin(), ring_.begin() + static_cast<long>(n), sorted.begin());
  }
  // Nearest-rank quantiles of the window, outside the lock.
  auto at = [&](double q) {
    const std::size_t k = std::min(n - 1, static_cast<std::size_t>(q * static_cast<double>(n)));
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(k), sorted.begin() + static_cast<long>(n));
    return sorted[k];
  };
  p90_.store(at(0.90), std::memory_order_relaxed);
  p95_.store(at(0.95), std::memory_order_relaxed);
  return true;
}

StageBudget::StageBudget(std::string stage, BudgetAmount own, Degradation action, std::vector<BudgetAmount> reserve,
                         Nanos typical_whole, MetricsRegistry& metrics)
    : stage_(std::move(stage)), own_(own), action_(action), reserve_(std::move(reserve)),
      alert_budget_(own.of(typical_whole)) {
  degraded_ = &metrics.counter("sluice_degradations_total",
                               "Requests a stage degraded because their remaining latency budget could not cover it",
                               {{"node", stage_}, {"action", std::string(degradation_name(action_))}});
  over_budget_ = &metrics.gauge("sluice_stage_over_budget",
                                "1 while the stage's p95 service time over its last 256 full batches exceeds its budget",
                                {{"node", stage_}});
  p95_ = &metrics.gauge("sluice_stage_service_p95_seconds",
                        "p95 service time of the stage's last 256 batches that ran in full (what its budget is held to)",
                        {{"node", stage_}});
  if (alert_budget_ > 0) {
    metrics
        .gauge("sluice_stage_budget_seconds",
               "The stage's latency budget for a request of runtime.default_deadline: budget + budget_share of it",
               {{"node", stage_}})
        .set(nanos_to_seconds(alert_budget_));
  }
}

void StageBudget::observe(Nanos service) {
  if (!service_.observe(service)) return;
  const Nanos p95 = service_.p95();
  p95_->set(nanos_to_seconds(p95));
  if (alert_budget_ == 0) return;
  const bool over = p95 > alert_budget_;
  // The gauge's old value says whether this is a change; refreshes of one stage are serialised
  // by nothing, so two may both log a change: a duplicate line, never a missed one.
  if (over == (over_budget_->value() == 1)) return;
  over_budget_->set(over ? 1 : 0);
  std::fprintf(stderr, "sluice: stage '%s' %s its budget: p95 service time %.3f ms %s budget %.3f ms (over up to its last %zu full batches)\n",
               stage_.c_str(), over ? "exceeds" : "is back within", nanos_to_seconds(p95) * 1e3, over ? ">" : "<=",
               nanos_to_seconds(alert_budget_) * 1e3, ServiceTimeWindow::kWindow);
  if (alerts_) alerts_->notify({pipeline_, stage_, over, p95, alert_budget_, ServiceTimeWindow::kWindow});
}

}  // namespace sluice
