#include "kernels/cpu/f32_panels.h"

namespace sluice::kernels {

bool f32_panels_pay(Isa isa) { return isa == Isa::kAvx2 || isa == Isa::kAvx512; }

bool can_panel_f32(const MatrixView& w) {
  return w.type == DType::kF32 && w.rows > 0 && w.rows % kF32PanelRows == 0 && w.cols > 0;
}

int64_t f32_panel_bytes(const MatrixView& w) { return w.rows * w.cols * int64_t(sizeof(float)); }

MatrixView panel_f32(const MatrixView& w, void* out) {
  const auto* src = static_cast<const float*>(w.data);
  auto* dst = static_cast<float*>(out);
  for (int64_t p = 0; p < w.rows / kF32PanelRows; ++p)
    for (int64_t c = 0; c < w.cols; ++c)
      for (int i = 0; i < kF32PanelRows; ++i)
        dst[(p * w.cols + c) * kF32PanelRows + i] = src[(p * kF32PanelRows + i) * w.cols + c];
  return MatrixView{DType::kF32x16, out, w.rows, w.cols};
}

void f32_panel_row(const MatrixView& w, int64_t row, float* out) {
  const auto* panel = static_cast<const float*>(w.data) + row / kF32PanelRows * w.cols * kF32PanelRows;
  for (int64_t c = 0; c < w.cols; ++c) out[c] = panel[c * kF32PanelRows + row % kF32PanelRows];
}

}  // namespace sluice::kernels
