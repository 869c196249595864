// The by-kind half of backend_factory.h that a model loader needs without constructing a
// backend (names and weight layouts); kept apart from make_backend so that a reader linked
// without the kernels themselves (the GGUF fuzzer) still gets the layout code.
#include "kernels/backend_factory.h"
#include "kernels/cpu/cpu_weights.h"

namespace sluice::kernels {

const char* backend_kind_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCpu: return "cpu";
  }
  return "?";
}

std::unique_ptr<PreparedWeights> prepare_matmul_weights(BackendKind kind, MatrixView* const* views, size_t count) {
  switch (kind) {
    case BackendKind::kCpu: return prepare_cpu_matmul_weights(views, count);
  }
  return nullptr;
}

}  // namespace sluice::kernels
