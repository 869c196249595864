#include "nodes/generation/generate_node.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "graph/batch.h"
#include "graph/citation.h"
#include "graph/request_citations.h"
#include "inference/engine/shared_engines.h"
#include "inference/model_error.h"
#include "nodes/generation/model_path.h"
#include "nodes/generation/prompt_fit.h"
#include "nodes/generation/prompt_node.h"

namespace sluice::generation {

using namespace sluice::inference;  // the model runtime these nodes drive

kernels::BackendKind generation_device(const std::string& device) {
  // Empty when built in code (no loader defaults): the default, cpu.
  if (device.empty() || device == "cpu") return kernels::BackendKind::kCpu;
  std::string why;
  const bool cuda = kernels::backend_kind_available(kernels::BackendKind::kCuda, &why);
  if (device == "cuda") {
    if (!cuda) throw std::invalid_argument("device: cuda is not usable here: " + why);
    return kernels::BackendKind::kCuda;
  }
  if (device == "auto") {
    std::fprintf(stderr, "sluice: generate: device auto runs on %s%s%s\n", cuda ? "cuda" : "cpu",
                 cuda ? "" : " (", cuda ? "" : (why + ")").c_str());
    return cuda ? kernels::BackendKind::kCuda : kernels::BackendKind::kCpu;
  }
  throw std::invalid_argument("device: must be cpu, cuda or auto, not '" + device + "'");
}

GenerateNodeOptions generate_options_from(const GenerateConfig& config, const std::string& base_dir) {
  GenerateNodeOptions o;
  try {
    o.model_path = model_path_from(config.model(), base_dir);
  } catch (const std::invalid_argument&) {
    if (!config.optional()) throw;
    return o;  // no model: the node passes requests on
  }
  // A config built in code (no loader defaults) leaves chat_template empty: the default, auto,
  // which the node resolves from the model the engine loads (one open of the file).
  const std::string& chat = config.chat_template().empty() ? std::string("auto") : config.chat_template();
  if (chat != "auto") o.chat_template = chat_template_from_config(chat, "chat_template", "");
  EngineOptions& e = o.engine;
  e.threads = config.threads() > 0 ? int(config.threads()) : int(std::max(1u, std::thread::hardware_concurrency()));
  e.context = int(config.context());
  e.max_waiting = config.max_waiting() > 0 ? config.max_waiting() : 256;
  if (config.max_running() > 0) e.max_running = int(config.max_running());
  if (config.class_caps_size() > 0) {
    e.class_caps.clear();
    for (int i = 0; i < config.class_caps_size(); ++i) {
      if (config.class_caps(i) == 0)
        throw std::invalid_argument("class_caps[" + std::to_string(i) + "]: must be at least 1");
      e.class_caps.push_back(int(config.class_caps(i)));
    }
  }
  if (config.step_tokens() > 0) e.step_tokens = int(config.step_tokens());
  if (config.interleaved_prefill() > 0) e.interleaved_prefill = int(config.interleaved_prefill());
  e.kv_budget_bytes = config.kv_budget();
  if (config.block_size() > 0) e.block_size = int(config.block_size());
  e.prefix_cache = config.prefix_cache();
  e.prefill_itl_slack = config.prefill_itl_slack();
  if (config.min_prefill_chunk() > 0) e.min_prefill_chunk = int(config.min_prefill_chunk());
  // Empty when built in code (no loader defaults): the default, f16.
  if (const std::string& kv = config.kv_type(); kv.empty() || kv == "f16") {
    e.kv_type = kernels::DType::kF16;
  } else if (kv == "f32") {
    e.kv_type = kernels::DType::kF32;
  } else {
    throw std::invalid_argument("kv_type: must be f16 or f32, not '" + kv + "'");
  }
  e.backend = generation_device(config.device());
  o.max_tokens = config.max_tokens() > 0 ? int(config.max_tokens()) : 256;
  o.citations = citation_mode(config.citations());
  return o;
}

GenerationRequest generation_request_for(const Request& request, int default_max_tokens) {
  const RequestInput& in = request.input();
  GenerationRequest g;
  g.sampling = in.sampling;
  if (!g.sampling.seed) g.sampling.seed = request.id();  // distinct per request, reproducible from its id
  g.max_tokens = in.max_tokens < 0 ? default_max_tokens : std::min(in.max_tokens, default_max_tokens);
  g.stop = in.stop;
  g.grammar = in.structured.grammar;
  return g;
}

namespace {

void complete_finished(Request& r, const GenerationResult& res, CitationMode mode, bool node_stopping, Nanos now) {
  r.usage.prompt_tokens = res.prompt_tokens;
  r.usage.completion_tokens = res.completion_tokens;
  if (res.finish == FinishReason::kStop || res.finish == FinishReason::kLength) {
    if (const auto citations = r.attachment<std::vector<Citation>>(kCitationsKey)) emit_sources(r, *citations, mode, now);
    r.finish_reason = finish_reason_name(res.finish);
    r.complete(Status::Ok(), now);
    return;
  }
  if (res.finish == FinishReason::kError) {
    r.finish_reason = "error";
    r.complete(Status::Error(StatusCode::kInternal, "generate: " + res.error), now);
    return;
  }
  r.finish_reason = "cancelled";
  if (res.finish == FinishReason::kCancelled && r.cancelled())
    r.complete(Status::Error(StatusCode::kCancelled, "request cancelled while generating", r.cancel_cause()), now);
  else if (res.finish == FinishReason::kCancelled && !node_stopping && r.expired(now))
    r.complete(Status::Error(StatusCode::kDeadlineExceeded, "request deadline passed while generating", AbortCause::kTimeout), now);
  else
    r.complete(Status::Error(StatusCode::kUnavailable, "generate: shutting down", AbortCause::kShutdown), now);
}

}  // namespace

GenerationRequest engine_request_for(const RequestPtr& request, PromptText prompt, int default_max_tokens,
                                     CitationMode citations, Clock* clock, std::shared_ptr<const std::atomic<bool>> stopping,
                                     std::function<void()> on_done) {
  GenerationRequest e = generation_request_for(*request, default_max_tokens);
  e.prompt = std::move(prompt);
  // Unrouted requests (kDefaultPriority) count as interactive: HTTP's default class is P0.
  e.priority = request->priority == Request::kDefaultPriority ? 0 : int(request->priority);
  e.tenant = request->tenant;
  e.request_id = request->external_id;
  e.should_stop = [request, clock, stopping] {
    return request->cancelled() || request->done() || request->expired(clock->now()) ||
           stopping->load(std::memory_order_relaxed);
  };
  e.on_text = [request, clock](std::string_view piece) { request->emit_token(piece, clock->now()); };
  e.on_finish = [request, citations, clock, stopping, on_done = std::move(on_done)](const GenerationResult& res) {
    complete_finished(*request, res, citations, stopping->load(std::memory_order_relaxed), clock->now());
    if (on_done) on_done();
  };
  return e;
}

void complete_refused(Request& r, const Status& refused, Nanos now) {
  switch (refused.code) {
    case StatusCode::kOverloaded: {
      Status s = Status::Error(StatusCode::kOverloaded, "generate: " + refused.message, AbortCause::kShed);
      s.retry_after_seconds = 1;
      r.complete(std::move(s), now);
      return;
    }
    case StatusCode::kInvalidArgument: {
      r.finish_reason = "error";
      Status s = Status::Error(StatusCode::kInvalidArgument, "generate: " + refused.message);
      // What OpenAI clients look for: a prompt over the context is theirs to shorten.
      if (refused.api_code == "context_length_exceeded")
        s.with_api(refused.api_code, r.input().kind == RequestInput::Kind::kChat ? "messages" : "prompt");
      else if (!refused.api_code.empty())
        s.with_api(refused.api_code, refused.param);
      r.complete(std::move(s), now);
      return;
    }
    default:
      r.complete(Status::Error(StatusCode::kUnavailable, "generate: shutting down", AbortCause::kShutdown), now);
  }
}

struct GenerateNode::BatchState {
  BatchPtr batch;
  Done done;
  std::atomic<size_t> open{0};
};

GenerateNode::GenerateNode(const GenerateNodeOptions& options, Clock* clock, MetricsRegistry* metrics,
                           const std::vector<std::string>& class_names)
    : options_(options), clock_(clock) {
  if (options.model_path.empty()) return;
  engine_ = shared_serving_engine(options.model_path, options.engine, metrics, class_names);
  if (options_.chat_template) return;
  try {
    options_.chat_template = detect_chat_template(model_chat_template(engine_->model().file()));
  } catch (const ModelError& e) {
    throw std::invalid_argument(std::string("chat_template: ") + e.what());
  }
}

namespace {

// Sets `e`'s prompt for `r`, or its tokens when a draft was fitted here (see the header comment).
void prepare_prompt(Request& r, ChatTemplate chat_template, const ServingEngine& engine, GenerationRequest& e) {
  if (const auto draft = r.attachment<const CitedPromptDraft>(kPromptKey)) {
    const int64_t budget = int64_t(engine.context()) - std::max(0, e.max_tokens);
    FittedPrompt fitted = fit_prompt(*draft, engine.model().tokenizer(), budget);
    if (fitted.passages < draft->citations.size()) {  // cite only what the model was shown
      r.attach(kCitationsKey, std::make_shared<std::vector<Citation>>(
                                  draft->citations.begin(), draft->citations.begin() + std::ptrdiff_t(fitted.passages)));
    }
    e.prompt_tokens = std::move(fitted.tokens);
    return;
  }
  if (const auto raw = r.attachment<std::string>(kPromptKey)) {
    e.prompt = *raw;
  } else {
    e.prompt = request_prompt(r.input(), chat_template);
  }
}

}  // namespace

GenerateNode::~GenerateNode() { stop(); }

void GenerateNode::name_cache_tier(const std::string& node) {
  if (engine_) kv_tier_ = std::make_unique<KvPrefixTier>(node, engine_);
}

void GenerateNode::finish(const std::shared_ptr<BatchState>& batch) {
  if (batch->open.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    Done done = std::move(batch->done);
    done(std::move(batch->batch));
  }
}

void GenerateNode::start_batch(BatchPtr batch, Done done) {
  if (!engine_) return done(std::move(batch));  // no model configured: the next node answers
  auto state = std::make_shared<BatchState>();
  state->batch = batch;
  state->done = std::move(done);
  // One extra count held while submitting, so the batch cannot finish early.
  state->open.store(batch->requests.size() + 1, std::memory_order_release);
  for (const RequestPtr& r : batch->requests) {
    if (r->input().kind == RequestInput::Kind::kRetrieve) {  // /v1/retrieve: the answer node's
      finish(state);
      continue;
    }
    if (!r->active() || stopping_->load()) {
      if (r->active())
        r->complete(Status::Error(StatusCode::kUnavailable, "generate: shutting down", AbortCause::kShutdown), clock_->now());
      finish(state);
      continue;
    }
    if (r->expired(clock_->now())) {  // spent before it reached the model: no stream starts
      r->complete(Status::Error(StatusCode::kDeadlineExceeded, "request deadline passed before generation started",
                                AbortCause::kTimeout),
                  clock_->now());
      finish(state);
      continue;
    }
    if (r->input().max_tokens > options_.max_tokens) {
      // Stated, not silently capped: the client asked for more than this pipeline generates.
      r->finish_reason = "error";
      r->complete(Status::Error(StatusCode::kInvalidArgument,
                                "max_tokens is too large: " + std::to_string(r->input().max_tokens) +
                                    "; this pipeline generates at most " + std::to_string(options_.max_tokens) +
                                    " tokens per answer (generate.max_tokens)")
                      .with_api("invalid_value", "max_tokens"),
                  clock_->now());
      finish(state);
      continue;
    }
    {
      MutexLock lock(mu_);
      ++outstanding_;
    }
    auto on_done = [this, state] {
      finish(state);
      MutexLock lock(mu_);
      if (--outstanding_ == 0) idle_.notify_all();
    };
    GenerationRequest request = engine_request_for(r, PromptText(), options_.max_tokens, options_.citations, clock_, stopping_, on_done);
    if (r->trace().degradation(options_.stage_index) == Degradation::kShrink) {
      request.max_tokens = std::max(1, static_cast<int>(request.max_tokens * options_.shrink_factor));
    }
    prepare_prompt(*r, *options_.chat_template, *engine_, request);
    Status outcome = engine_->submit(std::move(request));
    if (!outcome.ok()) {
      complete_refused(*r, outcome, clock_->now());
      on_done();
    }
  }
  finish(state);
}

void GenerateNode::stop() {
  stopping_->store(true);
  // Sequences see the flag at the engine's next step and complete; wait for them so no
  // callback outlives the node.
  MutexLock lock(mu_);
  while (outstanding_ != 0) idle_.wait(lock);
}

}  // namespace sluice::generation
