// Where a knowledge base's vector index lives: "cpu", or "cuda" / "cuda-f16" (CudaExactIndex,
// cuda_exact_index.h, with the device's vectors in F32 or F16), chosen by the `dense` node's
// `device`.
#pragma once

#include <memory>
#include <string>

#include "nodes/retrieval/dense/search_coalescer.h"
#include "nodes/retrieval/dense/vector_index.h"

namespace sluice::retrieval {

// "cpu" -> "cpu"; "cuda" and "cuda-f16" -> themselves when this build has the CUDA index and the
// machine a device, else std::invalid_argument saying which is missing; "auto" -> "cuda" where
// it is available, else "cpu". Any other value: std::invalid_argument.
std::string resolve_vector_device(const std::string& device);
// Whether a resolved device is a GPU one.
bool is_cuda_vector_device(const std::string& resolved);

// An empty exact index on the GPU (resolve_vector_device must have said cuda or cuda-f16), its
// device vectors in F16 when half_vectors.
std::unique_ptr<VectorIndex> make_cuda_exact_index(std::size_t dimension, const CoalescerOptions& coalescing,
                                                   bool half_vectors = false);

}  // namespace sluice::retrieval
