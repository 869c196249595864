#include "kernels/backend_factory.h"

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_weights.h"

namespace sluice::kernels {

const char* backend_kind_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCpu: return "cpu";
  }
  return "?";
}

std::unique_ptr<KernelBackend> make_backend(const BackendOptions& options) {
  switch (options.kind) {
    case BackendKind::kCpu: return std::make_unique<CpuBackend>(options.threads);
  }
  return nullptr;
}

std::unique_ptr<PreparedWeights> prepare_matmul_weights(BackendKind kind, MatrixView* const* views, size_t count) {
  switch (kind) {
    case BackendKind::kCpu: return prepare_cpu_matmul_weights(views, count);
  }
  return nullptr;
}

}  // namespace sluice::kernels
