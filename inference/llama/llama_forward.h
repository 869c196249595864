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
// On a backend that records (a GPU's), a pure decode step (every segment one token) runs as one
// recording per (batch-size bucket, block-table width, output kind): the tokens, positions and
// block tables are staged into backend memory padded to the bucket (padding rows have position
// -1), the step's operations read them there, and the recording is replayed; the first step of a
// bucket runs unrecorded, so the backend's scratch is grown before it is recorded. A sequence's
// results are the same either way (rows are independent).
//
// Owns its scratch buffers, in the backend's memory; borrows the model and backend (which must
// outlive it). Token ids, block tables and logits stay host memory for the caller: on a
// device-memory backend the tables are staged into device memory each pass and only the
// logits rows asked for are copied back. A model loaded for a device kind needs a backend of
// that kind (std::invalid_argument on a host-memory one). One thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "inference/llama/kv_cache.h"
#include "inference/llama/llama_model.h"
#include "kernels/backend.h"
#include "kernels/backend_buffer.h"

namespace sluice::inference {

// One sequence's part of a ragged batch: tokens[0, n) at positions pos0.., KV written through
// block_table (which must already cover pos0 + n positions). When logits is set, the last
// token's vocab_size logits are written there. Otherwise, when sampling and token are set, the
// backend picks the next token by kernels/token_sampling.h's rule and writes its id to *token:
// on a device only the id crosses to the host.
struct ForwardSegment {
  const int32_t* tokens = nullptr;
  int64_t n = 0;
  int64_t pos0 = 0;
  const int32_t* block_table = nullptr;
  float* logits = nullptr;
  const kernels::TokenSampling* sampling = nullptr;
  int32_t* token = nullptr;

  bool wants_logits() const { return logits != nullptr; }
  bool wants_token() const { return !logits && sampling && token; }
};

class LlamaForward {
 public:
  LlamaForward(const LlamaModel& model, kernels::KernelBackend& backend, int max_batch = 512);

  // Processes tokens[0, n) at positions pos0.. . `seq` must already hold capacity for
  // pos0 + n positions in `pool`. Writes vocab_size logits for the last token into `logits`
  // (for every token, n x vocab_size, when all_logits). Token ids must be < vocab_size. One
  // token is a batch of one (forward_batch), so single-stream decoding is recorded too.
  void forward(const int32_t* tokens, int64_t n, int64_t pos0, KvBlockPool& pool,
               const KvSequence& seq, float* logits, bool all_logits = false);

  // Runs `count` segments together; their tokens total at most max_batch() (std::length_error
  // otherwise). Token ids must be < vocab_size.
  void forward_batch(const ForwardSegment* segments, size_t count, KvBlockPool& pool);

  int max_batch() const { return max_batch_; }
  // Recorded decode steps run and recordings made so far (a device backend's; 0 on the CPU).
  int64_t replayed_steps() const { return replayed_steps_; }
  int64_t recordings_made() const { return recordings_made_; }

 private:
  void forward_chunk(const int32_t* tokens, int64_t n, int64_t pos0, KvBlockPool& pool,
                     const KvSequence& seq, float* logits, bool all_logits);
  // Embedding and every layer for n tokens laid out segment after segment; leaves the final
  // hidden states in x_. With `at`, the tokens are a staged decode step instead (token ids at
  // `token_ids` in backend memory, one per row of `at`) and `segments` is unused.
  void run_layers(const ForwardSegment* segments, size_t count, int64_t n, KvBlockPool& pool,
                  const kernels::TokenPlaces* at = nullptr, const int32_t* token_ids = nullptr);
  // The recorded decode step (llama_forward_decode.cc); false when the batch is not one.
  bool run_recorded_decode(const ForwardSegment* segments, size_t count, KvBlockPool& pool);
  // Ensure logits_ holds `rows` rows and ids_ max_batch ids; a replacement changes own_epoch_.
  void ensure_logits(int64_t rows);
  void ensure_ids();

  // The segments with block tables the backend can read: the callers' own on a host-memory
  // backend, copies staged into tables_ on a device one.
  const ForwardSegment* stage_tables(const ForwardSegment* segments, size_t count, int block_size);
  // The output for the final hidden rows at `hidden`: the first `sampled` rows are sampled with
  // params[i] into tokens[i], the other rows' logits are written to host memory, row i to
  // dst[i - sampled] (vocab_size floats).
  void output_logits(const float* hidden, int64_t rows, float* const* dst, int64_t sampled = 0,
                     const kernels::TokenSampling* params = nullptr, int32_t* const* tokens = nullptr);

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
  std::vector<kernels::TokenSampling> sampling_rows_;          // output_logits' sampled rows' params
  std::vector<int32_t*> token_rows_;                           // ... and their destinations
  kernels::BackendBuffer ids_;                                 // device backends: the sampled ids
  std::vector<int32_t> host_ids_;                              // ... copied back

  // Recorded decode steps, by key (bucket, table width, output kind), with the epochs they were
  // recorded under (the backend's scratch, and this object's logits_ and staging buffers).
  struct Recorded {
    std::unique_ptr<kernels::BackendRecording> recording;
    uint64_t backend_epoch = 0, own_epoch = 0;
  };
  std::map<uint64_t, Recorded> recorded_;
  std::set<uint64_t> warmed_;         // keys run once unrecorded
  uint64_t own_epoch_ = 0;
  kernels::BackendBuffer decode_in_;  // the staged step: token ids, positions, block tables
  std::vector<int32_t> host_decode_in_;
  int64_t replayed_steps_ = 0, recordings_made_ = 0;
};

}  // namespace sluice::inference
