#include "inference/engine/serving_engine.h"

#include <cmath>
#include <cstdio>

namespace sluice::inference {

using SteadyClock = std::chrono::steady_clock;

struct ServingEngine::Metrics {
  Gauge *kv_free, *kv_in_use, *kv_shared, *kv_cached_idle, *waiting, *running, *busy;
  Counter *prefix_hits, *prefix_reused, *evictions, *cow, *collisions, *generated, *prompt, *step_failures, *sequence_failures,
      *replayed;
  std::vector<Counter*> preemptions;
  Histogram *step_sequences, *step_tokens, *ttft, *itl;
  KvBlockStats last_kv;
  std::vector<uint64_t> last_preemptions;
  int64_t last_replayed = 0;
};

ServingEngine::ServingEngine(const LlamaModel& model, const EngineOptions& options, MetricsRegistry* metrics,
                             std::vector<std::string> class_names)
    : options_(options) {
  scheduler_ = std::make_unique<EngineScheduler>(model, options_);  // on a backend of options.backend
  start(metrics, class_names);
}

ServingEngine::ServingEngine(const LlamaModel& model, const EngineOptions& options, kernels::KernelBackend& backend,
                             MetricsRegistry* metrics, std::vector<std::string> class_names)
    : options_(options) {
  scheduler_ = std::make_unique<EngineScheduler>(model, options_, backend);
  start(metrics, class_names);
}

void ServingEngine::start(MetricsRegistry* metrics, const std::vector<std::string>& class_names) {
  options_ = scheduler_->options();
  context_ = scheduler_->context();
  {
    MutexLock lock(mu_);  // no other thread yet; the lock keeps the snapshots' one rule
    kv_ = scheduler_->kv_stats();
    preemptions_ = scheduler_->preemptions();
    load_.free_kv_blocks = scheduler_->available_blocks();
    load_.total_kv_blocks = kv_.total;
  }
  if (metrics) register_metrics(*metrics, class_names);
  Counter* failures = metrics_ ? metrics_->sequence_failures : nullptr;
  scheduler_->on_sequence_failure = [model_id = options_.model_id, failures](const std::string& id, const std::string& error) {
    std::fprintf(stderr, "sluice: serving engine (%s): request %s ends with an error: %s\n", model_id.c_str(),
                 id.empty() ? "(no id)" : id.c_str(), error.c_str());
    if (failures) failures->inc();
  };
  thread_ = std::thread([this] { run(); });
}

ServingEngine::~ServingEngine() { stop(); }

void ServingEngine::register_metrics(MetricsRegistry& r, const std::vector<std::string>& class_names) {
  metrics_ = std::make_unique<Metrics>();
  Metrics& m = *metrics_;
  const Labels model{{"model", options_.model_id}};
  auto with = [&](const char* k, const std::string& v) {
    Labels l = model;
    l.emplace_back(k, v);
    return l;
  };
  const char* kv_help = "KV cache blocks by state";
  m.kv_free = &r.gauge("sluice_engine_kv_blocks", kv_help, with("state", "free"));
  m.kv_in_use = &r.gauge("sluice_engine_kv_blocks", kv_help, with("state", "in_use"));
  m.kv_shared = &r.gauge("sluice_engine_kv_blocks", kv_help, with("state", "shared"));
  m.kv_cached_idle = &r.gauge("sluice_engine_kv_blocks", kv_help, with("state", "cached_idle"));
  m.waiting = &r.gauge("sluice_engine_waiting", "Sequences waiting for admission to the running batch", model);
  m.running = &r.gauge("sluice_engine_running", "Sequences in the running batch", model);
  m.busy = &r.gauge("sluice_engine_busy_fraction", "Share of recent wall time in forward passes (1 s EWMA)", model);
  m.prefix_hits = &r.counter("sluice_engine_prefix_hits_total", "Admissions that reused cached KV", model);
  m.prefix_reused = &r.counter("sluice_engine_prefix_reused_tokens_total", "Prompt positions served from the prefix cache", model);
  m.evictions = &r.counter("sluice_engine_kv_evictions_total", "Cached KV blocks evicted to make room", model);
  m.cow = &r.counter("sluice_engine_kv_cow_copies_total", "KV blocks copied before a write (copy-on-write)", model);
  m.collisions = &r.counter("sluice_engine_prefix_collisions_refused_total", "Prefix hash hits refused by token verification", model);
  m.generated = &r.counter("sluice_engine_generated_tokens_total", "Tokens generated", model);
  m.step_failures = &r.counter("sluice_engine_step_failures_total",
                               "Engine steps that failed with an exception (a bug): their sequences ended with an error", model);
  m.sequence_failures = &r.counter("sluice_engine_sequence_failures_total",
                                   "Requests whose own callback or sampler threw (a bug): that request alone ended with an error",
                                   model);
  m.prompt = &r.counter("sluice_engine_prefill_tokens_total", "Prompt positions computed (not served by the cache)", model);
  m.replayed = &r.counter("sluice_engine_graph_replays_total",
                          "Decode steps run as a replayed recording (a CUDA graph; 0 on the CPU)", model);
  for (int c = 0; c < scheduler_->classes(); ++c) {
    const std::string name = c < int(class_names.size()) ? class_names[size_t(c)] : "class" + std::to_string(c);
    m.preemptions.push_back(&r.counter("sluice_engine_preemptions_total", "Sequences preempted, per class", with("class", name)));
  }
  m.step_sequences = &r.histogram("sluice_engine_step_sequences", "Sequences per engine step", model, Histogram::size_buckets());
  m.step_tokens = &r.histogram("sluice_engine_step_tokens", "Tokens per engine step", model, Histogram::size_buckets());
  m.ttft = &r.histogram("sluice_engine_ttft_seconds", "Submission to first token", model);
  m.itl = &r.histogram("sluice_engine_inter_token_seconds", "Time between a stream's tokens", model);
  m.last_preemptions.assign(size_t(scheduler_->classes()), 0);
  Histogram* ttft = m.ttft;
  Histogram* itl = m.itl;
  Counter* generated = m.generated;
  scheduler_->on_token_timing = [ttft, itl, generated](bool first, double seconds) {
    (first ? ttft : itl)->observe(seconds);
    generated->inc();
  };
}

Status ServingEngine::submit(GenerationRequest request) {
  std::vector<int32_t> tokens;
  Status prepared = scheduler_->prepare(request, &tokens);  // thread-safe, off the engine thread
  if (!prepared.ok()) return prepared;
  {
    MutexLock lock(mu_);
    if (stopping_) return Status::Error(StatusCode::kUnavailable, "the engine is shutting down", AbortCause::kShutdown);
    if (inbox_.size() + load_.waiting >= options_.max_waiting)
      return Status::Error(StatusCode::kOverloaded,
                           "the engine's waiting queue is full (" + std::to_string(options_.max_waiting) + " sequences)",
                           AbortCause::kShed);
    inbox_.push_back(Submitted{std::move(request), std::move(tokens), SteadyClock::now()});
  }
  wake_.notify_one();
  return Status::Ok();
}

void ServingEngine::run() {
  auto last = SteadyClock::now();
  while (true) {
    {
      MutexLock lock(mu_);
      while (!stopping_ && inbox_.empty() && scheduler_->idle()) wake_.wait(lock);
      if (stopping_) break;
      while (!inbox_.empty()) {
        Submitted s = std::move(inbox_.front());
        inbox_.pop_front();
        scheduler_->enqueue(std::move(s.request), std::move(s.tokens), s.at);
      }
    }
    StepReport report;
    try {
      report = scheduler_->step();
    } catch (const std::exception& e) {
      fail_all(e.what());
      continue;
    } catch (...) {
      fail_all("unknown exception");
      continue;
    }
    const auto now = SteadyClock::now();
    publish_metrics(report, std::chrono::duration<double>(now - last).count());
    last = now;
  }
  scheduler_->abort_all();
  MutexLock lock(mu_);
  load_.waiting = load_.running = 0;
}

void ServingEngine::fail_all(const std::string& what) {
  // Every request the step's failure ends, by id, so each client's error finds its log line.
  std::string ids;
  for (const std::string& id : scheduler_->request_ids()) ids += (ids.empty() ? "" : ", ") + id;
  std::fprintf(stderr,
               "sluice: serving engine (%s): a step failed: %s; its %zu running and %zu waiting sequences end with an "
               "error: %s\n",
               options_.model_id.c_str(), what.c_str(), scheduler_->running(), scheduler_->waiting(), ids.c_str());
  if (metrics_) metrics_->step_failures->inc();
  try {
    scheduler_->abort_all(FinishReason::kError, "the serving engine's step failed: " + what);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice: serving engine (%s): finishing the sequences failed too: %s\n", options_.model_id.c_str(), e.what());
  }
}

void ServingEngine::publish_metrics(const StepReport& report, double wall) {
  const double alpha = 1.0 - std::exp(-wall / 1.0);
  busy_ewma_ = alpha * (wall > 0 ? std::min(1.0, report.forward_seconds / wall) : 0.0) + (1 - alpha) * busy_ewma_;
  const KvBlockStats kv = scheduler_->kv_stats();
  {
    MutexLock lock(mu_);
    load_.busy_fraction = busy_ewma_;
    load_.waiting = scheduler_->waiting();
    load_.running = scheduler_->running();
    load_.free_kv_blocks = scheduler_->available_blocks();
    kv_ = kv;
    preemptions_ = scheduler_->preemptions();
  }
  if (!metrics_) return;
  Metrics& m = *metrics_;
  m.kv_free->set(kv.free);
  m.kv_in_use->set(kv.in_use);
  m.kv_shared->set(kv.shared);
  m.kv_cached_idle->set(kv.cached_idle);
  m.waiting->set(double(scheduler_->waiting()));
  m.running->set(double(scheduler_->running()));
  m.busy->set(busy_ewma_);
  m.prefix_hits->inc(double(kv.prefix_hits - m.last_kv.prefix_hits));
  m.prefix_reused->inc(double(kv.prefix_reused_tokens - m.last_kv.prefix_reused_tokens));
  m.evictions->inc(double(kv.evictions - m.last_kv.evictions));
  m.cow->inc(double(kv.cow_copies - m.last_kv.cow_copies));
  m.collisions->inc(double(kv.collisions_refused - m.last_kv.collisions_refused));
  m.last_kv = kv;
  const int64_t replayed = scheduler_->replayed_decode_steps();
  m.replayed->inc(double(replayed - m.last_replayed));
  m.last_replayed = replayed;
  const auto& pre = scheduler_->preemptions();
  for (size_t c = 0; c < pre.size(); ++c) {
    m.preemptions[c]->inc(double(pre[c] - m.last_preemptions[c]));
    m.last_preemptions[c] = pre[c];
  }
  if (report.sequences > 0) {
    m.step_sequences->observe(report.sequences);
    m.step_tokens->observe(report.decode_tokens + report.prefill_tokens);
    m.prompt->inc(report.prefill_tokens);
  }
}

void ServingEngine::stop() {
  {
    MutexLock lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    // Queued submissions never reached the scheduler: finish them here, as shutdown.
    for (auto& s : inbox_) {
      if (s.request.on_finish) {
        GenerationResult r;
        r.finish = FinishReason::kShutdown;
        s.request.on_finish(r);
      }
    }
    inbox_.clear();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

EngineLoad ServingEngine::load() const {
  MutexLock lock(mu_);
  EngineLoad l = load_;
  l.waiting += inbox_.size();
  return l;
}

KvBlockStats ServingEngine::kv_stats() const {
  MutexLock lock(mu_);
  return kv_;
}

std::vector<uint64_t> ServingEngine::preemptions() const {
  MutexLock lock(mu_);
  return preemptions_;
}

}  // namespace sluice::inference
