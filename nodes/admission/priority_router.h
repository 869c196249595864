// PriorityRouter (`priority_router`): intake-time admission, per-class bounded queues and the
// letting on of queued work into the rest of the pipeline.
//
// Admission (AdmissionController::admit, called by Pipeline::submit on the connector's thread)
// decides and reserves a request's queue place in one step under the router's lock: a class
// whose queue is full, or that the shedding ladder has shed, answers kOverloaded (HTTP 429)
// with a Retry-After of (class depth + 1) / the class's measured drain rate, capped by
// `retry_after_max`. The admitted request then reaches `start_batch`, waits in its class's FIFO
// and is let on (its batch's `done`) while fewer than `max_running` requests run below the
// router; a running request frees its slot when it completes (on_complete). Which class gets
// a free slot is the ClassScheduler's (class_scheduler.h): strict priority with aging (and its
// `aging_share` credit) when the measured busy fraction is at or above `strict_above` or the
// ladder has shed anything, otherwise smooth weighted round robin by class weight; a class with
// `keep_free` k takes part only while more than k slots are free. A request
// waiting past its class's queue_timeout or its own deadline completes with 504. Queued
// streaming requests get a "heartbeat" event every `heartbeat_interval` (the HTTP sink writes
// it as an SSE comment).
//
// Token budget (optional, `token_budget.enabled`): a class with a `target_ttft` also refuses a
// request when the prompt tokens queued in it and in the classes ahead of it, its own included,
// exceed target_ttft x the measured prefill rate (under strict priority those tokens start
// before it). Tokens are estimated at admission from the prompt text (estimate_prompt_tokens).
// The rate is the PrefillRateEstimator's (prefill_rate_estimator.h): estimated prompt tokens of
// the requests completed while all max_running slots were in use / that saturated time, decayed
// with `rate_memory`, sampled every evaluate_every. Until `rate_memory` of saturated time has
// been measured the budget refuses nothing (the count limits still do), and it never refuses a
// request whose class and the classes ahead are empty. The 429's Retry-After is the excess
// tokens / the rate.
//
// The shedding ladder (shed_ladder.h) is fed every evaluate_every: the busy fraction of
// max_running, the admitted and let-on request rates (decayed over 5s; admitted only for the
// classes the level still admits), the same for the first class, the rate the level refuses
// in the class one level lower would readmit, and the backlog (queued / let-on rate).
//
// Every decision is counted per class (sluice_admission_*_total{node,class}); the ladder level
// is the gauge sluice_shed_level{node} and appears in readiness_detail().
//
// Time: all decisions use the `now` passed in (from the pipeline's clock). `tick(now)` runs
// timeouts, heartbeats and the ladder; start() launches a thread that calls it every few
// milliseconds, tests call it directly with a ManualClock.
//
// Thread-safety: every public method may be called from any thread. Done callbacks, request
// completions, deferral hooks and sink events are issued outside the router's lock.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "graph/admission.h"
#include "graph/metrics.h"
#include "graph/mutex.h"
#include "graph/node.h"
#include "graph/schema.h"
#include "graph/token_estimate.h"
#include "graph/thread_annotations.h"
#include "nodes/admission/class_scheduler.h"
#include "nodes/admission/prefill_rate_estimator.h"
#include "nodes/admission/rate_meter.h"
#include "nodes/admission/shed_ladder.h"

namespace sluice {

struct RouterClassPolicy {
  std::string name;
  std::uint32_t max_queue = 0;  // 0: unbounded
  Nanos queue_timeout = 0;      // 0: none
  std::uint32_t weight = 1;
  Nanos target_ttft = 0;        // token budget: 0 none (and none unless token_budget.enabled)
  std::uint32_t keep_free = 0;  // let on only while more slots than this are free
};

// The policy of the class at `position` when the file leaves a field out.
RouterClassPolicy default_class_policy(std::size_t position, const std::string& name);

class PriorityRouter final : public AsyncNode, public AdmissionController {
 public:
  // Throws std::invalid_argument naming the field when the config is unusable.
  PriorityRouter(const PriorityRouterConfig& config, const NodeContext& ctx);
  ~PriorityRouter() override;

  // ---- AdmissionController
  Status admit(const RequestPtr& request, const std::string& source, Nanos now) override;
  void on_complete(Request& request, Nanos now) override;
  std::string readiness_detail() const override;
  void set_deferral_hook(const std::string& source, DeferralHook hook) override;

  // ---- AsyncNode
  void start_batch(BatchPtr batch, Done done) override;
  void start() override;
  void stop() override;

  // Timeouts, heartbeats and the ladder at `now`.
  void tick(Nanos now);

  struct ClassCounts {
    std::uint64_t admitted = 0, shed = 0, deferred = 0, timed_out = 0, cancelled = 0, dispatched = 0;
    std::int64_t queued = 0;   // admitted, not yet let on
    std::int64_t running = 0;  // let on, not yet completed
  };
  ClassCounts counts(std::size_t cls) const;
  int shed_level() const;
  double busy_fraction() const;
  // Measured prefill rate for the token budget (estimated prompt tokens per saturated second); 0
  // before the first measurement.
  double prefill_rate() const;
  // Estimated prompt tokens admitted and not yet let on, per class.
  std::int64_t queued_tokens(std::size_t cls) const;
  const std::vector<RouterClassPolicy>& policies() const { return policies_; }

 private:
  struct Waiting {
    BatchPtr batch;
    Done done;
    std::size_t cls = 0;
    Nanos admitted_at = 0;
    Nanos last_heartbeat = 0;
    int deferrable = -1;  // index into deferrable_sources_ of its source, or -1
  };
  enum class State { kReserved, kQueued, kRunning };
  struct Entry {
    std::size_t cls = 0;
    State state = State::kReserved;
    Nanos admitted_at = 0;
    int deferrable = -1;
    std::int64_t tokens = 0;  // estimated prompt tokens (token budget only)
  };
  struct ClassState {
    RouterClassPolicy policy;
    std::deque<Waiting> queue;
    std::int64_t reserved = 0;  // admitted, not yet let on (also those still on the way here)
    std::int64_t reserved_tokens = 0;  // their estimated prompt tokens (token budget only)
    std::int64_t running = 0;
    RateMeter drained;          // requests let on per second
    RateMeter admitted_rate;    // requests admitted per second (the ladder's inflow)
    RateMeter ladder_refused;   // requests the shedding level refused per second
    ClassCounts counts;
    Counter* m_admitted = nullptr;
    Counter* m_shed = nullptr;
    Counter* m_deferred = nullptr;
    Counter* m_timed_out = nullptr;
    Counter* m_cancelled = nullptr;
    Counter* m_dispatched = nullptr;
    Histogram* m_wait = nullptr;
    Gauge* m_queued = nullptr;  // `reserved`, as of the last ladder evaluation
  };
  using Dispatch = std::pair<BatchPtr, Done>;
  struct Expired {
    Waiting w;
    std::string message;
  };

  std::size_t class_of(const Request& r) const;
  // Picks what may run now and returns it to be let on outside the lock.
  void collect_dispatches_locked(Nanos now, std::vector<Dispatch>& out) REQUIRES(mu_);
  void account_running_locked(Nanos now) REQUIRES(mu_);
  double retry_after_locked(const ClassState& c, Nanos now) const REQUIRES(mu_);
  bool shed_by_ladder_locked(std::size_t cls) const REQUIRES(mu_);
  // Ok when the token budget admits `tokens` more of class `cls`, else the refusal.
  Status token_budget_refusal_locked(std::size_t cls, std::int64_t tokens) const REQUIRES(mu_);
  // tick's parts: queue timeouts and deadlines, heartbeats, the ladder and what it defers.
  void expire_and_heartbeat_locked(Nanos now, bool evaluate, std::vector<Expired>& expired,
                                   std::vector<RequestPtr>& heartbeats) REQUIRES(mu_);
  void evaluate_locked(Nanos now, std::vector<std::pair<Waiting, DeferralHook>>& deferred, double& deferred_retry)
      REQUIRES(mu_);
  void run_ticker();

  // Set at construction, read-only after.
  std::string name_;
  Clock* clock_;
  std::vector<RouterClassPolicy> policies_;
  std::uint32_t max_running_;
  Nanos heartbeat_interval_;
  double retry_after_max_;
  Nanos evaluate_every_;
  std::vector<std::string> deferrable_sources_;
  bool token_budget_;
  double chars_per_token_;
  Gauge* m_level_ = nullptr;
  Gauge* m_busy_ = nullptr;
  Gauge* m_prefill_rate_ = nullptr;

  mutable Mutex mu_;
  std::vector<ClassState> classes_ GUARDED_BY(mu_);
  std::vector<Nanos> fronts_ GUARDED_BY(mu_);  // scratch for the scheduler: each queue's front
  std::unordered_map<std::uint64_t, Entry> entries_ GUARDED_BY(mu_);  // admitted and not completed, by request id
  std::int64_t running_total_ GUARDED_BY(mu_) = 0;
  ClassScheduler scheduler_ GUARDED_BY(mu_);
  ShedLadder ladder_ GUARDED_BY(mu_);
  PrefillRateEstimator prefill_ GUARDED_BY(mu_);
  // Busy fraction: integral of running/max_running over the current ladder interval.
  double busy_integral_ GUARDED_BY(mu_) = 0;
  Nanos busy_since_ GUARDED_BY(mu_) = 0;
  Nanos interval_start_ GUARDED_BY(mu_) = 0;
  double last_busy_fraction_ GUARDED_BY(mu_) = 0;
  std::map<std::string, DeferralHook> deferral_hooks_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;

  // The ticker thread. ticker_ is started under ticker_mu_ and joined by stop() outside it (the
  // ticker takes ticker_mu_ between ticks), so it carries no annotation.
  Mutex ticker_mu_;
  CondVar ticker_cv_;
  bool ticker_stopping_ GUARDED_BY(ticker_mu_) = false;
  std::thread ticker_;
};

}  // namespace sluice
