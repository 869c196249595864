// text_attention: one head of bidirectional softmax attention over one text's tokens, the
// encoder's only computation that looks across tokens. Reads the head's q, k and v from the
// packed q|k|v rows of the text (row t at qkv + t * stride: q at 0, k at `width`, v at
// 2 * width, the head's features at head * head_dim), writes its head_dim outputs per token
// into out (row t at out + t * width + head * head_dim).
//
// With `bias` (3 * width floats, laid out as a row), the head's q, k and v columns of each row
// first get their bias added in place and its q are then multiplied by query_scale (bit for bit
// what a scalar loop gives); without, the rows are used as they are (already biased and
// scaled). Done here, per head, because the
// separate pass over every row cost more in memory traffic and calls than the additions.
//
// Both products run in register tiles, 6 queries at a time: the scores as 6 queries x 16 keys
// over k transposed into `scratch` (head_dim x len rounded up to 16), the outputs as 6 queries x
// 16 features over v's rows. The accumulators stay in registers for a whole sum (a loop that
// added into memory made each sum a chain of store-to-load round trips: 12% of a pass for under
// 1% of its arithmetic). Cloned per ISA (x86-64-v4, v3, baseline). exp is the exact libm one:
// parity with the reference allows reordered sums, not an approximate exponential.
// scratch: at least text_attention_scratch(len, head_dim) floats.
#pragma once

#include <cstdint>

namespace sluice::inference {

int64_t text_attention_scratch(int64_t len, int head_dim);

void text_attention(float* qkv, int64_t len, int64_t stride, int width, int head, int head_dim, const float* bias,
                    float query_scale, float* out, float* scratch);

}  // namespace sluice::inference
