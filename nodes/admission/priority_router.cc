#include "nodes/admission/priority_router.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "graph/proto_duration.h"

namespace sluice {

namespace {

std::string seconds_text(Nanos n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs", nanos_to_seconds(n));
  return buf;
}

ShedLadderSettings ladder_settings(const ShedLadderConfig& c, std::size_t classes) {
  ShedLadderSettings s;
  s.enabled = c.enabled();
  s.utilisation = c.utilisation();
  s.recover_utilisation = c.recover_utilisation();
  s.growth = c.growth();
  s.sustain = duration_nanos(c.sustain());
  s.cooldown = duration_nanos(c.cooldown());
  s.max_backlog = duration_nanos(c.max_backlog());
  // The most urgent class is never shed by the ladder; with three classes: P2, then P1.
  s.max_level = static_cast<int>(std::min<std::size_t>(2, classes > 0 ? classes - 1 : 0));
  return s;
}

ClassSchedulerSettings scheduler_settings(const PriorityRouterConfig& config, const std::vector<RouterClassPolicy>& policies) {
  ClassSchedulerSettings s;
  for (const auto& p : policies) s.weights.push_back(p.weight);
  s.strict_above = config.strict_above();
  s.aging = duration_nanos(config.aging());
  // Unset in a config built in code (files get the schema default).
  s.aging_share = config.aging_share() > 0 ? config.aging_share() : 0.1;
  return s;
}

// Unset in a config built in code (files get the schema default): 5s.
Nanos rate_memory(const TokenBudgetConfig& c) {
  Nanos memory = duration_nanos(c.rate_memory());
  return memory > 0 ? memory : 5 * kNanosPerSecond;
}

// max_running, 0 meaning "not set" (a config built in code): 64, the schema's default.
std::uint32_t effective_max_running(const PriorityRouterConfig& config) {
  return config.max_running() == 0 ? 64 : config.max_running();
}

// The class policies: each position's defaults, overridden by the file's `classes`.
std::vector<RouterClassPolicy> class_policies(const PriorityRouterConfig& config, const std::vector<std::string>& class_names) {
  if (class_names.empty()) throw std::invalid_argument("the pipeline defines no priority classes");
  std::vector<RouterClassPolicy> policies;
  for (std::size_t i = 0; i < class_names.size(); ++i) policies.push_back(default_class_policy(i, class_names[i]));
  for (int i = 0; i < config.classes_size(); ++i) {
    const RouterClassConfig& cc = config.classes(i);
    auto it = std::find(class_names.begin(), class_names.end(), cc.name());
    if (it == class_names.end()) {
      std::string all;
      for (const auto& n : class_names) all += (all.empty() ? "" : ", ") + n;
      throw std::invalid_argument("classes[" + std::to_string(i) + "].name: '" + cc.name() +
                                  "' is not a priority class of runtime.classes (" + all + ")");
    }
    RouterClassPolicy& p = policies[static_cast<std::size_t>(it - class_names.begin())];
    if (cc.has_max_queue()) p.max_queue = cc.max_queue();
    if (cc.has_queue_timeout()) p.queue_timeout = duration_nanos(cc.queue_timeout());
    if (cc.has_weight()) p.weight = std::max<std::uint32_t>(1, cc.weight());
    p.keep_free = cc.keep_free();
    const std::uint32_t slots = effective_max_running(config);
    if (p.keep_free >= slots) {
      throw std::invalid_argument("classes[" + std::to_string(i) + "].keep_free: " + std::to_string(p.keep_free) +
                                  " leaves none of max_running's " + std::to_string(slots) + " slots to class " +
                                  cc.name() + "; it must be below max_running");
    }
    if (cc.has_target_ttft()) {
      p.target_ttft = duration_nanos(cc.target_ttft());
      if (p.target_ttft < 0) {
        throw std::invalid_argument("classes[" + std::to_string(i) + "].target_ttft: must not be negative");
      }
    }
  }
  return policies;
}

}  // namespace

RouterClassPolicy default_class_policy(std::size_t position, const std::string& name) {
  switch (position) {
    case 0: return {name, 20, 30 * kNanosPerSecond, 6};
    case 1: return {name, 100, 60 * kNanosPerSecond, 3};
    default: return {name, 0, 0, 1};
  }
}

PriorityRouter::PriorityRouter(const PriorityRouterConfig& config, const NodeContext& ctx)
    : name_(ctx.name),
      clock_(ctx.clock),
      policies_(class_policies(config, ctx.class_names)),
      max_running_(effective_max_running(config)),
      heartbeat_interval_(duration_nanos(config.heartbeat_interval())),
      retry_after_max_(std::max(1.0, nanos_to_seconds(duration_nanos(config.retry_after_max())))),
      evaluate_every_(duration_nanos(config.shedding().evaluate_every())),
      deferrable_sources_(config.deferrable_sources().begin(), config.deferrable_sources().end()),
      token_budget_(config.token_budget().enabled()),
      // Unset in a config built in code (files get the schema default): 4 bytes a token.
      chars_per_token_(config.token_budget().chars_per_token() > 0 ? config.token_budget().chars_per_token() : 4.0),
      fronts_(policies_.size(), ClassScheduler::kEmptyQueue),
      scheduler_(scheduler_settings(config, policies_)),
      ladder_(ladder_settings(config.shedding(), ctx.class_names.size())),
      prefill_(rate_memory(config.token_budget()), 0) {
  if (evaluate_every_ <= 0) evaluate_every_ = 250 * kNanosPerMilli;
  if (token_budget_ && (chars_per_token_ < 0.5 || chars_per_token_ > 64)) {
    throw std::invalid_argument("token_budget.chars_per_token: must be between 0.5 and 64, got " + std::to_string(chars_per_token_));
  }
  MetricsRegistry* m = ctx.metrics;
  classes_.resize(policies_.size());
  for (std::size_t i = 0; i < policies_.size(); ++i) {
    ClassState& c = classes_[i];
    c.policy = policies_[i];
    if (!m) continue;
    Labels l{{"node", name_}, {"class", c.policy.name}};
    c.m_admitted = &m->counter("sluice_admission_admitted_total", "Requests admitted by the router", l);
    c.m_shed = &m->counter("sluice_admission_shed_total", "Requests refused at intake with 429 (queue full or shed level)", l);
    c.m_deferred = &m->counter("sluice_admission_deferred_total", "Shed requests handed to a source's deferral hook", l);
    c.m_timed_out = &m->counter("sluice_admission_timed_out_total", "Requests that waited past their queue timeout or deadline (504)", l);
    c.m_cancelled = &m->counter("sluice_admission_cancelled_total", "Admitted requests cancelled by the client", l);
    c.m_dispatched = &m->counter("sluice_admission_dispatched_total", "Requests let past the router", l);
    c.m_wait = &m->histogram("sluice_admission_queue_wait_seconds", "Time from admission until let past the router", l);
    c.m_queued = &m->gauge("sluice_admission_queued", "Requests admitted and waiting in the class's queue (every evaluate_every)", l);
    // The bound beside the depth, so an alert can compare them (0: unbounded).
    m->gauge("sluice_admission_queue_limit", "The class's max_queue (0: unbounded)", l).set(c.policy.max_queue);
  }
  if (m) {
    Labels l{{"node", name_}};
    m_level_ = &m->gauge("sluice_shed_level", "Load-shedding level: 0 admits all, 1 sheds the lowest class, 2 also the next", l);
    m_busy_ = &m->gauge("sluice_admission_busy_fraction", "Busy fraction of max_running over the last ladder interval", l);
    if (token_budget_) {
      m_prefill_rate_ = &m->gauge("sluice_admission_prefill_tokens_per_second",
                                  "Measured prefill rate of the token budget (estimated prompt tokens per saturated second)", l);
    }
  }
  // One reading of the clock starts the busy-fraction interval and the first rate sample.
  Nanos now = clock_->now();
  busy_since_ = interval_start_ = now;
  prefill_ = PrefillRateEstimator(rate_memory(config.token_budget()), now);
  if (ctx.install_admission) ctx.install_admission(this);
}

PriorityRouter::~PriorityRouter() { stop(); }

std::size_t PriorityRouter::class_of(const Request& r) const {
  return std::min<std::size_t>(r.priority, policies_.size() - 1);
}

bool PriorityRouter::shed_by_ladder_locked(std::size_t cls) const {
  int level = ladder_.level();
  // Level n sheds the n lowest classes, never the first.
  return level > 0 && cls > 0 && cls + static_cast<std::size_t>(level) >= classes_.size();
}

double PriorityRouter::retry_after_locked(const ClassState& c, Nanos now) const {
  double rate = c.drained.rate_at(now);
  if (rate <= 0) return retry_after_max_;
  double seconds = static_cast<double>(c.reserved + 1) / rate;
  return std::clamp(seconds, 1.0, retry_after_max_);
}

Status PriorityRouter::token_budget_refusal_locked(std::size_t cls, std::int64_t tokens) const {
  Nanos target = classes_[cls].policy.target_ttft;
  double rate = prefill_.rate();  // 0 until measured
  if (!token_budget_ || target <= 0 || rate <= 0) return Status::Ok();
  std::int64_t ahead = 0;  // under strict priority, these start before the new request
  for (std::size_t i = 0; i <= cls; ++i) ahead += classes_[i].reserved_tokens;
  if (ahead == 0) return Status::Ok();  // an empty queue always takes one, however long
  double budget = nanos_to_seconds(target) * rate;
  double wanted = static_cast<double>(ahead + tokens);
  if (wanted <= budget) return Status::Ok();
  char detail[200];
  std::snprintf(detail, sizeof detail, "%lld queued + ~%lld of this request > target_ttft %.1fs x measured prefill rate %.0f tokens/s = %.0f",
                static_cast<long long>(ahead), static_cast<long long>(tokens), nanos_to_seconds(target), rate, budget);
  Status s = Status::Error(StatusCode::kOverloaded,
                           "the prompt tokens queued in class '" + classes_[cls].policy.name +
                               "' and the classes ahead of it exceed its token budget (" + detail + ")",
                           AbortCause::kShed);
  // The excess drains at the measured rate.
  s.retry_after_seconds = std::clamp((wanted - budget) / rate, 1.0, retry_after_max_);
  return s;
}

Status PriorityRouter::admit(const RequestPtr& request, const std::string& source, Nanos now) {
  std::size_t cls = class_of(*request);
  std::int64_t tokens = token_budget_ ? estimate_prompt_tokens(request->input(), chars_per_token_) : 0;
  Status refusal;
  bool deferrable = false;
  DeferralHook hook;
  {
    MutexLock lock(mu_);
    ClassState& c = classes_[cls];
    if (shed_by_ladder_locked(cls)) {
      c.ladder_refused.record(now);  // the demand the level turns away: its calm test counts it
      refusal = Status::Error(StatusCode::kOverloaded,
                              "class '" + c.policy.name + "' is shed: the pipeline is overloaded (shedding level " +
                                  std::to_string(ladder_.level()) + ")",
                              AbortCause::kShed);
    } else if (c.policy.max_queue > 0 && c.reserved >= static_cast<std::int64_t>(c.policy.max_queue)) {
      refusal = Status::Error(StatusCode::kOverloaded,
                              "the queue of class '" + c.policy.name + "' is full (" + std::to_string(c.policy.max_queue) +
                                  " waiting, max_queue)",
                              AbortCause::kShed);
    } else if (refusal = token_budget_refusal_locked(cls, tokens); refusal.ok()) {
      ++c.reserved;
      c.reserved_tokens += tokens;
      c.admitted_rate.record(now);
      ++c.counts.admitted;
      if (c.m_admitted) c.m_admitted->inc();
      auto d = std::find(deferrable_sources_.begin(), deferrable_sources_.end(), source);
      entries_[request->id()] = Entry{cls, State::kReserved, now,
                                      d == deferrable_sources_.end() ? -1 : static_cast<int>(d - deferrable_sources_.begin()), tokens};
      return Status::Ok();
    }
    // A token-budget refusal carries its own Retry-After (excess tokens / prefill rate).
    if (refusal.retry_after_seconds <= 0) refusal.retry_after_seconds = retry_after_locked(c, now);
    ++c.counts.shed;
    if (c.m_shed) c.m_shed->inc();
    if (std::find(deferrable_sources_.begin(), deferrable_sources_.end(), source) != deferrable_sources_.end()) {
      if (auto it = deferral_hooks_.find(source); it != deferral_hooks_.end()) {
        deferrable = true;
        hook = it->second;
      }
    }
  }
  if (deferrable && hook(request, refusal.retry_after_seconds)) {
    MutexLock lock(mu_);
    ++classes_[cls].counts.deferred;
    if (classes_[cls].m_deferred) classes_[cls].m_deferred->inc();
    refusal.message += "; deferred to the source's retry hook";
  }
  return refusal;
}

void PriorityRouter::set_deferral_hook(const std::string& source, DeferralHook hook) {
  MutexLock lock(mu_);
  deferral_hooks_[source] = std::move(hook);
}

void PriorityRouter::account_running_locked(Nanos now) {
  if (now > busy_since_) {
    double used = static_cast<double>(std::min<std::int64_t>(running_total_, max_running_)) / max_running_;
    busy_integral_ += used * static_cast<double>(now - busy_since_);
    prefill_.elapsed(now - busy_since_);
    busy_since_ = now;
  }
}

void PriorityRouter::start_batch(BatchPtr batch, Done done) {
  std::vector<Dispatch> dispatches;
  {
    MutexLock lock(mu_);
    Waiting w;
    w.cls = classes_.size();
    w.admitted_at = kNoDeadline;
    for (const auto& r : batch->requests) {
      auto it = entries_.find(r->id());
      if (it == entries_.end() || it->second.state != State::kReserved) continue;
      it->second.state = State::kQueued;
      w.cls = std::min(w.cls, it->second.cls);
      w.admitted_at = std::min(w.admitted_at, it->second.admitted_at);
      if (it->second.deferrable >= 0) w.deferrable = it->second.deferrable;
    }
    if (w.cls == classes_.size() || stopping_) {
      // Nothing admitted here is waiting in it (completed on the way, or shutting down).
      dispatches.emplace_back(std::move(batch), std::move(done));
    } else {
      Nanos now = clock_->now();
      w.batch = std::move(batch);
      w.done = std::move(done);
      w.last_heartbeat = now;
      classes_[w.cls].queue.push_back(std::move(w));
      collect_dispatches_locked(now, dispatches);
    }
  }
  for (auto& [b, d] : dispatches) d(std::move(b));
}

void PriorityRouter::collect_dispatches_locked(Nanos now, std::vector<Dispatch>& out) {
  while (running_total_ < static_cast<std::int64_t>(max_running_)) {
    const std::int64_t free = static_cast<std::int64_t>(max_running_) - running_total_;
    for (std::size_t i = 0; i < classes_.size(); ++i) {
      const ClassState& c = classes_[i];
      // A class that leaves keep_free slots to the classes ahead sits out until more are free.
      const bool waits = c.queue.empty() || free <= static_cast<std::int64_t>(c.policy.keep_free);
      fronts_[i] = waits ? ClassScheduler::kEmptyQueue : c.queue.front().admitted_at;
    }
    int pick = scheduler_.pick(fronts_, now, scheduler_.strict(last_busy_fraction_, ladder_.level() > 0));
    if (pick < 0) return;
    ClassState& c = classes_[static_cast<std::size_t>(pick)];
    Waiting w = std::move(c.queue.front());
    c.queue.pop_front();
    account_running_locked(now);
    for (const auto& r : w.batch->requests) {
      auto it = entries_.find(r->id());
      if (it == entries_.end() || it->second.state != State::kQueued) continue;  // completed while waiting
      it->second.state = State::kRunning;
      ClassState& rc = classes_[it->second.cls];
      --rc.reserved;
      rc.reserved_tokens -= it->second.tokens;
      ++rc.running;
      ++running_total_;
      ++rc.counts.dispatched;
      rc.drained.record(now);
      if (rc.m_dispatched) rc.m_dispatched->inc();
      if (rc.m_wait) rc.m_wait->observe(nanos_to_seconds(now - it->second.admitted_at));
    }
    out.emplace_back(std::move(w.batch), std::move(w.done));
  }
}

void PriorityRouter::on_complete(Request& request, Nanos now) {
  std::vector<Dispatch> dispatches;
  {
    MutexLock lock(mu_);
    auto it = entries_.find(request.id());
    if (it == entries_.end()) return;
    Entry e = it->second;
    entries_.erase(it);
    ClassState& c = classes_[e.cls];
    if (request.status().code == StatusCode::kCancelled && request.status().cause == AbortCause::kClientDisconnect) {
      ++c.counts.cancelled;
      if (c.m_cancelled) c.m_cancelled->inc();
    }
    if (e.state == State::kRunning) {
      account_running_locked(now);
      if (running_total_ >= static_cast<std::int64_t>(max_running_)) prefill_.completed_while_saturated(e.tokens, request.status().ok());
      --c.running;
      --running_total_;
      if (!stopping_) collect_dispatches_locked(clock_->now(), dispatches);
      if (running_total_ < static_cast<std::int64_t>(max_running_)) prefill_.saturation_ended();
    } else {
      --c.reserved;  // its Waiting, if any, is passed on empty when it reaches the front
      c.reserved_tokens -= e.tokens;
    }
  }
  for (auto& [b, d] : dispatches) d(std::move(b));
}

void PriorityRouter::expire_and_heartbeat_locked(Nanos now, bool evaluate, std::vector<Expired>& expired,
                                                 std::vector<RequestPtr>& heartbeats) {
  for (std::size_t i = 0; i < classes_.size(); ++i) {
    ClassState& c = classes_[i];
    Nanos timeout = c.policy.queue_timeout;
    // Class timeouts: the queue is in admission order, so only its front can be due.
    while (timeout > 0 && !c.queue.empty() && now - c.queue.front().admitted_at >= timeout) {
      expired.push_back({std::move(c.queue.front()), "waited " + seconds_text(now - c.queue.front().admitted_at) +
                                                         " in the queue of class '" + c.policy.name + "' (queue_timeout " +
                                                         seconds_text(timeout) + "); the pipeline is overloaded"});
      c.queue.pop_front();
    }
    if (!evaluate) continue;
    // Once per interval: own deadlines anywhere in the queue, and heartbeats.
    for (auto w = c.queue.begin(); w != c.queue.end();) {
      bool past_deadline = false;
      for (const auto& r : w->batch->requests) past_deadline = past_deadline || (r->active() && r->expired(now));
      if (past_deadline) {
        expired.push_back({std::move(*w), "request deadline passed after waiting " + seconds_text(now - w->admitted_at) +
                                              " in the queue of class '" + c.policy.name + "'"});
        w = c.queue.erase(w);
        continue;
      }
      if (heartbeat_interval_ > 0 && now - w->last_heartbeat >= heartbeat_interval_) {
        w->last_heartbeat = now;
        for (const auto& r : w->batch->requests) {
          if (r->active() && r->input().stream) heartbeats.push_back(r);
        }
      }
      ++w;
    }
  }
  for (const auto& x : expired) {
    for (const auto& r : x.w.batch->requests) {
      auto it = entries_.find(r->id());
      if (it == entries_.end() || !r->active()) continue;
      ClassState& rc = classes_[it->second.cls];
      ++rc.counts.timed_out;
      if (rc.m_timed_out) rc.m_timed_out->inc();
    }
  }
}

void PriorityRouter::evaluate_locked(Nanos now, std::vector<std::pair<Waiting, DeferralHook>>& deferred, double& deferred_retry) {
  account_running_locked(now);
  double busy = busy_integral_ / (static_cast<double>(now - interval_start_));
  busy_integral_ = 0;
  interval_start_ = now;
  last_busy_fraction_ = busy;
  if (token_budget_) {
    bool updated = prefill_.sample(now);
    if (updated && m_prefill_rate_) m_prefill_rate_->set(prefill_.rate());
  }
  int before = ladder_.level();
  ShedLadder::Sample s;
  s.now = now;
  s.busy_fraction = busy;
  for (std::size_t i = 0; i < classes_.size(); ++i) {
    const ClassState& c = classes_[i];
    s.queued += c.reserved;
    if (c.m_queued) c.m_queued->set(static_cast<double>(c.reserved));
    s.outflow += c.drained.rate_at(now);
    // Inflow of the classes the level admits: a class just shed stops counting at once,
    // instead of its admissions of the last seconds fading out of the average.
    if (!shed_by_ladder_locked(i)) s.inflow += c.admitted_rate.rate_at(now);
  }
  s.first_class_inflow = classes_[0].admitted_rate.rate_at(now);
  s.first_class_outflow = classes_[0].drained.rate_at(now);
  if (before > 0) {
    // One level lower admits this class again: its demand is what it was admitted at
    // before the level rose (fading) plus what the level refuses now (rising).
    const ClassState& next = classes_[classes_.size() - static_cast<std::size_t>(before)];
    s.readmit_inflow = next.admitted_rate.rate_at(now) + next.ladder_refused.rate_at(now);
  }
  s.backlog_seconds = s.queued == 0 ? 0 : s.outflow <= 0 ? 1e9 : static_cast<double>(s.queued) / s.outflow;
  int level = ladder_.observe(s);
  if (m_level_) m_level_->set(level);
  if (m_busy_) m_busy_->set(busy);
  if (level <= before || deferral_hooks_.empty()) return;
  // Queued work of newly shed classes from queue-fed sources goes back to its source.
  for (std::size_t i = 0; i < classes_.size(); ++i) {
    if (!shed_by_ladder_locked(i)) continue;
    ClassState& c = classes_[i];
    deferred_retry = retry_after_locked(c, now);
    for (auto w = c.queue.begin(); w != c.queue.end();) {
      auto hook = w->deferrable < 0 ? deferral_hooks_.end()
                                    : deferral_hooks_.find(deferrable_sources_[static_cast<std::size_t>(w->deferrable)]);
      if (hook == deferral_hooks_.end()) {
        ++w;
        continue;
      }
      deferred.emplace_back(std::move(*w), hook->second);
      w = c.queue.erase(w);
    }
  }
}

void PriorityRouter::tick(Nanos now) {
  std::vector<Expired> expired;
  std::vector<RequestPtr> heartbeats;
  std::vector<std::pair<Waiting, DeferralHook>> deferred;
  double deferred_retry = 0;
  {
    MutexLock lock(mu_);
    bool evaluate = now - interval_start_ >= evaluate_every_;
    expire_and_heartbeat_locked(now, evaluate, expired, heartbeats);
    if (evaluate) evaluate_locked(now, deferred, deferred_retry);
  }
  for (auto& x : expired) {
    for (const auto& r : x.w.batch->requests) {
      r->complete(Status::Error(StatusCode::kDeadlineExceeded, x.message, AbortCause::kTimeout), now);
    }
    x.w.done(std::move(x.w.batch));
  }
  for (const auto& r : heartbeats) r->emit_event("heartbeat", "{}");
  for (auto& [w, hook] : deferred) {
    bool kept = false;
    for (const auto& r : w.batch->requests) {
      if (!r->active()) continue;
      if (!hook(r, deferred_retry)) {
        kept = true;  // the source could not take it back: it keeps its place
        continue;
      }
      Status s = Status::Error(StatusCode::kOverloaded, "shed while queued (shedding level rose); deferred to the source's retry hook",
                               AbortCause::kShed);
      s.retry_after_seconds = deferred_retry;
      if (r->complete(s, now)) {
        MutexLock lock(mu_);
        ++classes_[class_of(*r)].counts.deferred;
        if (classes_[class_of(*r)].m_deferred) classes_[class_of(*r)].m_deferred->inc();
      }
    }
    if (kept) {
      MutexLock lock(mu_);
      if (!stopping_) {
        classes_[w.cls].queue.push_front(std::move(w));
        continue;
      }
    }
    w.done(std::move(w.batch));
  }
}

void PriorityRouter::start() {
  MutexLock lock(ticker_mu_);
  if (ticker_.joinable()) return;
  ticker_ = std::thread([this] { run_ticker(); });
}

void PriorityRouter::run_ticker() {
  MutexLock lock(ticker_mu_);
  while (!ticker_stopping_) {
    // 5ms: queue timeouts land within 5ms; the ladder and heartbeats run every evaluate_every.
    ticker_cv_.wait_for(lock, std::chrono::milliseconds(5));
    if (ticker_stopping_) break;
    lock.unlock();
    tick(clock_->now());
    lock.lock();
  }
}

void PriorityRouter::stop() {
  std::vector<Dispatch> rest;
  {
    MutexLock tl(ticker_mu_);
    MutexLock lock(mu_);
    ticker_stopping_ = true;
    stopping_ = true;
    for (auto& c : classes_) {
      for (auto& w : c.queue) rest.emplace_back(std::move(w.batch), std::move(w.done));
      c.queue.clear();
    }
  }
  ticker_cv_.notify_all();
  if (ticker_.joinable() && ticker_.get_id() != std::this_thread::get_id()) ticker_.join();
  // Queued requests were abandoned by the pipeline's drain; their batches still move on.
  for (auto& [b, d] : rest) d(std::move(b));
}

PriorityRouter::ClassCounts PriorityRouter::counts(std::size_t cls) const {
  MutexLock lock(mu_);
  ClassCounts out = classes_.at(cls).counts;
  out.queued = classes_[cls].reserved;
  out.running = classes_[cls].running;
  return out;
}

int PriorityRouter::shed_level() const {
  MutexLock lock(mu_);
  return ladder_.level();
}

double PriorityRouter::busy_fraction() const {
  MutexLock lock(mu_);
  return last_busy_fraction_;
}

double PriorityRouter::prefill_rate() const {
  MutexLock lock(mu_);
  return prefill_.rate();
}

std::int64_t PriorityRouter::queued_tokens(std::size_t cls) const {
  MutexLock lock(mu_);
  return classes_.at(cls).reserved_tokens;
}

std::string PriorityRouter::readiness_detail() const {
  MutexLock lock(mu_);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", last_busy_fraction_);
  std::string out = "{\"node\":\"" + name_ + "\",\"shed_level\":" + std::to_string(ladder_.level()) + ",\"busy_fraction\":" + buf +
                    ",\"queued\":{";
  for (std::size_t i = 0; i < classes_.size(); ++i) {
    if (i) out += ",";
    out += "\"" + classes_[i].policy.name + "\":" + std::to_string(classes_[i].reserved);
  }
  out += "}";
  if (token_budget_) {
    std::snprintf(buf, sizeof buf, "%.1f", prefill_.rate());
    out += std::string(",\"prefill_tokens_per_s\":") + buf + ",\"queued_tokens\":{";
    for (std::size_t i = 0; i < classes_.size(); ++i) {
      if (i) out += ",";
      out += "\"" + classes_[i].policy.name + "\":" + std::to_string(classes_[i].reserved_tokens);
    }
    out += "}";
  }
  return out + "}";
}

}  // namespace sluice
