// LlamaForward: the Llama forward pass over a KernelBackend. Runs a batch of tokens of one
// sequence at consecutive positions, appending their keys and values to the sequence's paged
// KV blocks, and returns logits. Prompts run as matrix-matrix products in chunks of at most
// max_batch tokens; decoding runs one token (matrix-vector).
//
// Owns its scratch buffers; borrows the model and backend (which must outlive it). One thread
// at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "nodes/generation/kv_cache.h"
#include "nodes/generation/llama_model.h"

namespace sluice::generation {

class LlamaForward {
 public:
  LlamaForward(const LlamaModel& model, kernels::KernelBackend& backend, int max_batch = 512);

  // Processes tokens[0, n) at positions pos0.. . `seq` must already hold capacity for
  // pos0 + n positions in `pool`. Writes vocab_size logits for the last token into `logits`
  // (for every token, n x vocab_size, when all_logits). Token ids must be < vocab_size.
  void forward(const int32_t* tokens, int64_t n, int64_t pos0, KvBlockPool& pool,
               const KvSequence& seq, float* logits, bool all_logits = false);

 private:
  void forward_chunk(const int32_t* tokens, int64_t n, int64_t pos0, KvBlockPool& pool,
                     const KvSequence& seq, float* logits, bool all_logits);

  const LlamaModel& model_;
  kernels::KernelBackend& backend_;
  int max_batch_;
  std::vector<float> x_, xb_, q_, k_, v_, att_, gate_, up_;
};

}  // namespace sluice::generation
