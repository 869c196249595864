// Quantised weights with rows interleaved in groups of 8: the CPU layouts DType::kQ8_0x8 and
// DType::kQ4_0x8, made at load from a Q8_0 or Q4_0 matrix with a multiple of 8 rows.
//
// Rows 8g..8g+7 and columns 32j..32j+31 form one block: the 8 rows' fp16 scales, then their
// quants in 4-byte slices, qs[32m + 4i + e] = byte 4m+e of row 8g+i's block:
//   Q8_0x8 (272 bytes, m = 0..7): the int8 weight of column 32j + 4m + e;
//   Q4_0x8 (144 bytes, m = 0..3): as in Q4_0, the low nibble column 32j + 4m + e and the high
//   nibble column 32j + 16 + 4m + e, each weight (nibble - 8).
// A group's blocks follow each other in column order, and groups follow each other. The bytes
// are the source matrix's, reordered (8 x 34 and 8 x 18 per block of a group).
//
// Why: one 32-byte load is then one slice of 4 columns of all 8 rows (two for Q4_0, low and high
// nibbles), so the AVX2 kernels multiply 8 rows by a broadcast of 4 of a token's activations
// per vpmaddubsw and keep each row in its own lane: a block's integer dot product ends in one
// lane per row with no horizontal sums, and one float conversion and FMA serve 8 rows
// (matmul_x8_avx2.cc). Q4_0 nibbles go into vpmaddubsw unsigned as they are (no sign trick);
// the -8 comes back as -8 x the block's activation sum, which the activation quantiser already
// keeps. On Zen 3 batched Q8_0 products ran at 1.8x the row-major tiles. AVX-512 VNNI runs the
// same layout two groups to a zmm (matmul_x8_avx512.cc): on Zen 5 prompts 1.3-1.7x and decoding
// 1.15-2.25x its row-major VNNI tiles, so AVX2 and AVX-512 both interleave (x8_pays).
#pragma once

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_features.h"

namespace sluice::kernels {

inline constexpr int kX8Rows = 8;

struct BlockQ8_0x8 {
  uint16_t d[kX8Rows];  // fp16 scale of each row's block
  int8_t qs[kX8Rows * 32];
};
static_assert(sizeof(BlockQ8_0x8) == 272);

struct BlockQ4_0x8 {
  uint16_t d[kX8Rows];
  uint8_t qs[kX8Rows * 16];
};
static_assert(sizeof(BlockQ4_0x8) == 144);

// Whether matmuls on `isa` run faster interleaved (AVX2 and AVX-512; not the scalar path).
bool x8_pays(Isa isa);
// Whether w can be interleaved: Q8_0 or Q4_0 with a multiple of 8 rows.
bool can_interleave_x8(const MatrixView& w);
// kQ8_0x8 for kQ8_0, kQ4_0x8 for kQ4_0.
DType x8_type(DType row_major);
bool is_x8(DType t);

// Bytes the interleaved copy of w takes (the same as w's).
int64_t x8_bytes(const MatrixView& w);
// Writes w (requires can_interleave_x8) interleaved into out, x8_bytes(w) bytes with no
// alignment needed, and returns the interleaved view over out. Throws std::invalid_argument for
// a matrix that cannot be interleaved.
MatrixView interleave_x8(const MatrixView& w, void* out);

// Row `row` of an interleaved matrix as float (embedding lookups, tests).
void dequantize_row_x8(const MatrixView& w, int64_t row, float* out);

}  // namespace sluice::kernels
