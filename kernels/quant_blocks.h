// GGUF/GGML block layouts for the weight types Sluice runs, spelled out once, plus the
// conversions between them and float. Pure functions; thread-safe.
//
// Q8_0: 32 weights per block, one fp16 scale d, 32 int8 q: w = d * q.
// Q4_0: 32 weights per block, one fp16 scale d, 16 bytes: byte j holds weight j in its low
//       nibble and weight j+16 in its high nibble, each as (nibble - 8): w = d * (nibble - 8).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/backend.h"

namespace sluice::kernels {

inline constexpr int kQuantBlock = 32;

struct BlockQ8_0 {
  uint16_t d;  // fp16
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8_0) == 34);

struct BlockQ4_0 {
  uint16_t d;  // fp16
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_0) == 18);

// IEEE half <-> float, exact for every half value (denormals, inf, nan included).
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);  // round to nearest even

// Elements per block and bytes per block of a type (F32/F16: a block is one element).
int64_t dtype_block_elems(DType t);
int64_t dtype_block_bytes(DType t);
const char* dtype_name(DType t);
// Bytes of one row of `cols` elements; cols must be a multiple of the block size.
inline int64_t dtype_row_bytes(DType t, int64_t cols) {
  return cols / dtype_block_elems(t) * dtype_block_bytes(t);
}

// Row conversions; n must be a multiple of the type's block size. Not for kQ8_0x8/kQ4_0x8,
// whose rows are interleaved (throws std::invalid_argument; quant_x8.h converts them).
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
void quantize_row(DType t, const float* src, void* dst, int64_t n);  // reference quantizers

}  // namespace sluice::kernels
