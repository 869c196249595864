// text_attention: one head of bidirectional softmax attention over one text's tokens, the
// encoder's only computation that looks across tokens. Reads the head's q (already scaled), k
// and v from the packed q|k|v rows of the text (row t at qkv + t * stride: q at 0, k at
// `width`, v at 2 * width, the head's features at head * head_dim), writes its head_dim
// outputs per token into out (row t at out + t * width + head * head_dim).
//
// Vectorised across tokens: k is transposed into `scratch` (head_dim x len) so a query's scores
// are one multiply-add per feature over contiguous memory, and the weighted sum of v runs over
// contiguous features; cloned per ISA (x86-64-v4, v3, baseline). exp is the exact libm one:
// parity with the reference allows reordered sums, not an approximate exponential.
// scratch: at least (head_dim + 1) * len floats.
#pragma once

#include <cstdint>

namespace sluice::inference {

void text_attention(const float* qkv, int64_t len, int64_t stride, int width, int head, int head_dim, float* out,
                    float* scratch);

}  // namespace sluice::inference
