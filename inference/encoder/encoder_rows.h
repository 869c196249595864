// The encoder's per-token row work between its matrix products (sentence_encoder.h): layer
// norm, biases, residual sums, ReLU and per-text column means (the q|k|v bias and query scale
// are text_attention's), each over rows of `n` floats.
//
// Cloned per ISA (x86-64-v4, v3, baseline) as text_attention is: the rest of the encoder is
// compiled for the baseline, where these loops ran four floats at a time, and were a
// sixth of a batch's pass beside the products. Elementwise results are bit for bit those of a
// scalar loop (each element's operations in the same order); only layer_norm's two sums run
// in vector lanes, which reorders their additions far inside the parity bound.
#pragma once

#include <cstdint>

namespace sluice::inference::rows {

// out = LayerNorm(x) as the graph computes it: (scale * rsqrt(var + eps)) * (x - mean) + bias.
void layer_norm(const float* x, const float* scale, const float* bias, int n, float eps, float* out);
// x = (f + b) + x: a product's output with its bias, added to the residual stream.
void add_biased(float* x, const float* f, const float* b, int n);
// o = (o + ob) + (r + rb): two biased products summed (attention output and projected residual).
void sum_biased(float* o, const float* ob, const float* r, const float* rb, int n);
// r = max(0, r + b).
void relu_biased(float* r, const float* b, int n);
// x = x + (x + t): the embedding added twice with the positional signal, in the graph's order.
void add_twice_with(float* x, const float* t, int n);
// out = the mean over `count` rows (row k at rows + k * stride) of their first n floats, summed
// row by row in order; with b, of max(0, row + b) (relu_biased's values, never written back).
// n at most 64: the sums stay in registers. count 0 gives zeros. out may be one of the rows
// (it is written after all are read).
void column_mean(const float* rows, int64_t count, int64_t stride, const float* b, int n, float* out);

}  // namespace sluice::inference::rows
