// The CPU backend's weight preparation (kernels/backend_factory.h), into one WeightMemory region:
//  - where the AVX2 and AVX-512 integer kernels run faster on them (x8_pays), Q8_0 and Q4_0 matrices with a
//    multiple of 8 rows are interleaved by 8 (quant_x8.h); SLUICE_QUANT_LAYOUT=rows keeps them;
//  - where there are SIMD panel kernels (f32_panels_pay: AVX2, AVX-512), F32 matrices with a
//    multiple of 16 rows become row panels (f32_panels.h); SLUICE_F32_LAYOUT=rows keeps them;
//  - SLUICE_F32_LAYOUT=bf16 (opt-in): on CPUs with AVX-512 BF16 they become BF16 row panels
//    instead (bf16_panels.h: weights and activations rounded to bfloat16, twice the products
//    per instruction); elsewhere a warning, and F32 panels.
// Elsewhere nothing changes.
#pragma once

#include <cstddef>
#include <memory>

#include "kernels/backend_factory.h"

namespace sluice::kernels {

std::unique_ptr<PreparedWeights> prepare_cpu_matmul_weights(MatrixView* const* views, size_t count);

}  // namespace sluice::kernels
