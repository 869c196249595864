// BF16 weights in row panels: the CPU layout DType::kBF16x16, made at load from a kF32 matrix
// whose rows are a multiple of 16 and whose columns are even, on CPUs with AVX-512 BF16 when
// asked for (SLUICE_F32_LAYOUT=bf16, cpu_weights.h). Opt-in because it changes results: each
// weight and each activation is rounded to bfloat16 (8 bits of mantissa, about 3 significant
// digits), for twice the products per instruction of F32 (vdpbf16ps).
//
// Panel p holds rows 16p..16p+15, column pair after column pair: element (row 16p + i, column
// 2q + k) is the uint16 at offset ((p * cols/2 + q) * 16 + i) * 2 + k. One 64-byte load is then
// two columns of 16 rows, the operand of one vdpbf16ps against a broadcast pair of a token's
// activations. Every (row, token) result is the scalar twin's (matmul_kernels.h,
// scalar_bf16x16_rows): the instruction's arithmetic, so the kernel agrees with it bit for bit
// whatever tile, batch or thread computes it.
//
// Every function here is compiled for the baseline ISA and none is inline: the AVX-512 kernel
// files include this header, and an inline function compiled there could be the copy the
// linker keeps for everyone.
#pragma once

#include <cstdint>

#include "kernels/backend.h"

namespace sluice::kernels {

inline constexpr int kBF16PanelRows = 16;

// Whether this CPU has AVX-512 BF16 (vdpbf16ps), whatever SLUICE_CPU_ISA says.
bool cpu_has_avx512_bf16();
// Whether this CPU runs vdpbf16ps and default_isa() is AVX-512: the BF16 kernel may run.
bool bf16_dot_supported();
// Whether w can be laid out in BF16 panels: kF32, rows a multiple of 16, columns even.
bool can_panel_bf16(const MatrixView& w);
int64_t bf16_panel_bytes(const MatrixView& w);
// Writes w's weights, rounded to bfloat16, as panels to `out` (bf16_panel_bytes(w) bytes,
// 64-byte aligned) and returns the view.
MatrixView panel_bf16(const MatrixView& w, void* out);
// Row `row` of a kBF16x16 matrix, as floats (the rounded weights, exactly).
void bf16_panel_row(const MatrixView& w, int64_t row, float* out);

// float -> bfloat16 as vcvtne2ps2bf16 rounds: to nearest, ties to even; a denormal input is
// zero (sign kept); NaN stays a quiet NaN.
uint16_t bf16_round(float f);
float bf16_to_f32(uint16_t h);
// v, or zero of v's sign when v is denormal (vdpbf16ps flushes its sums so).
float flush_denormal(float v);

}  // namespace sluice::kernels
