// SentenceEncoder: Universal Sentence Encoder Lite's forward pass on KernelBackend, texts in,
// L2-unit vectors out, many texts per call.
//
// The computation, read from the TensorFlow.js graph (docs/retrieval.md, "The sentence
// encoder"): ids = the unigram tokenizer's, the first context_length kept; per token
// x = E[id] + (E[id] + timing(position)) (the graph adds the embedding twice), timing =
// [sin(p * inv_timescales), cos(p * inv_timescales)]; then per layer, pre-norm:
//   h = LayerNorm(x); q, k, v = split(h Wqkv + b); heads attend over the whole text (no mask
//   beyond the text's own tokens; q scaled by the layer's query scale); a = heads Wo + b;
//   x = a + (x, or x Wr + br where the width changes);  x = x + relu(LayerNorm(x) W1 + b1) W2 + b2
// and last: m = mean of x over the text's tokens (a zero vector for an empty text);
// y = tanh(m Wp + bp); y / sqrt(max(|y|^2, l2_eps)). The last layer's W2 multiplies each
// text's mean of relu(...) instead of each token's row: the same m, as W2 is linear, with one
// row a text (a rounding difference well inside the parity bound).
//
// Batching: every token of every text of a call is one row of the same matmuls (no padding);
// only attention and pooling look at text boundaries. Calls are split into passes of at most
// max_pass_tokens tokens, which bounds the activation memory to max_pass_tokens *
// (3 * model width + max(3 * attention width, ffn width)) floats.
//
// Thread-safety: embed() may be called from many threads; passes run one at a time on the
// encoder's one backend (which parallelises each pass over `threads`, inside the backend's own
// oneTBB arena where it has one). Texts are tokenized on the caller's thread, outside the lock,
// beside other calls' passes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graph/mutex.h"
#include "inference/encoder/use_lite_model.h"
#include "kernels/backend_factory.h"

namespace sluice::inference {

struct SentenceEncoderOptions {
  int threads = 1;               // kernel and attention threads of one pass
  // Rows of one forward pass: activations take 12 KiB per row (three 512-wide buffers and one
  // 1,536-wide buffer that q|k|v and the feed-forward share), 24 MiB at 2,048 rows, and a pass
  // of a few hundred rows already keeps the matmul kernels busy.
  int max_pass_tokens = 2048;
};

class SentenceEncoder {
 public:
  SentenceEncoder(std::shared_ptr<const UseLiteModel> model, SentenceEncoderOptions options);
  ~SentenceEncoder();

  int dimension() const { return model_->config().output_width; }
  const UseLiteModel& model() const { return *model_; }

  // The ids a text is encoded from: the tokenizer's, cut to the context length.
  std::vector<int32_t> tokenize(std::string_view text) const;
  // Tokens counted before the cut (what an API reports as the input's usage).
  size_t count_tokens(std::string_view text) const { return model_->tokenizer().encode(text).size(); }

  // out: texts.size() rows of dimension() floats.
  void embed(const std::vector<std::string>& texts, float* out) const;
  // The same from ids (each cut to the context length here too).
  void embed_ids(const std::vector<std::vector<int32_t>>& ids, float* out) const;

 private:
  struct Pass;
  void run_pass(const std::vector<const std::vector<int32_t>*>& texts, float* out) const REQUIRES(mu_);

  std::shared_ptr<const UseLiteModel> model_;
  SentenceEncoderOptions options_;
  mutable Mutex mu_;  // one pass at a time on backend_
  std::unique_ptr<kernels::KernelBackend> backend_ PT_GUARDED_BY(mu_);
  std::unique_ptr<Pass> pass_ PT_GUARDED_BY(mu_);  // activation buffers, reused between passes
};

}  // namespace sluice::inference
