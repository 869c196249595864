// F32 weights in row panels: the CPU layout DType::kF32x16, made at load from a kF32 matrix
// whose rows are a multiple of 16.
//
// Panel p holds rows 16p..16p+15, column after column: element (row 16p + i, column c) is at
// float offset (p * cols + c) * 16 + i. One 64-byte load is then one column of 16 rows, so a
// matmul is a sum of outer products: per column, 16 rows x a broadcast of each token's
// activation, accumulated in one vector lane per (row, token) pair, with no horizontal sums at
// the end (the row-major F32 tiles reduce every accumulator across its 16 lanes, which at the
// encoder's 512 columns cost about as much as the products). Every (row, token) result is the
// fused multiply-add chain over the columns in order from 0, so the scalar twin, the AVX2 and the
// AVX-512 kernels agree bit for bit whatever tile or batch computes it.
#pragma once

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_features.h"

namespace sluice::kernels {

inline constexpr int kF32PanelRows = 16;

// Whether matmuls on `isa` run faster on panels (true where there are SIMD kernels for them).
bool f32_panels_pay(Isa isa);
// Whether w can be laid out in panels: kF32 with a multiple of 16 rows.
bool can_panel_f32(const MatrixView& w);
int64_t f32_panel_bytes(const MatrixView& w);
// Writes w's panels to `out` (f32_panel_bytes(w) bytes, 64-byte aligned) and returns the view.
MatrixView panel_f32(const MatrixView& w, void* out);
// Row `row` of a kF32x16 matrix, as floats.
void f32_panel_row(const MatrixView& w, int64_t row, float* out);

}  // namespace sluice::kernels
