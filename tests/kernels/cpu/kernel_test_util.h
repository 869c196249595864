// Helpers shared by the CPU kernel tests: seeded normal data and the ISAs this CPU can run.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_features.h"

namespace sluice::kernels::test_util {

inline std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Scalar always; AVX2 and AVX-512 where the CPU has them.
inline std::vector<Isa> isas() {
  std::vector<Isa> out = {Isa::kScalar};
  if (int(detected_isa()) >= int(Isa::kAvx2)) out.push_back(Isa::kAvx2);
  if (detected_isa() == Isa::kAvx512) out.push_back(Isa::kAvx512);
  return out;
}

}  // namespace sluice::kernels::test_util
