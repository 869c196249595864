#include "kernels/cpu/cpu_weights.h"

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "kernels/cpu/bf16_panels.h"
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

bool layout_is(const char* variable, std::string_view value) {
  const char* env = std::getenv(variable);
  return env && std::string_view(env) == value;
}

// SLUICE_F32_LAYOUT=bf16: BF16 panels where the CPU has the instruction; elsewhere it says so
// once and keeps F32 panels (same results as unset, not silently different ones).
bool bf16_asked_and_supported() {
  if (!layout_is("SLUICE_F32_LAYOUT", "bf16")) return false;
  if (bf16_dot_supported()) return true;
  static const bool warned = [] {
    std::fprintf(stderr, "sluice: SLUICE_F32_LAYOUT=bf16 needs AVX-512 BF16 and the AVX-512 kernels (this process: %s "
                 "kernels, AVX-512 BF16 %s); F32 weights stay F32\n", isa_name(default_isa()),
                 cpu_has_avx512_bf16() ? "present" : "absent");
    return true;
  }();
  (void)warned;
  return false;
}

// A value of `variable` that is none of `known` (a typo such as "bf-16" would otherwise leave
// the default in force without a word): said once, with what is accepted.
void warn_unknown_value(const char* variable, std::initializer_list<std::string_view> known, const char* accepted) {
  const char* env = std::getenv(variable);
  if (!env || !*env) return;
  for (std::string_view k : known)
    if (k == env) return;
  std::fprintf(stderr, "sluice: %s='%s' is not %s: ignored\n", variable, env, accepted);
}

// Once a process, what the CPU backend runs on: an operator reading the log can tell which
// kernels and which precision serve (a machine without AVX-512 BF16, a SLUICE_CPU_ISA left set).
void log_kernels_once(bool panels, bool bf16, bool interleave) {
  static const bool logged = [&] {
    warn_unknown_value("SLUICE_CPU_ISA", {"scalar", "avx2", "avx512"}, "scalar, avx2 or avx512");
    warn_unknown_value("SLUICE_F32_LAYOUT", {"rows", "bf16"}, "rows or bf16");
    warn_unknown_value("SLUICE_QUANT_LAYOUT", {"rows"}, "rows");
    std::fprintf(stderr, "sluice: CPU kernels %s (AVX-512 BF16 %s); F32 matrices %s, Q8_0/Q4_0 %s\n",
                 isa_name(default_isa()), cpu_has_avx512_bf16() ? "available" : "absent",
                 bf16 ? "in BF16 panels (SLUICE_F32_LAYOUT=bf16)" : panels ? "in F32 panels" : "in rows",
                 interleave ? "interleaved by 8" : "in rows");
    return true;
  }();
  (void)logged;
}

enum class Layout { kF32Panels, kBF16Panels, kX8 };

// What a view becomes here, if anything: its new layout and size.
struct Rewrite {
  MatrixView* view;
  Layout layout;
  size_t bytes;
};

}  // namespace

std::unique_ptr<PreparedWeights> prepare_cpu_matmul_weights(MatrixView* const* views, size_t count) {
  const bool interleave = !layout_is("SLUICE_QUANT_LAYOUT", "rows") && x8_pays(default_isa());
  const bool panels = !layout_is("SLUICE_F32_LAYOUT", "rows") && f32_panels_pay(default_isa());
  const bool bf16 = bf16_asked_and_supported();
  log_kernels_once(panels, bf16, interleave);
  std::vector<Rewrite> rewrites;
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    Rewrite r{views[i], Layout::kX8, 0};
    if (bf16 && can_panel_bf16(*views[i])) {
      r = {views[i], Layout::kBF16Panels, size_t(bf16_panel_bytes(*views[i]))};
    } else if (panels && can_panel_f32(*views[i])) {
      r = {views[i], Layout::kF32Panels, size_t(f32_panel_bytes(*views[i]))};
    } else if (interleave && can_interleave_x8(*views[i])) {
      r.bytes = size_t(x8_bytes(*views[i]));
    } else {
      continue;
    }
    r.bytes = (r.bytes + 63) / 64 * 64;  // each copy 64-byte aligned: the panel kernels load aligned
    rewrites.push_back(r);
    total += r.bytes;
  }
  if (total == 0) return nullptr;
  WeightMemory memory(total);
  size_t at = 0;
  for (const Rewrite& r : rewrites) {
    switch (r.layout) {
      case Layout::kF32Panels: *r.view = panel_f32(*r.view, memory.data() + at); break;
      case Layout::kBF16Panels: *r.view = panel_bf16(*r.view, memory.data() + at); break;
      case Layout::kX8: *r.view = interleave_x8(*r.view, memory.data() + at); break;
    }
    at += r.bytes;
  }
  return std::make_unique<CpuPreparedWeights>(std::move(memory), rewrites.size());
}

}  // namespace sluice::kernels
