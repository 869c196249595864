#include "kernels/backend_factory.h"

#include "kernels/cpu/cpu_backend.h"

namespace sluice::kernels {

std::unique_ptr<KernelBackend> make_backend(const BackendOptions& options) {
  switch (options.kind) {
    case BackendKind::kCpu: return std::make_unique<CpuBackend>(options.threads);
  }
  return nullptr;
}

}  // namespace sluice::kernels
