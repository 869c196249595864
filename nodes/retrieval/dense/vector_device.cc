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
  if (device == "cuda" || device == "cuda-f16") {
    if (std::string why = cuda_missing(); !why.empty()) throw std::invalid_argument(device + " is not usable here: " + why);
    return device;
  }
  throw std::invalid_argument("device '" + device + "' is not cpu, cuda, cuda-f16 or auto");
}

bool is_cuda_vector_device(const std::string& resolved) { return resolved == "cuda" || resolved == "cuda-f16"; }

std::unique_ptr<VectorIndex> make_cuda_exact_index(std::size_t dimension, const CoalescerOptions& coalescing,
                                                   bool half_vectors) {
#if SLUICE_HAVE_CUDA_INDEX
  return std::make_unique<CudaExactIndex>(dimension, coalescing, half_vectors);
#else
  (void)dimension;
  (void)coalescing;
  (void)half_vectors;
  throw std::invalid_argument("cuda is not usable here: " + cuda_missing());
#endif
}

}  // namespace sluice::retrieval
