#include "inference/encoder/use_lite_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "inference/encoder/use_lite_format.h"
#include "inference/gguf/mapped_weights.h"

namespace sluice::inference {
namespace {

int positive(const GgufFile& f, const char* key, uint64_t max) {
  const uint64_t v = f.get_uint(key);
  if (v == 0 || v > max) f.fail("metadata '" + std::string(key) + "'", "value " + std::to_string(v) + " is out of range 1.." + std::to_string(max));
  return int(v);
}

const GgufTensor& f32_tensor(const GgufFile& f, const std::string& name, std::vector<int64_t> dims) {
  const GgufTensor* t = f.find_tensor(name);
  if (!t) f.fail("tensor '" + name + "'", "missing");
  if (t->type != kernels::DType::kF32) f.fail("tensor '" + name + "'", "must be F32");
  if (t->dims != dims) {
    std::string want;
    for (int64_t d : dims) want += (want.empty() ? "" : ", ") + std::to_string(d);
    f.fail("tensor '" + name + "'", "shape must be [" + want + "]");
  }
  if (reinterpret_cast<uintptr_t>(t->data) % alignof(float) != 0) f.fail("tensor '" + name + "'", "data is not 4-byte aligned");
  return *t;
}

const float* vector(const GgufFile& f, const std::string& name, int64_t length) {
  return reinterpret_cast<const float*>(f32_tensor(f, name, {length}).data);
}

kernels::MatrixView matrix(const GgufFile& f, const std::string& name, int64_t cols, int64_t rows) {
  const GgufTensor& t = f32_tensor(f, name, {cols, rows});
  return {kernels::DType::kF32, t.data, rows, cols};
}

template <typename T>
std::vector<T> array(const GgufFile& f, const char* key, GgufType type, size_t count) {
  const GgufValue& v = f.get_array(key, type);
  if (v.count != count) f.fail("metadata '" + std::string(key) + "'", "has " + std::to_string(v.count) + " entries, expected " + std::to_string(count));
  std::vector<T> out(count);
  std::memcpy(out.data(), v.data, count * sizeof(T));
  return out;
}

}  // namespace

void UseLiteModel::timing(int pos, float* out) const {
  const int half = config_.embedding_width / 2;
  for (int i = 0; i < half; ++i) {
    const float angle = float(pos) * inv_timescales[i];
    out[i] = float(std::sin(double(angle)));
    out[half + i] = float(std::cos(double(angle)));
  }
}

std::unique_ptr<UseLiteModel> UseLiteModel::load(const std::string& path) {
  std::unique_ptr<UseLiteModel> m(new UseLiteModel());
  m->file_ = GgufFile::open(path);
  const GgufFile& f = *m->file_;
  const auto arch = f.get_string("general.architecture");
  if (arch != use_lite::kArchitecture)
    f.fail("metadata 'general.architecture'", "'" + std::string(arch) + "' is not '" + use_lite::kArchitecture +
                                                   "' (convert the model with `sluice model import-use`)");
  UseLiteConfig& c = m->config_;
  c.context_length = positive(f, use_lite::kContextLength, 1 << 16);
  c.embedding_width = positive(f, use_lite::kTokenEmbeddingLength, 1 << 14);
  c.output_width = positive(f, use_lite::kEmbeddingLength, 1 << 14);
  const int layers = positive(f, use_lite::kBlockCount, 64);
  if (c.embedding_width % 2 != 0) f.fail("metadata '" + std::string(use_lite::kTokenEmbeddingLength) + "'", "must be even");
  c.layer_norm_eps = float(f.find_float(use_lite::kLayerNormEpsilon).value_or(-1));
  c.l2_eps = float(f.find_float(use_lite::kL2Epsilon).value_or(-1));
  if (!(c.layer_norm_eps > 0) || !(c.l2_eps > 0)) f.fail("metadata", "layer norm and L2 epsilons must be positive");

  // Tokenizer.
  if (f.get_string("tokenizer.ggml.model") != use_lite::kTokenizerModel)
    f.fail("metadata 'tokenizer.ggml.model'", std::string("must be '") + use_lite::kTokenizerModel + "'");
  const GgufValue& tokens = f.get_array("tokenizer.ggml.tokens", GgufType::kString);
  const auto scores = array<double>(f, use_lite::kScoresF64, GgufType::kF64, tokens.count);
  std::vector<UnigramPiece> pieces;
  pieces.reserve(tokens.count);
  for (size_t i = 0; i < tokens.count; ++i) pieces.push_back({std::string(tokens.strings[i]), scores[i]});
  const int reserved = positive(f, use_lite::kReserved, tokens.count);
  m->tokenizer_ = std::make_unique<UnigramTokenizer>(std::move(pieces), reserved);

  const GgufTensor* embd = f.find_tensor("token_embd.weight");
  if (!embd || embd->dims.size() != 2) f.fail("tensor 'token_embd.weight'", "missing or not a matrix");
  if (embd->dims[1] < int64_t(tokens.count)) f.fail("tensor 'token_embd.weight'", "has fewer rows than the vocabulary");
  m->token_embedding = matrix(f, "token_embd.weight", c.embedding_width, embd->dims[1]);
  m->inv_timescales = vector(f, "timing.inv_timescales", c.embedding_width / 2);
  m->timing_table_.resize(size_t(std::min(c.context_length, kTimingTableRows)) * size_t(c.embedding_width));
  for (int pos = 0; pos < std::min(c.context_length, kTimingTableRows); ++pos) {
    m->timing(pos, m->timing_table_.data() + size_t(pos) * size_t(c.embedding_width));
  }
  m->timing_rows_ = std::min(c.context_length, kTimingTableRows);

  const auto heads = array<int32_t>(f, use_lite::kHeadCount, GgufType::kI32, size_t(layers));
  const auto scales = array<float>(f, use_lite::kAttentionScale, GgufType::kF32, size_t(layers));
  const auto ffn = array<int32_t>(f, use_lite::kFeedForwardLength, GgufType::kI32, size_t(layers));
  int width = c.embedding_width;
  for (int l = 0; l < layers; ++l) {
    const std::string blk = "blk." + std::to_string(l) + ".";
    UseLiteLayer L;
    L.input_width = width;
    const GgufTensor* qkv = f.find_tensor(blk + "attn_qkv.weight");
    const GgufTensor* out = f.find_tensor(blk + "attn_output.weight");
    if (!qkv || qkv->dims.size() != 2 || qkv->dims[1] % 3 != 0) f.fail("tensor '" + blk + "attn_qkv.weight'", "missing or not 3 equal parts");
    if (!out || out->dims.size() != 2) f.fail("tensor '" + blk + "attn_output.weight'", "missing or not a matrix");
    L.attention_width = int(qkv->dims[1] / 3);
    L.heads = heads[size_t(l)];
    if (L.heads <= 0 || L.attention_width % L.heads != 0)
      f.fail("metadata '" + std::string(use_lite::kHeadCount) + "'", "layer " + std::to_string(l) + "'s heads do not divide its attention width");
    L.head_dim = L.attention_width / L.heads;
    L.query_scale = scales[size_t(l)];
    if (!std::isfinite(L.query_scale)) f.fail("metadata '" + std::string(use_lite::kAttentionScale) + "'", "not finite");
    const int model_width = int(out->dims[1]);
    if (c.model_width != 0 && model_width != c.model_width) f.fail("tensor '" + blk + "attn_output.weight'", "layers disagree on the model width");
    c.model_width = model_width;
    L.ffn_width = ffn[size_t(l)];
    if (L.ffn_width <= 0) f.fail("metadata '" + std::string(use_lite::kFeedForwardLength) + "'", "must be positive");
    L.attn_norm_w = vector(f, blk + "attn_norm.weight", width);
    L.attn_norm_b = vector(f, blk + "attn_norm.bias", width);
    L.qkv = matrix(f, blk + "attn_qkv.weight", width, 3 * L.attention_width);
    L.qkv_b = vector(f, blk + "attn_qkv.bias", 3 * L.attention_width);
    L.output = matrix(f, blk + "attn_output.weight", L.attention_width, model_width);
    L.output_b = vector(f, blk + "attn_output.bias", model_width);
    if (width != model_width) {
      L.residual = matrix(f, blk + "residual_proj.weight", width, model_width);
      L.residual_b = vector(f, blk + "residual_proj.bias", model_width);
    }
    L.ffn_norm_w = vector(f, blk + "ffn_norm.weight", model_width);
    L.ffn_norm_b = vector(f, blk + "ffn_norm.bias", model_width);
    L.ffn_up = matrix(f, blk + "ffn_up.weight", model_width, L.ffn_width);
    L.ffn_up_b = vector(f, blk + "ffn_up.bias", L.ffn_width);
    L.ffn_down = matrix(f, blk + "ffn_down.weight", L.ffn_width, model_width);
    L.ffn_down_b = vector(f, blk + "ffn_down.bias", model_width);
    m->layers_.push_back(L);
    width = model_width;
  }
  m->pool = matrix(f, "pool_proj.weight", c.model_width, c.output_width);
  m->pool_b = vector(f, "pool_proj.bias", c.output_width);
  // The matmul weights in the layout the CPU kernels run fastest on (F32 row panels on AVX2 and
  // AVX-512: kernels/cpu/f32_panels.h), in memory once; the embedding table stays rows (it is
  // read by row).
  std::vector<kernels::MatrixView*> views{&m->pool};
  for (UseLiteLayer& L : m->layers_) {
    for (kernels::MatrixView* v : {&L.qkv, &L.output, &L.ffn_up, &L.ffn_down}) views.push_back(v);
    if (L.residual.data) views.push_back(&L.residual);
  }
  m->prepared_ = prepare_mapped_weights(kernels::BackendKind::kCpu, views);
  return m;
}

std::string UseLiteModel::source() const { return std::string(file_->find_string("general.source").value_or(file_->path())); }

}  // namespace sluice::inference
