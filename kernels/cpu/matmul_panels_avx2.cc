// AVX2 matmul on F32 row panels (DType::kF32x16, f32_panels.h): tiles of 1 panel (16 rows, two
// 8-lane halves) x 6 tokens, 12 accumulators; per column, two aligned weight loads and one
// broadcast per token. Compiled with AVX2/FMA flags and called only when the CPU reports them.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/f32_panels.h"
#include "kernels/cpu/matmul_kernels.h"

namespace sluice::kernels::detail {
namespace {

constexpr int kTileTokens = 6;
constexpr int64_t kTokenBlock = 48;

template <int NT>
inline void panel_tile(const MatrixView& w, const float* x, int64_t panel, int64_t t0, float* y) {
  const int64_t cols = w.cols;
  const float* wp = static_cast<const float*>(w.data) + panel * cols * kF32PanelRows;
  const float* xt[NT];
  for (int t = 0; t < NT; ++t) xt[t] = x + (t0 + t) * cols;
  __m256 lo[NT], hi[NT];
  _Pragma("GCC unroll 8")
  for (int t = 0; t < NT; ++t) lo[t] = hi[t] = _mm256_setzero_ps();
  for (int64_t c = 0; c < cols; ++c) {
    const __m256 wl = _mm256_load_ps(wp + c * kF32PanelRows), wh = _mm256_load_ps(wp + c * kF32PanelRows + 8);
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) {
      const __m256 xb = _mm256_broadcast_ss(xt[t] + c);
      lo[t] = _mm256_fmadd_ps(wl, xb, lo[t]);
      hi[t] = _mm256_fmadd_ps(wh, xb, hi[t]);
    }
  }
  _Pragma("GCC unroll 8")
  for (int t = 0; t < NT; ++t) {
    float* out = y + (t0 + t) * w.rows + panel * kF32PanelRows;
    _mm256_storeu_ps(out, lo[t]);
    _mm256_storeu_ps(out + 8, hi[t]);
  }
}

template <int NT>
inline void token_tiles(const MatrixView& w, const float* x, int64_t panel, int64_t tb, int64_t te, float* y) {
  int64_t t = tb;
  for (; t + NT <= te; t += NT) panel_tile<NT>(w, x, panel, t, y);
  if constexpr (NT > 1) {
    if (t < te) token_tiles<NT - 1>(w, x, panel, t, te, y);
  }
}

}  // namespace

void avx2_f32x16_rows(const MatrixView& w, const float* x, const Q8Activations&, int64_t n, int64_t r0, int64_t r1,
                      float* y) {
  for (int64_t tb = 0; tb < n; tb += kTokenBlock) {
    const int64_t te = std::min(n, tb + kTokenBlock);
    for (int64_t p = r0 / kF32PanelRows; p < r1 / kF32PanelRows; ++p) token_tiles<kTileTokens>(w, x, p, tb, te, y);
  }
}

}  // namespace sluice::kernels::detail
