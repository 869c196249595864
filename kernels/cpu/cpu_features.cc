#include "kernels/cpu/cpu_features.h"

#include <cstdlib>
#include <string_view>

namespace sluice::kernels {

Isa detected_isa() {
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
      return Isa::kAvx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
    return Isa::kScalar;
  }();
  return isa;
}

Isa default_isa() {
  Isa isa = detected_isa();
  if (const char* env = std::getenv("SLUICE_CPU_ISA")) {
    const std::string_view v(env);
    Isa want = isa;
    if (v == "scalar") want = Isa::kScalar;
    if (v == "avx2") want = Isa::kAvx2;
    if (v == "avx512") want = Isa::kAvx512;
    if (int(want) < int(isa)) isa = want;
  }
  return isa;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

}  // namespace sluice::kernels
