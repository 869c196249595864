// LlamaModel: a `general.architecture = llama` GGUF file as llama.cpp defines it: token
// embedding, per layer RMSNorm + grouped-query attention with rotary embeddings + RMSNorm +
// SwiGLU feed-forward, final RMSNorm, output matrix (tied to the embedding when absent).
// Weights are F32, F16, Q8_0 or Q4_0 views into the mapped file; norms are F32. One exception:
// the backend the model is loaded for may lay out matrices used only by matmul its own way
// (kernels::prepare_matmul_weights: the CPU backend interleaves Q8_0/Q4_0 by 8 on AVX2 and lays
// F32 out in 16-row panels on AVX2 and AVX-512, in one huge-page region); the model holds those
// copies and releases the file pages they replace (inference/gguf/mapped_weights.h), so the
// weights are in memory once. SLUICE_QUANT_LAYOUT=rows and SLUICE_F32_LAYOUT=rows keep the
// file's layout (for comparison).
//
// Loaded for a device-memory kind (CUDA), every weight is copied into device memory once at
// load (kernels::place_weights) and the views and norm pointers point there; such a model runs
// only on backends of that kind (weights_in_host_memory() tells LlamaForward).
//
// Immutable after load(): one model serves any number of sessions on any threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "inference/gguf/gguf_file.h"
#include "inference/tokenize/tokenizer.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"

namespace sluice::inference {

struct LlamaConfig {
  int dim = 0;             // embedding_length
  int hidden_dim = 0;      // feed_forward_length
  int n_layers = 0;        // block_count
  int n_heads = 0;         // attention.head_count
  int n_kv_heads = 0;      // attention.head_count_kv (defaults to n_heads)
  int head_dim = 0;        // dim / n_heads
  int n_rot = 0;           // rope.dimension_count (defaults to head_dim)
  int vocab_size = 0;
  int context_length = 0;  // the length the model was trained for
  float rms_eps = 1e-5f;   // attention.layer_norm_rms_epsilon
  float rope_base = 10000; // rope.freq_base
};

struct LlamaLayer {
  const float* attn_norm = nullptr;
  kernels::MatrixView wq, wk, wv, wo;
  const float* ffn_norm = nullptr;
  kernels::MatrixView w_gate, w_up, w_down;
};

class LlamaModel {
 public:
  // Maps and validates the file: architecture, hyperparameters, every tensor's presence, type
  // and shape, and the tokenizer. Throws ModelError naming the file, field and problem.
  // `backend`: the kind of kernel backend that will run the model (its weight layout).
  static std::unique_ptr<LlamaModel> load(const std::string& path,
                                          kernels::BackendKind backend = kernels::BackendKind::kCpu);
  static std::unique_ptr<LlamaModel> from_file(std::unique_ptr<GgufFile> file,
                                               kernels::BackendKind backend = kernels::BackendKind::kCpu);

  const LlamaConfig& config() const { return config_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const GgufFile& file() const { return *file_; }

  kernels::MatrixView token_embd;
  const float* output_norm = nullptr;
  kernels::MatrixView output;  // == token_embd when the file ties them
  std::vector<LlamaLayer> layers;

  // Matrices the backend laid out its own way at load (0 when none were), and their bytes.
  size_t prepared_matrices() const { return prepared_ ? prepared_->matrices() : 0; }
  size_t prepared_bytes() const { return prepared_ ? prepared_->bytes() : 0; }
  bool weights_in_host_memory() const { return host_weights_; }

 private:
  LlamaModel() = default;
  void prepare_weights(kernels::BackendKind backend);
  std::unique_ptr<kernels::PreparedWeights> prepared_;
  bool host_weights_ = true;
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> tokenizer_;
  LlamaConfig config_;
};

}  // namespace sluice::inference
