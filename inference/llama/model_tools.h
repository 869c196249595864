// Model file tools behind `sluice quantize` and `sluice model synth`.
//
// quantize_model: rewrites a llama GGUF with every 2-D weight matrix (embedding and output
// included: llama.cpp's "pure" mode) in Q8_0 or Q4_0; 1-D tensors (norms) stay F32; metadata is
// copied and general.file_type updated. Input matrices of any supported type are dequantised
// first, so a Q8_0 file can be re-quantised to Q4_0.
//
// synth_model: writes a random-weight Llama of one of the anchors' shapes (speed tests only:
// its text is meaningless) with a 32000-piece placeholder vocabulary and separate output matrix.
//
// Both throw ModelError with the file and problem; both are pure functions of their inputs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/backend.h"

namespace sluice::inference {

// "f32" | "f16" | "q8_0" | "q4_0" (case-insensitive). Throws ModelError for anything else.
kernels::DType parse_weight_type(std::string_view name);

void quantize_model(const std::string& in_path, const std::string& out_path, kernels::DType type);

struct SynthPreset {
  const char* name;
  int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, context_length;
};
// "15m": dim 288, hidden 768, 6 layers, 6 heads, vocab 32000, context 256;
// "110m": dim 768, hidden 2048, 12 layers, 12 heads, vocab 32000, context 1024.
const SynthPreset& synth_preset(std::string_view name);  // throws ModelError when unknown

void synth_model(const SynthPreset& preset, kernels::DType type, const std::string& out_path,
                 uint64_t seed = 1);

}  // namespace sluice::inference
