// Internal: the per-ISA row-range kernels behind MatmulRunner. Each computes y[t*rows + r] for
// rows [r0, r1) and all n tokens. Not part of the public interface.
#pragma once

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cpu/matmul.h"

namespace sluice::kernels::detail {

using RowsKernel = void (*)(const MatrixView& w, const float* x, const Q8Activations& xq,
                            int64_t n, int64_t r0, int64_t r1, float* y);

struct IsaKernels {
  RowsKernel f32, f16, q8_0, q4_0;
  RowsKernel q8_0x8, q4_0x8;  // rows in multiples of 8
  // Quantises one row of cols floats to Q8_0 (qs, d per block, -8*sum per block).
  void (*quantize_q8)(const float* x, int64_t cols, int8_t* qs, float* d, int32_t* neg8sum);
  RowsKernel f32x16;  // F32 row panels (f32_panels.h); rows in multiples of 16
  RowsKernel bf16x16;  // BF16 row panels (bf16_panels.h); rows in multiples of 16; reads xq.bf16
  // Rounds count floats to bfloat16 (bf16_round's rule).
  void (*round_bf16)(const float* x, int64_t count, uint16_t* out);
};

// The portable activation quantiser; every ISA rounds identically (nearest, ties to even).
void scalar_quantize_q8(const float* x, int64_t cols, int8_t* qs, float* d, int32_t* neg8sum);

// The AVX2 kernels for the interleaved types (matmul_x8_avx2.cc); AVX-512 CPUs run them too.
void avx2_q8_0x8_rows(const MatrixView& w, const float* x, const Q8Activations& xq, int64_t n, int64_t r0, int64_t r1,
                      float* y);
void avx2_q4_0x8_rows(const MatrixView& w, const float* x, const Q8Activations& xq, int64_t n, int64_t r0, int64_t r1,
                      float* y);

// The AVX-512 VNNI kernels for the interleaved types (matmul_x8_avx512.cc).
void avx512_q8_0x8_rows(const MatrixView& w, const float* x, const Q8Activations& xq, int64_t n, int64_t r0,
                        int64_t r1, float* y);
void avx512_q4_0x8_rows(const MatrixView& w, const float* x, const Q8Activations& xq, int64_t n, int64_t r0,
                        int64_t r1, float* y);

// The F32 row-panel kernels (matmul_panels_avx2.cc, matmul_panels_avx512.cc).
void avx2_f32x16_rows(const MatrixView& w, const float* x, const Q8Activations& xq, int64_t n, int64_t r0, int64_t r1,
                      float* y);
void avx512_f32x16_rows(const MatrixView& w, const float* x, const Q8Activations& xq, int64_t n, int64_t r0,
                        int64_t r1, float* y);

// BF16 row panels: the portable twin (matmul.cc; what CPUs without AVX-512 BF16 run, and the
// reference) and the AVX-512 BF16 kernel (matmul_panels_avx512_bf16.cc).
void scalar_bf16x16_rows(const MatrixView& w, const float* x, const Q8Activations& xq, int64_t n, int64_t r0,
                         int64_t r1, float* y);
void avx512_bf16x16_rows(const MatrixView& w, const float* x, const Q8Activations& xq, int64_t n, int64_t r0,
                         int64_t r1, float* y);
void scalar_round_bf16(const float* x, int64_t count, uint16_t* out);
void avx512_round_bf16(const float* x, int64_t count, uint16_t* out);

const IsaKernels& scalar_kernels();
const IsaKernels& avx2_kernels();
const IsaKernels& avx512_kernels();

inline RowsKernel pick(const IsaKernels& k, DType t) {
  switch (t) {
    case DType::kF32: return k.f32;
    case DType::kF16: return k.f16;
    case DType::kQ8_0: return k.q8_0;
    case DType::kQ4_0: return k.q4_0;
    case DType::kQ8_0x8: return k.q8_0x8;
    case DType::kQ4_0x8: return k.q4_0x8;
    case DType::kF32x16: return k.f32x16;
    case DType::kBF16x16: return k.bf16x16;
  }
  return nullptr;
}

}  // namespace sluice::kernels::detail
