#include "kernels/cpu/quant_x8.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/quant_blocks.h"

namespace sluice::kernels {

bool x8_pays(Isa isa) { return isa == Isa::kAvx2 || isa == Isa::kAvx512; }

bool can_interleave_x8(const MatrixView& w) {
  return (w.type == DType::kQ8_0 || w.type == DType::kQ4_0) && w.rows > 0 && w.rows % kX8Rows == 0 &&
         w.cols % kQuantBlock == 0;
}

DType x8_type(DType t) { return t == DType::kQ4_0 ? DType::kQ4_0x8 : DType::kQ8_0x8; }

bool is_x8(DType t) { return t == DType::kQ8_0x8 || t == DType::kQ4_0x8; }

int64_t x8_bytes(const MatrixView& w) { return w.rows * dtype_row_bytes(w.type, w.cols); }

namespace {

// One group's blocks: the 8 rows' scales, then their quant bytes in 4-byte slices.
template <class Src, class Dst>
void interleave(const Src* src, int64_t groups, int64_t nb, Dst* dst) {
  constexpr int kBytes = sizeof(Src::qs);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t j = 0; j < nb; ++j) {
      Dst b;
      for (int i = 0; i < kX8Rows; ++i) {
        const Src& in = src[(g * kX8Rows + i) * nb + j];
        b.d[i] = in.d;
        for (int m = 0; m < kBytes / 4; ++m) std::memcpy(b.qs + 32 * m + 4 * i, in.qs + 4 * m, 4);
      }
      std::memcpy(dst + g * nb + j, &b, sizeof b);
    }
}

}  // namespace

MatrixView interleave_x8(const MatrixView& w, void* out) {
  if (!can_interleave_x8(w))
    throw std::invalid_argument("interleave_x8: needs a q8_0 or q4_0 matrix with a multiple of 8 rows, got " +
                                std::string(dtype_name(w.type)) + " with " + std::to_string(w.rows) + " rows");
  const int64_t nb = w.cols / kQuantBlock, groups = w.rows / kX8Rows;
  if (w.type == DType::kQ8_0)
    interleave(static_cast<const BlockQ8_0*>(w.data), groups, nb, static_cast<BlockQ8_0x8*>(out));
  else
    interleave(static_cast<const BlockQ4_0*>(w.data), groups, nb, static_cast<BlockQ4_0x8*>(out));
  return {x8_type(w.type), out, w.rows, w.cols};
}

void dequantize_row_x8(const MatrixView& w, int64_t row, float* out) {
  const int64_t nb = w.cols / kQuantBlock, i = row % kX8Rows, g = row / kX8Rows;
  if (w.type == DType::kQ8_0x8) {
    const auto* b = static_cast<const BlockQ8_0x8*>(w.data) + g * nb;
    for (int64_t j = 0; j < nb; ++j) {
      const float d = fp16_to_fp32(b[j].d[i]);
      for (int m = 0; m < 8; ++m)
        for (int e = 0; e < 4; ++e) out[j * 32 + 4 * m + e] = d * b[j].qs[32 * m + 4 * i + e];
    }
    return;
  }
  const auto* b = static_cast<const BlockQ4_0x8*>(w.data) + g * nb;
  for (int64_t j = 0; j < nb; ++j) {
    const float d = fp16_to_fp32(b[j].d[i]);
    for (int m = 0; m < 4; ++m)
      for (int e = 0; e < 4; ++e) {
        const uint8_t q = b[j].qs[32 * m + 4 * i + e];
        out[j * 32 + 4 * m + e] = d * ((q & 0x0f) - 8);
        out[j * 32 + 16 + 4 * m + e] = d * ((q >> 4) - 8);
      }
  }
}

}  // namespace sluice::kernels
