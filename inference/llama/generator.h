// Generator: one model, one sequence at a time: prompt in, text pieces streamed out.
//
// Semantics follow the reference (llama2.c / llama.cpp): BOS first, the prompt encoded with a
// leading space, then one token per step until an end-of-generation token (EOS, or BOS which
// starts a new document), a stop string, max_tokens, the context limit, or cancellation
// (checked before every token). Each piece is passed to the callback as soon as it is decoded,
// never splitting a UTF-8 character (see text_stream.h).
//
// A Generator owns its kernel backend (with its thread arena), KV blocks and scratch; it
// borrows the model, which must outlive it. One generate() at a time per Generator.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "nodes/generation/kv_cache.h"
#include "nodes/generation/llama_forward.h"
#include "nodes/generation/llama_model.h"
#include "nodes/generation/sampler.h"

namespace sluice::generation {

struct GeneratorOptions {
  int threads = 1;           // kernel threads (oneTBB arena size)
  int context = 0;           // KV positions per sequence; 0 = the model's context_length
  int kv_block_size = 16;    // positions per KV block
  kernels::DType kv_type = kernels::DType::kF16;  // KV elements: kF16 or kF32 (docs/generation.md)
  int max_batch = 512;       // prompt tokens per forward chunk (bounds scratch memory)
};

struct GenerationRequest {
  std::string prompt;
  bool add_bos = true;
  SamplingParams sampling;
  int max_tokens = 256;                    // completion tokens at most
  std::vector<std::string> stop;           // stop strings, excluded from the text
  const std::atomic<bool>* cancel = nullptr;  // set by another thread to stop at the next token
  // Polled with `cancel` before every token; true stops like cancel (e.g. a graph node passes
  // [&] { return request->cancelled() || request->expired(clock->now()); }).
  std::function<bool()> should_stop;
};

enum class FinishReason { kStop, kLength, kCancelled };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled" (OpenAI names)

struct GenerationResult {
  std::string text;
  int prompt_tokens = 0;      // including BOS
  int completion_tokens = 0;  // tokens sampled (an end-of-generation token is not counted)
  FinishReason finish = FinishReason::kStop;
  double prompt_seconds = 0;  // prompt processing time, i.e. time to the first token's logits
  double decode_seconds = 0;  // the rest
};

class Generator {
 public:
  using TextCallback = std::function<void(std::string_view)>;

  Generator(const LlamaModel& model, const GeneratorOptions& options);

  // Throws ModelError when the prompt does not fit the context.
  GenerationResult generate(const GenerationRequest& request, const TextCallback& on_text = {});

  // Lower-level access for benchmarks and tests: forward `tokens` at positions pos0.. of the
  // generator's sequence (reserving KV blocks) and return the last token's logits.
  const std::vector<float>& forward(const std::vector<int32_t>& tokens, int64_t pos0);
  void reset();  // forget the sequence (returns its KV blocks)

  const LlamaModel& model() const { return model_; }
  int context() const { return context_; }
  kernels::CpuBackend& backend() { return backend_; }

 private:
  const LlamaModel& model_;
  int context_;
  kernels::CpuBackend backend_;
  KvBlockPool pool_;
  KvSequence seq_;
  LlamaForward forward_;
  std::vector<float> logits_;
};

}  // namespace sluice::generation
