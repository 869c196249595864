#include "kernels/cpu/q8_0x8.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/cpu/quant_blocks.h"

namespace sluice::kernels {

bool q8_0x8_pays(Isa isa) { return isa == Isa::kAvx2; }

bool can_interleave_q8_0x8(const MatrixView& w) {
  return w.type == DType::kQ8_0 && w.rows > 0 && w.rows % kQ8x8Rows == 0 && w.cols % kQuantBlock == 0;
}

int64_t q8_0x8_bytes(const MatrixView& w) { return w.rows / kQ8x8Rows * (w.cols / kQuantBlock) * int64_t(sizeof(BlockQ8_0x8)); }

MatrixView interleave_q8_0x8(const MatrixView& w, void* out) {
  if (!can_interleave_q8_0x8(w))
    throw std::invalid_argument("q8_0x8: needs a q8_0 matrix with a multiple of 8 rows, got " + std::string(dtype_name(w.type)) +
                                " with " + std::to_string(w.rows) + " rows");
  const int64_t nb = w.cols / kQuantBlock, groups = w.rows / kQ8x8Rows;
  const auto* src = static_cast<const BlockQ8_0*>(w.data);
  auto* blocks = static_cast<BlockQ8_0x8*>(out);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t j = 0; j < nb; ++j) {
      BlockQ8_0x8 b;
      for (int i = 0; i < kQ8x8Rows; ++i) {
        const BlockQ8_0& in = src[(g * kQ8x8Rows + i) * nb + j];
        b.d[i] = in.d;
        for (int k = 0; k < 8; ++k) std::memcpy(b.qs + 32 * k + 4 * i, in.qs + 4 * k, 4);
      }
      std::memcpy(blocks + g * nb + j, &b, sizeof b);
    }
  return {DType::kQ8_0x8, out, w.rows, w.cols};
}

void dequantize_row_q8_0x8(const MatrixView& w, int64_t row, float* out) {
  const int64_t nb = w.cols / kQuantBlock, i = row % kQ8x8Rows;
  const auto* b = static_cast<const BlockQ8_0x8*>(w.data) + row / kQ8x8Rows * nb;
  for (int64_t j = 0; j < nb; ++j) {
    const float d = fp16_to_fp32(b[j].d[i]);
    for (int k = 0; k < 8; ++k)
      for (int e = 0; e < 4; ++e) out[j * 32 + 4 * k + e] = d * b[j].qs[32 * k + 4 * i + e];
  }
}

}  // namespace sluice::kernels
