// LlamaForward: the Llama forward pass over a KernelBackend. Runs a batch of tokens of one
// sequence at consecutive positions, appending their keys and values to the sequence's paged
// KV blocks, and returns logits. Prompts run as matrix-matrix products in chunks of at most
// max_batch tokens; decoding runs one token (matrix-vector).
//
// forward_batch runs a ragged batch: several sequences' segments (a decode token, a prefill
// chunk) in one pass. The matrix products see every segment's tokens together, so one read of
// the weights serves the whole batch; rotary, KV writes and attention run per segment, through
// that segment's own block table. The kernels compute each token's row independently of the
// others in the batch, so a sequence's logits do not depend on what it was batched with.
//
// Owns its scratch buffers, in the backend's memory; borrows the model and backend (which must
// outlive it). Token ids, block tables and logits stay host memory for the caller: on a
// device-memory backend the tables are staged into device memory each pass and only the
// logits rows asked for are copied back. A model loaded for a device kind needs a backend of
// that kind (std::invalid_argument on a host-memory one). One thread at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "inference/llama/kv_cache.h"
#include "inference/llama/llama_model.h"
#include "kernels/backend.h"
#include "kernels/backend_buffer.h"

namespace sluice::inference {

// One sequence's part of a ragged batch: tokens[0, n) at positions pos0.., KV written through
// block_table (which must already cover pos0 + n positions). When logits is set, the last
// token's vocab_size logits are written there.
struct ForwardSegment {
  const int32_t* tokens = nullptr;
  int64_t n = 0;
  int64_t pos0 = 0;
  const int32_t* block_table = nullptr;
  float* logits = nullptr;
};

class LlamaForward {
 public:
  LlamaForward(const LlamaModel& model, kernels::KernelBackend& backend, int max_batch = 512);

  // Processes tokens[0, n) at positions pos0.. . `seq` must already hold capacity for
  // pos0 + n positions in `pool`. Writes vocab_size logits for the last token into `logits`
  // (for every token, n x vocab_size, when all_logits). Token ids must be < vocab_size.
  void forward(const int32_t* tokens, int64_t n, int64_t pos0, KvBlockPool& pool,
               const KvSequence& seq, float* logits, bool all_logits = false);

  // Runs `count` segments together; their tokens total at most max_batch() (std::length_error
  // otherwise). Token ids must be < vocab_size.
  void forward_batch(const ForwardSegment* segments, size_t count, KvBlockPool& pool);

  int max_batch() const { return max_batch_; }

 private:
  void forward_chunk(const int32_t* tokens, int64_t n, int64_t pos0, KvBlockPool& pool,
                     const KvSequence& seq, float* logits, bool all_logits);
  // Embedding and every layer for n tokens laid out segment after segment; leaves the final
  // hidden states in x_.
  void run_layers(const ForwardSegment* segments, size_t count, int64_t n, KvBlockPool& pool);

  // The segments with block tables the backend can read: the callers' own on a host-memory
  // backend, copies staged into tables_ on a device one.
  const ForwardSegment* stage_tables(const ForwardSegment* segments, size_t count, int block_size);
  // Writes `rows` rows of logits for the final hidden rows at `hidden` to host memory, each row
  // to dst[i] (vocab_size floats).
  void output_logits(const float* hidden, int64_t rows, float* const* dst);

  const LlamaModel& model_;
  kernels::KernelBackend& backend_;
  int max_batch_;
  kernels::BackendBuffer x_, xb_, q_, k_, v_, att_, gate_, up_, logits_;
  kernels::BackendBuffer tables_;               // device backends: this pass's block tables
  std::vector<int32_t> host_tables_;            // ... assembled here first
  std::vector<ForwardSegment> staged_;          // ... and the segments pointing at them
  std::vector<float*> logits_rows_;             // output_logits' destinations, reused
  std::vector<float> host_logits_;              // device backends: the logits copied back
  std::vector<kernels::AttentionSegment> attention_segments_;  // one step's segments, reused
};

}  // namespace sluice::inference
