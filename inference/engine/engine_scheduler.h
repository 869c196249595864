// EngineScheduler: continuous batching over one model, one step at a time, no threads of its
// own (ServingEngine drives it; tests drive it step by step).
//
// A sequence is its tokens (prompt, then what it generated) and how many positions of them
// have keys and values in the cache (`computed`); its next input is tokens[computed, end).
// Decoding is the case of one pending token, prefill the case of many: one code path.
//
// Each step():
//  1. Sequences whose should_stop() is true leave (kCancelled) and free their blocks.
//  2. Admission, most urgent first (class, then arrival): a waiting sequence joins while its
//     class is under its cap and max_running is not reached; at the slot cap a more urgent
//     arrival preempts the least urgent running sequence (offline first, latest first). On
//     joining, the prefix cache supplies what it can of the prompt's keys and values.
//  3. Planning within step_tokens: every decoding sequence gets its one token; prefilling ones
//     share interleaved_prefill tokens while anything decodes (step_tokens otherwise), most
//     urgent first: chunked prefill. A sequence whose blocks cannot be had preempts the least
//     urgent sequence not yet planned (itself when it is the least urgent).
//  4. One forward pass over all planned segments (LlamaForward::forward_batch).
//  5. Sequences that reached their last token sample the next one, stream its text, and leave
//     at once when finished; full blocks are published to the prefix cache.
//
// A request's own code (its should_stop, on_text and on_finish callbacks, and its sampler)
// can fail only that request: an exception from it ends that sequence with kError, the error
// in its result, and is reported through on_sequence_failure; the step goes on for the rest.
// Only a failure of the shared forward pass throws out of step().
//
// Preemption frees a sequence's blocks (those already published stay cached while memory
// allows) and puts it back in the waiting queue at its original place (its arrival order), so
// it resumes before anything that arrived after it; on resumption the prefix cache or a
// recomputation restores its keys and values, and its sampler continues where it stopped, so
// its tokens are exactly those of an uninterrupted run.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "graph/status.h"
#include "inference/constrain/token_mask.h"
#include "inference/engine/engine_types.h"
#include "inference/engine/kv_block_manager.h"
#include "inference/llama/kv_cache.h"
#include "inference/llama/llama_forward.h"
#include "inference/llama/llama_model.h"
#include "inference/llama/sampler.h"
#include "inference/tokenize/text_stream.h"
#include "kernels/backend_factory.h"

namespace sluice::inference {

struct StepReport {
  int sequences = 0;       // segments run
  int decode_tokens = 0;
  int prefill_tokens = 0;
  int admitted = 0;
  int finished = 0;
  int preempted = 0;
  double forward_seconds = 0;
};

class EngineScheduler {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  // Throws ModelError / std::invalid_argument on impossible options (e.g. a KV budget below one
  // sequence's worth of blocks).
  // Runs on a backend of options.backend made for it (kernels/backend_factory.h), or on
  // `backend` (borrowed; it must outlive the scheduler and be used by nothing else meanwhile).
  EngineScheduler(const LlamaModel& model, const EngineOptions& options);
  EngineScheduler(const LlamaModel& model, const EngineOptions& options, kernels::KernelBackend& backend);

  // Tokenizes a request and checks it can ever run: ok, or kInvalidArgument saying why not
  // (a token outside the vocabulary, a prompt longer than the context, a KV budget too small
  // for it). Thread-safe.
  Status prepare(const GenerationRequest& request, std::vector<int32_t>* tokens) const;
  // Queues a prepared request for admission.
  void enqueue(GenerationRequest request, std::vector<int32_t> tokens, SteadyTime submitted);
  // prepare() then enqueue(); returns prepare()'s verdict.
  Status add(GenerationRequest request, SteadyTime submitted);

  StepReport step();
  bool idle() const { return waiting_.empty() && running_.empty(); }
  // Finishes every sequence with `how` (kShutdown at stop, kError after a failed step, with
  // `error` in the result), freeing its blocks. After kError no held-back text is flushed: the
  // text callbacks may be what failed.
  void abort_all(FinishReason how = FinishReason::kShutdown, const std::string& error = {});

  size_t waiting() const { return waiting_.size(); }
  size_t running() const { return running_.size(); }
  // Decode steps run as a replay of a backend recording (a CUDA graph; 0 on the CPU).
  int64_t replayed_decode_steps() const { return forward_.replayed_steps(); }
  // The request ids (GenerationRequest::request_id) of the running, then the waiting sequences.
  std::vector<std::string> request_ids() const;
  const EngineOptions& options() const { return options_; }
  int context() const { return context_; }
  int classes() const { return int(options_.class_caps.size()); }
  KvBlockStats kv_stats() const { return blocks_.stats(); }
  int available_blocks() const { return blocks_.available(); }
  // Preemptions so far, per class.
  const std::vector<uint64_t>& preemptions() const { return preemptions_; }
  const LlamaModel& model() const { return model_; }
  // Test hook: replaces the prefix cache's chain hash (e.g. to force collisions).
  void set_chain_hash(KvBlockManager::ChainHash hash);

  // Called for every emitted token with the time since the sequence's previous token (or
  // since submission for its first): the engine's TTFT and inter-token latency metrics.
  std::function<void(bool first, double seconds)> on_token_timing;
  // Called when one request's own code threw and only its sequence ended (kError): its
  // request id and the error. Must not throw.
  std::function<void(const std::string& request_id, const std::string& error)> on_sequence_failure;

 private:
  struct Sequence {
    GenerationRequest request;
    uint64_t order = 0;  // arrival; preempted sequences keep theirs
    int cls = 0;
    uint64_t scope = 0;
    std::vector<int32_t> tokens;
    int prompt_tokens = 0;
    int64_t computed = 0;
    std::vector<int32_t> table;
    Sampler sampler;
    std::unique_ptr<constrain::TokenConstraint> constraint;  // request.grammar's, when set
    TextStream stream;
    GenerationResult result;
    SteadyTime submitted, last_token;
    bool admitted_once = false;
    Sequence(GenerationRequest r, const std::vector<std::string>& stop);
  };
  using SeqPtr = std::unique_ptr<Sequence>;
  struct Planned {
    Sequence* seq;
    int64_t n;
    bool logits;  // the step ends its known tokens: it picks the next one
  };

  EngineScheduler(const LlamaModel& model, const EngineOptions& options, kernels::BackendHandle backend);
  static bool more_urgent(const Sequence& a, const Sequence& b) {
    return a.cls != b.cls ? a.cls < b.cls : a.order < b.order;
  }
  int cap_of(int cls) const;
  void insert_waiting(SeqPtr seq);
  void drop_cancelled();
  int admit(StepReport& report);
  bool admit_one(SeqPtr& seq, StepReport& report);
  void plan(std::vector<Planned>& planned, StepReport& report);
  int prefill_budget(int decoders) const;
  void learn_step_costs(const StepReport& report, int decoders);
  bool reserve(Sequence& seq, int64_t n);  // blocks for positions [computed, computed + n)
  Sequence* least_urgent_running(const Sequence* more_urgent_than, const std::vector<Planned>* exclude);
  void preempt(Sequence& seq);
  void after_forward(const std::vector<Planned>& planned, StepReport& report);
  // The next token from host logits (constrained sequences: the grammar masks them first), or as
  // the backend sampled it; true when the sequence finished.
  bool sample_next(Sequence& seq, float* logits);
  bool accept_token(Sequence& seq, int32_t next);
  void publish_full_blocks(Sequence& seq, int64_t old_computed);
  void finish(Sequence& seq, FinishReason how);
  // Runs one of a sequence's own callbacks (or its sampler); if it throws, ends that sequence
  // alone with kError ("<what> threw: ...") and returns false.
  template <typename F>
  bool contained(Sequence& seq, const char* what, F&& f);
  void fail_sequence(Sequence& seq, const std::string& error);
  void retire_finished();
  const std::shared_ptr<const constrain::VocabTrie>& vocab_trie();

  const LlamaModel& model_;
  EngineOptions options_;
  int context_;
  kernels::BackendHandle backend_;
  KvBlockPool pool_;
  KvBlockManager blocks_;
  LlamaForward forward_;
  uint64_t model_scope_;
  uint64_t next_order_ = 0;
  std::vector<SeqPtr> waiting_;  // sorted, most urgent first
  std::vector<SeqPtr> running_;  // in admission order
  std::vector<int> running_per_class_;
  std::vector<uint64_t> preemptions_;
  std::vector<float> logits_;                      // one step's host logits (constrained sequences)
  std::vector<kernels::TokenSampling> sampling_;   // one step's parameters for backend sampling
  std::vector<int32_t> sampled_;                   // ... and the tokens it picked
  std::shared_ptr<const constrain::VocabTrie> vocab_trie_;  // built at the first constrained request
  // Measured step costs (EWMA, seconds) behind the adaptive prefill chunk.
  double decode_step_seconds_ = 0;    // a step of decoders only
  double prefill_token_seconds_ = 0;  // each prefill token's addition to a step
  std::vector<ForwardSegment> segments_;
};

}  // namespace sluice::inference
