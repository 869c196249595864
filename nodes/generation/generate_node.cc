#include "nodes/generation/generate_node.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "graph/batch.h"
#include "nodes/generation/model_error.h"

namespace sluice::generation {

GenerateNodeOptions generate_options_from(const GenerateConfig& config, const std::string& base_dir) {
  GenerateNodeOptions o;
  std::string path = config.model();
  if (path.empty()) {
    const char* env = std::getenv("SLUICE_MODEL");
    if (!env || !*env) throw std::invalid_argument("model is not set and SLUICE_MODEL is empty");
    path = env;
  } else if (std::filesystem::path(path).is_relative() && !base_dir.empty()) {
    path = (std::filesystem::path(base_dir) / path).string();
  }
  o.model_path = path;
  o.streams = config.streams() > 0 ? int(config.streams()) : 1;
  o.generator.threads = config.threads() > 0 ? int(config.threads()) : 1;
  o.generator.context = int(config.context());
  o.max_tokens = config.max_tokens() > 0 ? int(config.max_tokens()) : 256;
  o.max_waiting = config.max_waiting();
  return o;
}

GenerationRequest generation_request_for(const Request& request, int default_max_tokens) {
  const sluice::SamplingParams& in = request.input().sampling;
  GenerationRequest g;
  g.max_tokens = in.max_tokens < 0 ? default_max_tokens : std::min(in.max_tokens, default_max_tokens);
  g.sampling.temperature = in.temperature;
  g.sampling.top_p = in.top_p;
  g.sampling.top_k = in.top_k;
  g.sampling.min_p = in.min_p;
  g.sampling.repetition_penalty = in.repetition_penalty;
  g.sampling.presence_penalty = in.presence_penalty;
  g.sampling.frequency_penalty = in.frequency_penalty;
  g.sampling.seed = in.seed.value_or(request.id());
  g.stop = in.stop;
  return g;
}

struct GenerateNode::BatchState {
  BatchPtr batch;
  Done done;
  std::atomic<size_t> open{0};
};

GenerateNode::GenerateNode(const GenerateNodeOptions& options, Clock* clock) : options_(options), clock_(clock) {
  try {
    model_ = LlamaModel::load(options.model_path);
  } catch (const ModelError& e) {
    throw std::invalid_argument(e.what());
  }
  for (int i = 0; i < options_.streams; ++i) streams_.emplace_back([this, i] { run_stream(i); });
}

GenerateNode::~GenerateNode() { stop(); }

void GenerateNode::finish(const std::shared_ptr<BatchState>& batch) {
  if (batch->open.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    Done done = std::move(batch->done);
    done(std::move(batch->batch));
  }
}

void GenerateNode::start_batch(BatchPtr batch, Done done) {
  auto state = std::make_shared<BatchState>();
  state->batch = batch;
  state->done = std::move(done);
  // One extra count held while jobs are queued, so the batch cannot finish early.
  state->open.store(batch->requests.size() + 1, std::memory_order_release);
  size_t queued = 0;
  {
    std::lock_guard lock(mu_);
    for (const auto& r : batch->requests) {
      if (!r->active()) continue;
      if (stopping_) {
        r->complete(Status::Error(StatusCode::kUnavailable, "generate: shutting down", AbortCause::kShutdown), clock_->now());
      } else if (waiting_.size() >= options_.max_waiting + size_t(options_.streams)) {
        Status s = Status::Error(StatusCode::kOverloaded, "generate: too many requests waiting for the model", AbortCause::kShed);
        s.retry_after_seconds = 1;
        r->complete(std::move(s), clock_->now());
      } else {
        waiting_.push_back(Job{r, state});
        ++queued;
      }
    }
  }
  if (queued > 0) wake_.notify_all();
  // Requests not queued count as finished now; then release the set-up count.
  const size_t skipped = batch->requests.size() - queued;
  if (skipped > 0) state->open.fetch_sub(skipped, std::memory_order_acq_rel);
  finish(state);
}

void GenerateNode::run_stream(int index) {
  Generator gen(*model_, options_.generator);
  while (true) {
    Job job;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
      if (waiting_.empty()) return;  // stopping and drained
      job = std::move(waiting_.front());
      waiting_.pop_front();
    }
    if (stopping_) {
      job.request->complete(Status::Error(StatusCode::kUnavailable, "generate: shutting down", AbortCause::kShutdown),
                            clock_->now());
    } else {
      serve(gen, *job.request);
    }
    finish(job.batch);
  }
}

void GenerateNode::serve(Generator& gen, Request& r) {
  if (!r.active()) return;
  GenerationRequest g = generation_request_for(r, options_.max_tokens);
  if (auto prompt = r.attachment<std::string>("prompt")) {
    g.prompt = *prompt;
  } else {
    g.prompt = r.input().query();
  }
  g.should_stop = [&] { return r.cancelled() || r.done() || r.expired(clock_->now()) || stopping_; };
  try {
    const GenerationResult res = gen.generate(g, [&](std::string_view piece) { r.emit_token(piece, clock_->now()); });
    r.usage.prompt_tokens = res.prompt_tokens;
    r.usage.completion_tokens = res.completion_tokens;
    const Nanos now = clock_->now();
    if (res.finish == FinishReason::kCancelled) {
      r.finish_reason = "cancelled";
      if (r.cancelled())
        r.complete(Status::Error(StatusCode::kCancelled, "request cancelled while generating", r.cancel_cause()), now);
      else if (r.expired(now))
        r.complete(Status::Error(StatusCode::kDeadlineExceeded, "request deadline passed while generating", AbortCause::kTimeout), now);
      else
        r.complete(Status::Error(StatusCode::kUnavailable, "generate: shutting down", AbortCause::kShutdown), now);
      return;
    }
    r.finish_reason = finish_reason_name(res.finish);
    r.complete(Status::Ok(), now);
  } catch (const ModelError& e) {  // e.g. the prompt does not fit the context
    r.finish_reason = "error";
    r.complete(Status::Error(StatusCode::kInvalidArgument, e.what()), clock_->now());
  }
}

void GenerateNode::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : streams_)
    if (t.joinable()) t.join();
}

}  // namespace sluice::generation
