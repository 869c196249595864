// Row-wise transformer operations on float rows: RMSNorm, rotary embedding, SwiGLU, softmax.
// Vectorised loops (omp simd, per-ISA clones); pure functions, thread-safe.
#pragma once

#include <cstdint>

namespace sluice::kernels {

// out = x / sqrt(mean(x^2) + eps) * weight, for one row of dim (out may equal x). The sum of
// squares accumulates in double, as ggml does.
void rms_norm_row(const float* x, const float* weight, int64_t dim, float eps, float* out);

// Rotates adjacent pairs (x[2i], x[2i+1]) of the first n_rot features of each head by
// pos * freq_base^(-2i/n_rot), as llama.cpp's "normal" rope and llama2.c do.
void rope_row(float* x, int n_heads, int head_dim, int n_rot, int64_t pos, float freq_base);

// gate = silu(gate) * up
void swiglu_row(float* gate, const float* up, int64_t count);

// In-place softmax of n values (max-subtracted).
void softmax_row(float* x, int64_t n);

// The vectorisable e^x behind softmax and SwiGLU (within 2 ulp of std::exp), for tests.
float exp_for_tests(float x);

}  // namespace sluice::kernels
