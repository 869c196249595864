// UseLiteModel: a Universal Sentence Encoder Lite GGUF file (use_lite_format.h) mapped once and
// described as weight views for KernelBackend and the tokenizer. Load checks every tensor's
// presence and shape against the metadata, so a forward pass never reads past a tensor; a
// file that is not USE-lite, or is damaged, is a ModelError naming the file and the field.
// The matrices the forward pass multiplies are laid out for the CPU kernels at load (F32 row
// panels on AVX2 and AVX-512, inference/gguf/mapped_weights.h), and the file pages they came
// from released, so the weights are in memory once; SLUICE_F32_LAYOUT=rows keeps the file's.
//
// Immutable after load: safe to share between threads; lives as long as its views are used.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "inference/encoder/unigram_tokenizer.h"
#include "inference/gguf/gguf_file.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"

namespace sluice::inference {

struct UseLiteLayer {
  int input_width = 0;  // features entering the layer (the embedding width for layer 0)
  int attention_width = 0;
  int heads = 0;
  int head_dim = 0;
  float query_scale = 0;
  int ffn_width = 0;
  const float* attn_norm_w = nullptr;
  const float* attn_norm_b = nullptr;
  kernels::MatrixView qkv;  // rows 3 x attention_width: q, k, v
  const float* qkv_b = nullptr;
  kernels::MatrixView output;
  const float* output_b = nullptr;
  kernels::MatrixView residual;  // set where input_width != model width
  const float* residual_b = nullptr;
  const float* ffn_norm_w = nullptr;
  const float* ffn_norm_b = nullptr;
  kernels::MatrixView ffn_up;
  const float* ffn_up_b = nullptr;
  kernels::MatrixView ffn_down;
  const float* ffn_down_b = nullptr;
};

struct UseLiteConfig {
  int context_length = 0;   // tokens kept per text; the rest are dropped, as the reference does
  int embedding_width = 0;  // token embeddings and the positional signal
  int model_width = 0;      // the transformer's output features
  int output_width = 0;     // the sentence vector
  float layer_norm_eps = 0;
  float l2_eps = 0;
};

class UseLiteModel {
 public:
  // Throws ModelError.
  static std::unique_ptr<UseLiteModel> load(const std::string& path);

  const UseLiteConfig& config() const { return config_; }
  const std::vector<UseLiteLayer>& layers() const { return layers_; }
  const UnigramTokenizer& tokenizer() const { return *tokenizer_; }
  std::string source() const;

  kernels::MatrixView token_embedding;  // rows = vocabulary ids
  const float* inv_timescales = nullptr;  // embedding_width / 2
  // The positional signal of position `pos` into out (embedding_width floats): [sin(p * inv),
  // cos(p * inv)], each float(std::sin(double(float(p) * inv[i]))). The first
  // kTimingTableRows positions are a table made at load (computed per token it was 2% of a
  // pass); a longer context computes the rest, so a file cannot make the table large.
  void timing(int pos, float* out) const;
  const float* timing_row(int pos) const {
    return pos < timing_rows_ ? timing_table_.data() + size_t(pos) * size_t(config_.embedding_width) : nullptr;
  }
  static constexpr int kTimingTableRows = 512;
  kernels::MatrixView pool;
  const float* pool_b = nullptr;

 private:
  UseLiteModel() = default;
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<kernels::PreparedWeights> prepared_;  // the weights' CPU layout, when it differs from the file's
  UseLiteConfig config_;
  std::vector<UseLiteLayer> layers_;
  std::unique_ptr<UnigramTokenizer> tokenizer_;
  std::vector<float> timing_table_;
  int timing_rows_ = 0;
};

}  // namespace sluice::inference
