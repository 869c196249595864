#include "nodes/retrieval/dense/vector_device.h"

#include <stdexcept>

#if SLUICE_HAVE_CUDA_INDEX
#include "kernels/cuda/device_memory.h"
#include "nodes/retrieval/dense/cuda_exact_index.h"
#endif

namespace sluice::retrieval {
namespace {

// Empty when the CUDA index can run here, else why not.
std::string cuda_missing() {
#if SLUICE_HAVE_CUDA_INDEX
  if (kernels::cuda_device_count() > 0) return "";
  return "no CUDA device: " + kernels::cuda_unavailable_reason();
#else
  return "this build has no CUDA (nvcc was not found when it was configured)";
#endif
}

}  // namespace

std::string resolve_vector_device(const std::string& device) {
  if (device == "cpu") return "cpu";
  if (device == "auto") return cuda_missing().empty() ? "cuda" : "cpu";
  if (device == "cuda") {
    if (std::string why = cuda_missing(); !why.empty()) throw std::invalid_argument("cuda is not usable here: " + why);
    return "cuda";
  }
  throw std::invalid_argument("device '" + device + "' is not cpu, cuda or auto");
}

std::unique_ptr<VectorIndex> make_cuda_exact_index(std::size_t dimension, const CoalescerOptions& coalescing) {
#if SLUICE_HAVE_CUDA_INDEX
  return std::make_unique<CudaExactIndex>(dimension, coalescing);
#else
  (void)dimension;
  (void)coalescing;
  throw std::invalid_argument("cuda is not usable here: " + cuda_missing());
#endif
}

}  // namespace sluice::retrieval
