#include "inference/llama/llama_model.h"

#include <string_view>

#include "inference/gguf/mapped_weights.h"
#include "kernels/quant_blocks.h"

namespace sluice::inference {
namespace {

int positive_int(const GgufFile& f, const std::string& key, uint64_t max) {
  const uint64_t v = f.get_uint(key);
  if (v == 0 || v > max) f.fail("metadata '" + key + "'", "value " + std::to_string(v) + " is out of range 1.." + std::to_string(max));
  return int(v);
}

const GgufTensor& require_tensor(const GgufFile& f, const std::string& name) {
  const GgufTensor* t = f.find_tensor(name);
  if (!t) f.fail("tensor '" + name + "'", "missing");
  return *t;
}

// A [cols, rows] ggml tensor as a row-major matrix of `rows` outputs.
kernels::MatrixView matrix(const GgufFile& f, const std::string& name, int64_t cols, int64_t rows) {
  const GgufTensor& t = require_tensor(f, name);
  if (t.dims.size() != 2 || t.dims[0] != cols || t.dims[1] != rows)
    f.fail("tensor '" + name + "'", "shape must be [" + std::to_string(cols) + ", " + std::to_string(rows) + "]");
  if ((t.type == kernels::DType::kQ8_0 || t.type == kernels::DType::kQ4_0) && cols % kernels::kQuantBlock != 0)
    f.fail("tensor '" + name + "'", "quantised rows must be a multiple of 32");
  const size_t align = t.type == kernels::DType::kF32 ? 4 : 2;  // element reads of F32 / F16
  if (reinterpret_cast<uintptr_t>(t.data) % align != 0) f.fail("tensor '" + name + "'", "data is not aligned for its type");
  return {t.type, t.data, rows, cols};
}

const float* norm(const GgufFile& f, const std::string& name, int64_t dim) {
  const GgufTensor& t = require_tensor(f, name);
  if (t.dims.size() != 1 || t.dims[0] != dim) f.fail("tensor '" + name + "'", "shape must be [" + std::to_string(dim) + "]");
  if (t.type != kernels::DType::kF32) f.fail("tensor '" + name + "'", "norm weights must be F32");
  if (reinterpret_cast<uintptr_t>(t.data) % alignof(float) != 0) f.fail("tensor '" + name + "'", "data is not 4-byte aligned");
  return reinterpret_cast<const float*>(t.data);
}

}  // namespace

void LlamaModel::prepare_weights(kernels::BackendKind backend) {
  if (!kernels::backend_kind_uses_host_memory(backend)) {
    // Everything the forward pass reads moves to the device, the embedding and norms included.
    std::vector<kernels::MatrixView*> views = {&token_embd, &output};
    std::vector<kernels::WeightVector> vectors = {{&output_norm, config_.dim}};
    for (LlamaLayer& L : layers) {
      for (kernels::MatrixView* v : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) views.push_back(v);
      vectors.push_back({&L.attn_norm, config_.dim});
      vectors.push_back({&L.ffn_norm, config_.dim});
    }
    prepared_ = kernels::place_weights(backend, views.data(), views.size(), vectors.data(), vectors.size());
    host_weights_ = false;
    return;
  }
  std::vector<kernels::MatrixView*> views;
  for (LlamaLayer& L : layers)
    for (kernels::MatrixView* v : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) views.push_back(v);
  // A tied output is also the embedding, read row by row: it keeps the file's layout.
  if (output.data != token_embd.data) views.push_back(&output);
  prepared_ = prepare_mapped_weights(backend, views);
}

std::unique_ptr<LlamaModel> LlamaModel::load(const std::string& path, kernels::BackendKind backend) {
  return from_file(GgufFile::open(path), backend);
}

std::unique_ptr<LlamaModel> LlamaModel::from_file(std::unique_ptr<GgufFile> file, kernels::BackendKind backend) {
  const GgufFile& f = *file;
  const std::string_view arch = f.get_string("general.architecture");
  if (arch != "llama")
    f.fail("metadata 'general.architecture'", "architecture '" + std::string(arch) + "' is not supported; only 'llama' is");
  std::unique_ptr<LlamaModel> m(new LlamaModel());
  LlamaConfig& c = m->config_;
  c.dim = positive_int(f, "llama.embedding_length", 1 << 16);
  c.hidden_dim = positive_int(f, "llama.feed_forward_length", 1 << 18);
  c.n_layers = positive_int(f, "llama.block_count", 1024);
  c.n_heads = positive_int(f, "llama.attention.head_count", 1024);
  c.n_kv_heads = f.find_uint("llama.attention.head_count_kv") ? positive_int(f, "llama.attention.head_count_kv", 1024) : c.n_heads;
  c.context_length = positive_int(f, "llama.context_length", 1 << 24);
  if (c.dim % c.n_heads != 0) f.fail("metadata 'llama.attention.head_count'", "does not divide embedding_length");
  if (c.n_heads % c.n_kv_heads != 0) f.fail("metadata 'llama.attention.head_count_kv'", "does not divide head_count");
  c.head_dim = c.dim / c.n_heads;
  c.n_rot = f.find_uint("llama.rope.dimension_count") ? positive_int(f, "llama.rope.dimension_count", 1024) : c.head_dim;
  if (c.n_rot > c.head_dim || c.n_rot % 2 != 0) f.fail("metadata 'llama.rope.dimension_count'", "must be even and at most the head size");
  if (auto eps = f.find_float("llama.attention.layer_norm_rms_epsilon")) c.rms_eps = float(*eps);
  if (auto base = f.find_float("llama.rope.freq_base")) c.rope_base = float(*base);
  if (!(c.rms_eps > 0) || !(c.rope_base > 0)) f.fail("metadata", "rms epsilon and rope base must be positive");

  m->tokenizer_ = std::make_unique<Tokenizer>(f);
  c.vocab_size = m->tokenizer_->vocab_size();
  const int64_t kv_dim = int64_t(c.n_kv_heads) * c.head_dim;

  m->token_embd = matrix(f, "token_embd.weight", c.dim, c.vocab_size);
  m->output_norm = norm(f, "output_norm.weight", c.dim);
  m->output = f.find_tensor("output.weight") ? matrix(f, "output.weight", c.dim, c.vocab_size) : m->token_embd;
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LlamaLayer L;
    L.attn_norm = norm(f, p + "attn_norm.weight", c.dim);
    L.wq = matrix(f, p + "attn_q.weight", c.dim, c.dim);
    L.wk = matrix(f, p + "attn_k.weight", c.dim, kv_dim);
    L.wv = matrix(f, p + "attn_v.weight", c.dim, kv_dim);
    L.wo = matrix(f, p + "attn_output.weight", c.dim, c.dim);
    L.ffn_norm = norm(f, p + "ffn_norm.weight", c.dim);
    L.w_gate = matrix(f, p + "ffn_gate.weight", c.dim, c.hidden_dim);
    L.w_up = matrix(f, p + "ffn_up.weight", c.dim, c.hidden_dim);
    L.w_down = matrix(f, p + "ffn_down.weight", c.hidden_dim, c.dim);
    m->layers.push_back(L);
  }
  m->prepare_weights(backend);
  m->file_ = std::move(file);
  return m;
}

}  // namespace sluice::inference
