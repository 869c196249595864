// A model's weights in device memory (kernels/backend_factory.h's place_weights for CUDA):
// every matrix and float vector copied once, in the file's layout, on the calling thread's
// current device; views and vector pointers are repointed at the copies. Views sharing one
// host address (a tied output matrix) share one copy. Throws std::runtime_error when device
// memory runs out (naming the bytes asked for) and std::invalid_argument for a CPU-only layout.
#pragma once

#include <cstddef>
#include <memory>

#include "kernels/backend_factory.h"

namespace sluice::kernels {

std::unique_ptr<PreparedWeights> upload_cuda_weights(MatrixView* const* views, size_t count,
                                                     const WeightVector* vectors, size_t vector_count);

}  // namespace sluice::kernels
