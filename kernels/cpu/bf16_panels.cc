#include "kernels/cpu/bf16_panels.h"

#include <bit>
#include <cmath>

#include "kernels/cpu/cpu_features.h"

namespace sluice::kernels {

bool cpu_has_avx512_bf16() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") != 0;
  }();
  return has;
}

bool bf16_dot_supported() { return cpu_has_avx512_bf16() && default_isa() == Isa::kAvx512; }

bool can_panel_bf16(const MatrixView& w) {
  return w.type == DType::kF32 && w.rows > 0 && w.rows % kBF16PanelRows == 0 && w.cols > 0 && w.cols % 2 == 0;
}

int64_t bf16_panel_bytes(const MatrixView& w) { return w.rows * w.cols * int64_t(sizeof(uint16_t)); }

MatrixView panel_bf16(const MatrixView& w, void* out) {
  const auto* src = static_cast<const float*>(w.data);
  auto* dst = static_cast<uint16_t*>(out);
  const int64_t pairs = w.cols / 2;
  for (int64_t p = 0; p < w.rows / kBF16PanelRows; ++p)
    for (int64_t q = 0; q < pairs; ++q)
      for (int i = 0; i < kBF16PanelRows; ++i)
        for (int k = 0; k < 2; ++k)
          dst[((p * pairs + q) * kBF16PanelRows + i) * 2 + k] =
              bf16_round(src[(p * kBF16PanelRows + i) * w.cols + 2 * q + k]);
  return MatrixView{DType::kBF16x16, out, w.rows, w.cols};
}

void bf16_panel_row(const MatrixView& w, int64_t row, float* out) {
  const int64_t pairs = w.cols / 2;
  const auto* panel = static_cast<const uint16_t*>(w.data) + row / kBF16PanelRows * pairs * kBF16PanelRows * 2;
  for (int64_t c = 0; c < w.cols; ++c)
    out[c] = bf16_to_f32(panel[((c / 2) * kBF16PanelRows + row % kBF16PanelRows) * 2 + c % 2]);
}

uint16_t bf16_round(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40);  // quiet
  if ((u & 0x7f800000u) == 0) return uint16_t((u >> 16) & 0x8000);  // zero or denormal: signed zero
  u += 0x7fffu + ((u >> 16) & 1u);  // to nearest, ties to even (may carry into the exponent: inf)
  return uint16_t(u >> 16);
}

float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

float flush_denormal(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; }

}  // namespace sluice::kernels
