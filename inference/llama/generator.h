// Generator: one model, one sequence at a time: prompt in, text pieces streamed out.
//
// Semantics follow the reference (llama2.c / llama.cpp): BOS first, the prompt encoded with a
// leading space, then one token per step until an end-of-generation token (EOS, or BOS which
// starts a new document), a stop string, max_tokens, the context limit, or cancellation
// (checked before every token). Each piece is passed to the callback as soon as it is decoded,
// never splitting a UTF-8 character (see text_stream.h).
//
// A Generator owns its KV blocks and scratch, and a kernel backend of options.backend (with its
// thread arena) unless it is given one to borrow; it borrows the model, which must outlive it.
// One generate() at a time per Generator.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "inference/generation.h"
#include "inference/llama/kv_cache.h"
#include "inference/llama/llama_forward.h"
#include "inference/llama/llama_model.h"
#include "inference/llama/sampler.h"
#include "kernels/backend_factory.h"

namespace sluice::inference {

struct GeneratorOptions {
  kernels::BackendKind backend = kernels::BackendKind::kCpu;  // which kernels run the model
  int threads = 1;           // kernel threads (oneTBB arena size)
  int context = 0;           // KV positions per sequence; 0 = the model's context_length
  int kv_block_size = 16;    // positions per KV block
  kernels::DType kv_type = kernels::DType::kF16;  // KV elements: kF16 or kF32 (docs/generation.md)
  int max_batch = 512;       // prompt tokens per forward chunk (bounds scratch memory)
};

class Generator {
 public:
  Generator(const LlamaModel& model, const GeneratorOptions& options);
  // Runs on `backend` (borrowed; it must outlive the Generator and be used by nothing else meanwhile).
  Generator(const LlamaModel& model, const GeneratorOptions& options, kernels::KernelBackend& backend);

  // Streams text through request.on_text; stops at should_stop (polled before every token).
  // Throws ModelError when the prompt does not fit the context.
  GenerationResult generate(const GenerationRequest& request);

  // Lower-level access for benchmarks and tests: forward `tokens` at positions pos0.. of the
  // generator's sequence (reserving KV blocks) and return the last token's logits.
  const std::vector<float>& forward(const std::vector<int32_t>& tokens, int64_t pos0);
  void reset();  // forget the sequence (returns its KV blocks)

  const LlamaModel& model() const { return model_; }
  int context() const { return context_; }
  kernels::KernelBackend& backend() { return backend_.get(); }

 private:
  Generator(const LlamaModel& model, const GeneratorOptions& options, kernels::BackendHandle backend);
  const LlamaModel& model_;
  int context_;
  kernels::BackendHandle backend_;
  KvBlockPool pool_;
  KvSequence seq_;
  LlamaForward forward_;
  std::vector<float> logits_;
};

}  // namespace sluice::inference
