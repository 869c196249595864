// The CPU backend's weight preparation (kernels/backend_factory.h): where the AVX2 integer
// kernels run faster on them (x8_pays), Q8_0 and Q4_0 matrices with a multiple of 8 rows are
// interleaved by 8 (quant_x8.h) into one WeightMemory region; elsewhere, or with
// SLUICE_QUANT_LAYOUT=rows, nothing changes.
#pragma once

#include <cstddef>
#include <memory>

#include "kernels/backend_factory.h"

namespace sluice::kernels {

std::unique_ptr<PreparedWeights> prepare_cpu_matmul_weights(MatrixView* const* views, size_t count);

}  // namespace sluice::kernels
