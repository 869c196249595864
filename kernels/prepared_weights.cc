// The by-kind half of backend_factory.h that a model loader needs without constructing a
// backend (names and weight layouts); kept apart from make_backend so that a reader linked
// without the kernels themselves (the GGUF fuzzer) still gets the layout code.
#include "kernels/backend_factory.h"
#include "kernels/cpu/cpu_weights.h"
#ifdef SLUICE_HAVE_CUDA_BACKEND
#include "kernels/cuda/cuda_weights.h"
#include "kernels/cuda/device_memory.h"
#endif

#include <stdexcept>

namespace sluice::kernels {

const char* backend_kind_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCpu: return "cpu";
    case BackendKind::kCuda: return "cuda";
  }
  return "?";
}

bool parse_backend_kind(std::string_view name, BackendKind* kind) {
  for (const BackendKind k : {BackendKind::kCpu, BackendKind::kCuda}) {
    if (name == backend_kind_name(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

bool backend_kind_available(BackendKind kind, std::string* why) {
  switch (kind) {
    case BackendKind::kCpu: return true;
    case BackendKind::kCuda:
#ifdef SLUICE_HAVE_CUDA_BACKEND
      if (cuda_device_count() > 0) return true;
      if (why) *why = "no usable CUDA device (" + cuda_unavailable_reason() + ")";
#else
      if (why) *why = "this build has no CUDA backend (nvcc was not found at configure time, or -DSLUICE_CUDA=OFF)";
#endif
      return false;
  }
  return false;
}

bool backend_kind_uses_host_memory(BackendKind kind) { return kind == BackendKind::kCpu; }

std::unique_ptr<PreparedWeights> prepare_matmul_weights(BackendKind kind, MatrixView* const* views, size_t count) {
  switch (kind) {
    case BackendKind::kCpu: return prepare_cpu_matmul_weights(views, count);
    case BackendKind::kCuda: return nullptr;  // place_weights moves them, in the file's layout
  }
  return nullptr;
}

std::unique_ptr<PreparedWeights> place_weights(BackendKind kind, MatrixView* const* views, size_t count,
                                               const WeightVector* vectors, size_t vector_count) {
  if (backend_kind_uses_host_memory(kind)) return nullptr;
  std::string why;
  if (!backend_kind_available(kind, &why))
    throw std::runtime_error(std::string("cannot place weights for the '") + backend_kind_name(kind) + "' backend: " + why);
#ifdef SLUICE_HAVE_CUDA_BACKEND
  return upload_cuda_weights(views, count, vectors, vector_count);
#else
  return nullptr;
#endif
}

}  // namespace sluice::kernels
