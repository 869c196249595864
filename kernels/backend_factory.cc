#include "kernels/backend_factory.h"

#include <stdexcept>

#include "kernels/cpu/cpu_backend.h"
#ifdef SLUICE_HAVE_CUDA_BACKEND
#include "kernels/cuda/cuda_backend.h"
#endif

namespace sluice::kernels {

std::unique_ptr<KernelBackend> make_backend(const BackendOptions& options) {
  std::string why;
  if (!backend_kind_available(options.kind, &why))
    throw std::runtime_error(std::string("kernel backend '") + backend_kind_name(options.kind) + "': " + why);
  switch (options.kind) {
    case BackendKind::kCpu: return std::make_unique<CpuBackend>(options.threads);
    case BackendKind::kCuda:
#ifdef SLUICE_HAVE_CUDA_BACKEND
      return std::make_unique<CudaBackend>();
#else
      break;
#endif
  }
  return nullptr;
}

}  // namespace sluice::kernels
