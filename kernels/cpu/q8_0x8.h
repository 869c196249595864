// Q8_0x8: Q8_0 weights with rows interleaved in groups of 8, the CPU layout of DType::kQ8_0x8.
//
// Rows 8g..8g+7 and columns 32j..32j+31 form one BlockQ8_0x8: the 8 rows' fp16 scales, then
// their quants in 4-byte slices, qs[32k + 4i + e] = row 8g+i, column 32j + 4k + e. A group's
// blocks follow each other in column order, and groups follow each other. The bytes are the
// Q8_0 matrix's (8 x 34 = 272 per block of a group), reordered.
//
// Why: one 32-byte load is then slice k of all 8 rows, so the AVX2 kernel multiplies 8 rows
// by 4 of a token's activations per vpmaddubsw and keeps each row in its own lane: a block's
// integer dot product ends in one lane per row with no horizontal sums, and one float
// conversion and one FMA serve 8 rows (matmul_q8_0x8_avx2.cc). On Zen 3 that runs batched
// products (prompt processing, continuous batching) at 1.8x the row-major Q8_0 tiles.
// AVX-512 VNNI has its own fast row-major kernel, so only AVX2 interleaves (q8_0x8_pays).
#pragma once

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_features.h"

namespace sluice::kernels {

inline constexpr int kQ8x8Rows = 8;

struct BlockQ8_0x8 {
  uint16_t d[kQ8x8Rows];  // fp16 scale of each row's block
  int8_t qs[kQ8x8Rows * 32];
};
static_assert(sizeof(BlockQ8_0x8) == 272);

// Whether matmuls on `isa` run faster on kQ8_0x8 than on kQ8_0 (true for AVX2 only).
bool q8_0x8_pays(Isa isa);
// Whether w can be interleaved: kQ8_0 with a multiple of 8 rows.
bool can_interleave_q8_0x8(const MatrixView& w);

// Bytes the interleaved copy of w takes (the same as w's).
int64_t q8_0x8_bytes(const MatrixView& w);
// Writes w (requires can_interleave_q8_0x8) interleaved into out, q8_0x8_bytes(w) bytes with
// no alignment needed, and returns the kQ8_0x8 view over out. Throws std::invalid_argument for
// a matrix that cannot be interleaved.
MatrixView interleave_q8_0x8(const MatrixView& w, void* out);

// Row `row` of a kQ8_0x8 matrix as float (embedding lookups, tests).
void dequantize_row_q8_0x8(const MatrixView& w, int64_t row, float* out);

}  // namespace sluice::kernels
