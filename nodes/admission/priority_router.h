// PriorityRouter (`priority_router`): intake-time admission, per-class bounded queues and the
// scheduling of work into the rest of the pipeline.
//
// Admission (AdmissionController::admit, called by Pipeline::submit on the connector's thread)
// decides and reserves a request's queue place in one step under the router's lock: a class
// whose queue is full, or that the shedding ladder has shed, answers kOverloaded (HTTP 429)
// with a Retry-After of (class depth + 1) / the class's measured drain rate, capped by
// `retry_after_max`. The admitted request then reaches `start_batch`, waits in its class's FIFO
// and is let on (its batch's `done`) while fewer than `max_running` requests run below the
// router; a running request frees its slot when it completes (on_complete). Which class gets
// a free slot: strict priority when the measured busy fraction is at or above `strict_above`
// or the ladder has shed anything, otherwise smooth weighted round robin by class weight.
// Aging promotes a waiting request one class per `aging` of wait, but a promoted request
// passes waiting higher-class work only while it has credit: every request let on adds
// `aging_share` (at most 1 banked), a pass costs 1, so aged work takes at most that share of
// the slots ahead of P0 and the rest keep strict priority. A request waiting past its
// class's queue_timeout or its own deadline completes with 504. Queued streaming requests get
// a "heartbeat" event every `heartbeat_interval` (the HTTP sink writes it as an SSE comment).
//
// Token budget (optional, `token_budget.enabled`): a class with a `target_ttft` also refuses a
// request when the prompt tokens queued in it and in the classes ahead of it, its own included,
// exceed target_ttft x the measured prefill rate (under strict priority those tokens start
// before it). Tokens are estimated at admission from the prompt text (estimate_prompt_tokens).
// The rate is what the stages below did while saturated (all max_running slots in use, so it is
// their capacity, not the offered load): estimated prompt tokens of the requests completed then
// / the saturated time. The clock starts at a completion seen while saturated (whose tokens are
// not counted: its work began before), stops when saturation ends; both sums decay with
// `rate_memory` and are sampled every evaluate_every, so idle time changes nothing and a
// constant bias of the estimate cancels. Until `rate_memory` of saturated time has been
// measured the budget refuses nothing (the count limits still do), and it never refuses a
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
// completions and sink events are issued outside the router's lock.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "graph/admission.h"
#include "graph/metrics.h"
#include "graph/node.h"
#include "nodes/admission/rate_meter.h"
#include "nodes/admission/shed_ladder.h"
#include "sluice/admission.pb.h"

namespace sluice {

struct RouterClassPolicy {
  std::string name;
  std::uint32_t max_queue = 0;  // 0: unbounded
  Nanos queue_timeout = 0;      // 0: none
  std::uint32_t weight = 1;
  Nanos target_ttft = 0;        // token budget: 0 none (and none unless token_budget.enabled)
};

// Prompt tokens of a request estimated without a tokenizer: the UTF-8 bytes of its prompt and
// chat messages / chars_per_token, rounded up, at least 1.
std::int64_t estimate_prompt_tokens(const RequestInput& input, double chars_per_token);

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
    std::int64_t wrr_current = 0;
    ClassCounts counts;
    Counter* m_admitted = nullptr;
    Counter* m_shed = nullptr;
    Counter* m_deferred = nullptr;
    Counter* m_timed_out = nullptr;
    Counter* m_cancelled = nullptr;
    Counter* m_dispatched = nullptr;
    Histogram* m_wait = nullptr;
  };
  using Dispatch = std::pair<BatchPtr, Done>;

  std::size_t class_of(const Request& r) const;
  // Below the lock: picks what may run now and returns it to be let on outside the lock.
  void collect_dispatches_locked(Nanos now, std::vector<Dispatch>& out);
  int pick_class_locked(Nanos now);
  // The class strict priority picks with this aging (0: none).
  int strict_pick_locked(Nanos now, Nanos aging) const;
  bool strict_locked(Nanos now) const;
  void account_running_locked(Nanos now);
  double retry_after_locked(const ClassState& c, Nanos now) const;
  bool shed_by_ladder_locked(std::size_t cls) const;
  // Empty when the token budget admits `tokens` more of class `cls`, else the refusal.
  Status token_budget_refusal_locked(std::size_t cls, std::int64_t tokens) const;
  void sample_prefill_rate_locked(Nanos now);
  void run_ticker();

  std::string name_;
  Clock* clock_;
  std::vector<RouterClassPolicy> policies_;
  std::uint32_t max_running_;
  double strict_above_;
  Nanos aging_;
  double aging_share_;
  Nanos heartbeat_interval_;
  double retry_after_max_;
  Nanos evaluate_every_;
  std::vector<std::string> deferrable_sources_;
  bool token_budget_;
  double chars_per_token_;
  Nanos rate_memory_;

  mutable std::mutex mu_;
  std::vector<ClassState> classes_;
  std::unordered_map<std::uint64_t, Entry> entries_;  // admitted and not completed, by request id
  std::int64_t running_total_ = 0;
  double aging_credit_ = 1;  // passes aged work may still make (one banked at start)
  ShedLadder ladder_;
  // Busy fraction: integral of running/max_running over the current ladder interval.
  double busy_integral_ = 0;
  Nanos busy_since_ = 0;
  Nanos interval_start_ = 0;
  double last_busy_fraction_ = 0;
  // Prefill rate: estimated prompt tokens completed while saturated and the saturated time,
  // since the last sample; added into sums that decay with rate_memory_, whose ratio is the rate.
  double tokens_done_ = 0;
  Nanos saturated_ = 0;
  bool rate_clock_ = false;     // measuring: saturated since a completion
  Nanos saturated_total_ = 0;   // measured saturated time, undecayed: the warm-up
  double token_sum_ = 0;
  double saturated_sum_ = 0;  // seconds
  Nanos rate_sampled_at_ = 0;
  double prefill_rate_ = 0;
  bool prefill_rate_known_ = false;
  std::map<std::string, DeferralHook> deferral_hooks_;
  Gauge* m_level_ = nullptr;
  Gauge* m_busy_ = nullptr;
  Gauge* m_prefill_rate_ = nullptr;

  std::mutex ticker_mu_;
  std::condition_variable ticker_cv_;
  bool stopping_ = false;
  std::thread ticker_;
};

}  // namespace sluice
