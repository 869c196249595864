#include "kernels/cpu/cpu_weights.h"

#include <cstdlib>
#include <string_view>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/f32_panels.h"
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

bool layout_kept(const char* variable) {
  const char* env = std::getenv(variable);
  return env && std::string_view(env) == "rows";
}

// What a view becomes here, if anything: its new type and size.
struct Rewrite {
  MatrixView* view;
  bool panels;  // F32 row panels; else Q8_0/Q4_0 interleaved by 8
  size_t bytes;
};

}  // namespace

std::unique_ptr<PreparedWeights> prepare_cpu_matmul_weights(MatrixView* const* views, size_t count) {
  const bool interleave = !layout_kept("SLUICE_QUANT_LAYOUT") && x8_pays(default_isa());
  const bool panels = !layout_kept("SLUICE_F32_LAYOUT") && f32_panels_pay(default_isa());
  std::vector<Rewrite> rewrites;
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    size_t bytes = 0;
    const bool panel = panels && can_panel_f32(*views[i]);
    if (panel) {
      bytes = size_t(f32_panel_bytes(*views[i]));
    } else if (interleave && can_interleave_x8(*views[i])) {
      bytes = size_t(x8_bytes(*views[i]));
    } else {
      continue;
    }
    bytes = (bytes + 63) / 64 * 64;  // each copy 64-byte aligned: the panel kernels load aligned
    rewrites.push_back({views[i], panel, bytes});
    total += bytes;
  }
  if (total == 0) return nullptr;
  WeightMemory memory(total);
  size_t at = 0;
  for (const Rewrite& r : rewrites) {
    *r.view = r.panels ? panel_f32(*r.view, memory.data() + at) : interleave_x8(*r.view, memory.data() + at);
    at += r.bytes;
  }
  return std::make_unique<CpuPreparedWeights>(std::move(memory), rewrites.size());
}

}  // namespace sluice::kernels
