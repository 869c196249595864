// ServingEngine: one model serving many concurrent requests. A thread of its own runs an
// EngineScheduler (continuous batching, chunked prefill, prefix reuse, priority and
// preemption: see engine_scheduler.h) step after step while there is work, and sleeps when
// there is none.
//
// submit() is thread-safe and cheap: it tokenizes and queues; the sequence joins the running
// batch at the next step. Callbacks (on_text, on_finish) run on the engine thread and must not
// block; one that throws ends its own request alone with kError (engine_scheduler.h). A
// refused submit (queue full, prompt too long, shutting down) returns the reason and never
// calls the callbacks.
//
// Metrics (when a registry is given), labelled model=<model_id>:
//   sluice_engine_kv_blocks{state=free|in_use|shared|cached_idle}   gauges
//   sluice_engine_prefix_hits_total, _prefix_reused_tokens_total, _kv_evictions_total,
//   _kv_cow_copies_total, _prefix_collisions_refused_total              counters
//   sluice_engine_preemptions_total{class=...}                          counter
//   sluice_engine_step_sequences, _step_tokens                           histograms
//   sluice_engine_ttft_seconds, _inter_token_seconds                     histograms
//   sluice_engine_generated_tokens_total, _prompt_tokens_total           counters
//   sluice_engine_step_failures_total                                   counter: steps that threw (fail_all)
//   sluice_engine_graph_replays_total                                   counter: decode steps replayed as CUDA graphs
//   sluice_engine_sequence_failures_total                               counter: requests ended alone because
//                                                                        their own callback or sampler threw
//   sluice_engine_waiting, _running, _busy_fraction                      gauges
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "graph/metrics.h"
#include "graph/mutex.h"
#include "graph/status.h"
#include "inference/engine/engine_scheduler.h"

namespace sluice::inference {

class ServingEngine {
 public:
  // The model must outlive the engine. class_names label the per-class metrics (P0, P1, ...).
  ServingEngine(const LlamaModel& model, const EngineOptions& options, MetricsRegistry* metrics = nullptr,
                std::vector<std::string> class_names = {});
  // The same on a borrowed backend (it must outlive the engine and serve nothing else
  // meanwhile): a backend shared with a caller that owns its device, or one a test wraps.
  ServingEngine(const LlamaModel& model, const EngineOptions& options, kernels::KernelBackend& backend,
                MetricsRegistry* metrics = nullptr, std::vector<std::string> class_names = {});
  ~ServingEngine();  // stop()

  // Queues a request: ok, kInvalidArgument (it can never run: EngineScheduler::prepare),
  // kOverloaded (max_waiting sequences already wait) or kUnavailable (stopping). On ok,
  // request.on_finish is called exactly once later; otherwise never.
  Status submit(GenerationRequest request);
  // Finishes everything still queued or running with FinishReason::kShutdown and joins the
  // thread. Idempotent.
  void stop();

  EngineLoad load() const;
  KvBlockStats kv_stats() const;
  std::vector<uint64_t> preemptions() const;
  const EngineOptions& options() const { return options_; }
  int context() const { return context_; }
  // The model it serves (immutable): its tokenizer sizes prompts, its metadata names the chat
  // template, without opening the file again.
  const LlamaModel& model() const { return scheduler_->model(); }

 private:
  void start(MetricsRegistry* metrics, const std::vector<std::string>& class_names);  // the rest of construction
  void run();
  void publish_metrics(const StepReport& report, double wall_seconds);
  // Last resort when a step's forward pass throws (a request's own callbacks fail only that
  // request: engine_scheduler.h): every sequence ends with FinishReason::kError (their
  // requests answer 500), counted and logged; the engine keeps serving new requests.
  void fail_all(const std::string& what);
  void register_metrics(MetricsRegistry& registry, const std::vector<std::string>& class_names);

  EngineOptions options_;
  int context_ = 0;
  mutable Mutex mu_;  // guards inbox_, stopping_ and the snapshots below
  CondVar wake_;
  struct Submitted {
    GenerationRequest request;
    std::vector<int32_t> tokens;
    std::chrono::steady_clock::time_point at;
  };
  std::deque<Submitted> inbox_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::unique_ptr<EngineScheduler> scheduler_;  // engine thread only (after construction)
  // Snapshots published by the engine thread after every step.
  EngineLoad load_ GUARDED_BY(mu_);
  KvBlockStats kv_ GUARDED_BY(mu_);
  std::vector<uint64_t> preemptions_ GUARDED_BY(mu_);
  double busy_ewma_ = 0;  // engine thread only

  struct Metrics;
  std::unique_ptr<Metrics> metrics_;
  std::thread thread_;
};

}  // namespace sluice::inference
