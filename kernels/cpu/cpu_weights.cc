#include "kernels/cpu/cpu_weights.h"

#include <cstdlib>
#include <string_view>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/quant_x8.h"
#include "kernels/cpu/weight_memory.h"

namespace sluice::kernels {
namespace {

class CpuPreparedWeights final : public PreparedWeights {
 public:
  CpuPreparedWeights(WeightMemory memory, size_t matrices) : memory_(std::move(memory)), matrices_(matrices) {}
  size_t matrices() const override { return matrices_; }
  size_t bytes() const override { return memory_.bytes(); }

 private:
  WeightMemory memory_;
  size_t matrices_;
};

bool interleave_wanted() {
  const char* env = std::getenv("SLUICE_QUANT_LAYOUT");
  if (env && std::string_view(env) == "rows") return false;
  return x8_pays(default_isa());
}

}  // namespace

std::unique_ptr<PreparedWeights> prepare_cpu_matmul_weights(MatrixView* const* views, size_t count) {
  if (!interleave_wanted()) return nullptr;
  std::vector<MatrixView*> todo;
  for (size_t i = 0; i < count; ++i)
    if (can_interleave_x8(*views[i])) todo.push_back(views[i]);
  size_t total = 0;
  for (const MatrixView* v : todo) total += size_t(x8_bytes(*v));
  if (total == 0) return nullptr;
  WeightMemory memory(total);
  size_t at = 0;
  for (MatrixView* v : todo) {
    const size_t bytes = size_t(x8_bytes(*v));
    *v = interleave_x8(*v, memory.data() + at);
    at += bytes;
  }
  return std::make_unique<CpuPreparedWeights>(std::move(memory), todo.size());
}

}  // namespace sluice::kernels
