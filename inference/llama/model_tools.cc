#include "inference/llama/model_tools.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <vector>

#include "inference/gguf/gguf_file.h"
#include "inference/gguf/gguf_writer.h"
#include "inference/model_error.h"
#include "kernels/quant_blocks.h"

namespace sluice::inference {
namespace {

// ggml's general.file_type values (llama_ftype) for all-F32/F16/Q4_0/Q8_0 files.
uint32_t file_type_of(kernels::DType t) {
  switch (t) {
    case kernels::DType::kF32: return 0;
    case kernels::DType::kF16: return 1;
    case kernels::DType::kQ4_0: return 2;
    case kernels::DType::kQ8_0: return 7;
    case kernels::DType::kQ8_0x8:
    case kernels::DType::kQ4_0x8:
    case kernels::DType::kF32x16:
    case kernels::DType::kBF16x16: break;  // CPU layouts, never written to a file
  }
  return 0;
}

std::vector<uint8_t> convert_rows(const float* src, int64_t rows, int64_t cols, kernels::DType type) {
  std::vector<uint8_t> out(size_t(rows * kernels::dtype_row_bytes(type, cols)));
  const int64_t rb = kernels::dtype_row_bytes(type, cols);
  for (int64_t r = 0; r < rows; ++r) kernels::quantize_row(type, src + r * cols, out.data() + r * rb, cols);
  return out;
}

// xorshift64*: fast, seedable, plenty for random weights.
struct Rng {
  uint64_t s;
  float next() {  // uniform in [-1, 1)
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return float((s * 0x2545F4914F6CDD1DULL) >> 40) / float(1 << 23) - 1.0f;
  }
};

}  // namespace

kernels::DType parse_weight_type(std::string_view name) {
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (n == "f32") return kernels::DType::kF32;
  if (n == "f16") return kernels::DType::kF16;
  if (n == "q8_0") return kernels::DType::kQ8_0;
  if (n == "q4_0") return kernels::DType::kQ4_0;
  throw ModelError("weight type '" + std::string(name) + "': unknown (expected f32, f16, q8_0 or q4_0)");
}

void quantize_model(const std::string& in_path, const std::string& out_path, kernels::DType type) {
  if (type != kernels::DType::kQ8_0 && type != kernels::DType::kQ4_0)
    throw ModelError(std::string("quantize: target type must be q8_0 or q4_0, not ") + kernels::dtype_name(type));
  const auto in = GgufFile::open(in_path);
  if (in->find_string("general.architecture").value_or("") != "llama")
    in->fail("metadata 'general.architecture'", "only llama models can be quantised");
  GgufWriter w;
  for (const auto& [key, value] : in->metadata()) {
    if (key == "general.file_type" || key == "general.alignment") continue;
    w.add_value(key, value);
  }
  w.add_u32("general.file_type", file_type_of(type));
  w.add_u32("general.quantization_version", 2);
  std::vector<float> rowbuf;
  for (const auto& t : in->tensors()) {
    const bool matrix = t.dims.size() == 2 && t.dims[0] % kernels::kQuantBlock == 0;
    if (!matrix || t.type == type) {
      w.add_tensor_borrowed(t.name, t.dims, t.type, t.data, size_t(t.bytes));
      continue;
    }
    const int64_t cols = t.dims[0], rows = t.dims[1];
    rowbuf.resize(size_t(cols * rows));
    const int64_t src_rb = kernels::dtype_row_bytes(t.type, cols);
    for (int64_t r = 0; r < rows; ++r) kernels::dequantize_row(t.type, t.data + r * src_rb, rowbuf.data() + r * cols, cols);
    w.add_tensor(t.name, t.dims, type, convert_rows(rowbuf.data(), rows, cols, type));
  }
  w.write(out_path);
}

const SynthPreset& synth_preset(std::string_view name) {
  static const SynthPreset presets[] = {
      {"15m", 288, 768, 6, 6, 6, 32000, 256},
      {"110m", 768, 2048, 12, 12, 12, 32000, 1024},
  };
  for (const auto& p : presets)
    if (name == p.name) return p;
  throw ModelError("preset '" + std::string(name) + "': unknown (expected 15m or 110m)");
}

void synth_model(const SynthPreset& p, kernels::DType type, const std::string& out_path, uint64_t seed) {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_string("general.name", std::string("sluice-synth-") + p.name);
  w.add_u32("general.file_type", file_type_of(type));
  w.add_u32("llama.context_length", uint32_t(p.context_length));
  w.add_u32("llama.embedding_length", uint32_t(p.dim));
  w.add_u32("llama.feed_forward_length", uint32_t(p.hidden_dim));
  w.add_u32("llama.block_count", uint32_t(p.n_layers));
  w.add_u32("llama.attention.head_count", uint32_t(p.n_heads));
  w.add_u32("llama.attention.head_count_kv", uint32_t(p.n_kv_heads));
  w.add_u32("llama.rope.dimension_count", uint32_t(p.dim / p.n_heads));
  w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  // Placeholder vocabulary: <unk> <s> </s>, the 256 byte pieces, then numbered pieces.
  std::vector<std::string> pieces = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  char buf[16];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    pieces.emplace_back(buf);
    types.push_back(6);
  }
  for (int i = int(pieces.size()); i < p.vocab_size; ++i) {
    pieces.push_back("\xE2\x96\x81t" + std::to_string(i));
    types.push_back(1);
  }
  std::vector<float> scores(pieces.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = -float(i);
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", pieces);
  w.add_f32_array("tokenizer.ggml.scores", scores);
  w.add_i32_array("tokenizer.ggml.token_type", types);
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  w.add_u32("tokenizer.ggml.unknown_token_id", 0);

  Rng rng{seed * 0x9E3779B97F4A7C15ULL + 1};
  auto matrix = [&](const std::string& name, int64_t cols, int64_t rows) {
    std::vector<float> v(size_t(cols * rows));
    for (auto& x : v) x = 0.05f * rng.next();
    w.add_tensor(name, {cols, rows}, type, convert_rows(v.data(), rows, cols, type));
  };
  auto norm = [&](const std::string& name, int64_t dim) {
    std::vector<float> v(size_t(dim), 1.0f);
    std::vector<uint8_t> bytes(size_t(dim) * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    w.add_tensor(name, {dim}, kernels::DType::kF32, std::move(bytes));
  };
  const int64_t kv_dim = int64_t(p.dim) / p.n_heads * p.n_kv_heads;
  matrix("token_embd.weight", p.dim, p.vocab_size);
  norm("output_norm.weight", p.dim);
  matrix("output.weight", p.dim, p.vocab_size);
  for (int l = 0; l < p.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    norm(b + "attn_norm.weight", p.dim);
    matrix(b + "attn_q.weight", p.dim, p.dim);
    matrix(b + "attn_k.weight", p.dim, kv_dim);
    matrix(b + "attn_v.weight", p.dim, kv_dim);
    matrix(b + "attn_output.weight", p.dim, p.dim);
    norm(b + "ffn_norm.weight", p.dim);
    matrix(b + "ffn_gate.weight", p.dim, p.hidden_dim);
    matrix(b + "ffn_up.weight", p.dim, p.hidden_dim);
    matrix(b + "ffn_down.weight", p.hidden_dim, p.dim);
  }
  w.write(out_path);
}

}  // namespace sluice::inference
