#include "inference/llama/generator.h"

#include <chrono>

#include "inference/model_error.h"
#include "inference/tokenize/text_stream.h"

namespace sluice::inference {
namespace {

int resolve_context(const LlamaModel& m, const GeneratorOptions& o) {
  return o.context > 0 ? o.context : m.config().context_length;
}

int blocks_for(int context, int block_size) { return (context + block_size - 1) / block_size; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Generator::Generator(const LlamaModel& model, const GeneratorOptions& options)
    : Generator(model, options, kernels::BackendHandle({options.backend, std::max(1, options.threads)})) {}

Generator::Generator(const LlamaModel& model, const GeneratorOptions& options, kernels::KernelBackend& backend)
    : Generator(model, options, kernels::BackendHandle(backend)) {}

Generator::Generator(const LlamaModel& model, const GeneratorOptions& options, kernels::BackendHandle backend)
    : model_(model),
      context_(resolve_context(model, options)),
      backend_(std::move(backend)),
      pool_(model.config().n_layers, model.config().n_kv_heads * model.config().head_dim,
            std::max(1, options.kv_block_size), blocks_for(context_, std::max(1, options.kv_block_size)),
            options.kv_type, &backend_.get()),
      seq_(pool_),
      forward_(model, backend_.get(), options.max_batch),
      logits_(size_t(model.config().vocab_size)) {}

void Generator::reset() { seq_.clear(); }

const std::vector<float>& Generator::forward(const std::vector<int32_t>& tokens, int64_t pos0) {
  const int64_t end = pos0 + int64_t(tokens.size());
  if (end > context_)
    throw ModelError("request: " + std::to_string(end) + " positions exceed the context of " + std::to_string(context_));
  for (int32_t t : tokens)
    if (t < 0 || t >= model_.config().vocab_size) throw ModelError("request: token id " + std::to_string(t) + " is outside the vocabulary");
  if (!seq_.reserve(end)) throw ModelError("request: KV blocks exhausted");
  forward_.forward(tokens.data(), int64_t(tokens.size()), pos0, pool_, seq_, logits_.data());
  return logits_;
}

GenerationResult Generator::generate(const GenerationRequest& req) {
  const Tokenizer& tok = model_.tokenizer();
  GenerationResult res;
  std::vector<int32_t> tokens = tok.encode_prompt(req.prompt, req.add_bos);
  if (tokens.empty()) tokens.push_back(tok.bos());  // nothing to condition on: start a document
  if (int64_t(tokens.size()) > context_)
    throw ModelError("request: prompt has " + std::to_string(tokens.size()) + " tokens; the context holds " +
                     std::to_string(context_) + " positions");
  res.prompt_tokens = int(tokens.size());
  reset();
  Sampler sampler(req.sampling);
  TextStream stream(req.stop, req.on_text);
  const auto t0 = std::chrono::steady_clock::now();
  auto cancelled = [&] { return req.should_stop && req.should_stop(); };

  res.finish = FinishReason::kLength;
  if (cancelled()) {
    res.finish = FinishReason::kCancelled;
  } else {
    forward(tokens, 0);
    res.ttft_seconds = seconds_since(t0);  // the first token's logits are ready
    while (res.completion_tokens < req.max_tokens) {
      const int32_t next = sampler.sample(logits_, tokens);
      if (!req.ignore_eos && tok.is_end_of_generation(next)) {
        res.finish = FinishReason::kStop;
        break;
      }
      ++res.completion_tokens;
      const int32_t prev = tokens.back();
      tokens.push_back(next);
      if (stream.push(tok.piece(prev, next))) {
        res.finish = FinishReason::kStop;
        break;
      }
      if (int64_t(tokens.size()) > context_) break;  // no position left to run this token at
      if (res.completion_tokens >= req.max_tokens) break;
      if (cancelled()) {
        res.finish = FinishReason::kCancelled;
        break;
      }
      forward({next}, int64_t(tokens.size()) - 1);
    }
  }
  res.total_seconds = seconds_since(t0);
  stream.finish();
  res.text = stream.text();
  return res;
}

}  // namespace sluice::inference
