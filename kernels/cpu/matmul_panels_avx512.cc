// AVX-512 matmul on F32 row panels (DType::kF32x16, f32_panels.h): tiles of 2 panels (32 rows)
// x 12 tokens, 24 accumulators; per column, two aligned weight loads and one broadcast per
// token. Compiled with AVX-512 flags and called only when the CPU reports them.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/f32_panels.h"
#include "kernels/cpu/matmul_kernels.h"

namespace sluice::kernels::detail {
namespace {

constexpr int kTileTokens = 12;
constexpr int64_t kTokenBlock = 48;  // a block's activations (48 x cols floats) stay in L2

template <int P, int NT>
inline void panel_tile(const MatrixView& w, const float* x, int64_t panel, int64_t t0, float* y) {
  const int64_t cols = w.cols;
  const float* wp[P];
  for (int j = 0; j < P; ++j) wp[j] = static_cast<const float*>(w.data) + (panel + j) * cols * kF32PanelRows;
  const float* xt[NT];
  for (int t = 0; t < NT; ++t) xt[t] = x + (t0 + t) * cols;
  __m512 acc[P][NT];
  _Pragma("GCC unroll 16")
  for (int j = 0; j < P; ++j)
    _Pragma("GCC unroll 16")
    for (int t = 0; t < NT; ++t) acc[j][t] = _mm512_setzero_ps();
  for (int64_t c = 0; c < cols; ++c) {
    __m512 wv[P];
    _Pragma("GCC unroll 16")
    for (int j = 0; j < P; ++j) wv[j] = _mm512_load_ps(wp[j] + c * kF32PanelRows);
    _Pragma("GCC unroll 16")
    for (int t = 0; t < NT; ++t) {
      const __m512 xb = _mm512_set1_ps(xt[t][c]);
      _Pragma("GCC unroll 16")
      for (int j = 0; j < P; ++j) acc[j][t] = _mm512_fmadd_ps(wv[j], xb, acc[j][t]);
    }
  }
  _Pragma("GCC unroll 16")
  for (int t = 0; t < NT; ++t)
    _Pragma("GCC unroll 16")
    for (int j = 0; j < P; ++j) _mm512_storeu_ps(y + (t0 + t) * w.rows + (panel + j) * kF32PanelRows, acc[j][t]);
}

template <int P, int NT>
inline void token_tiles(const MatrixView& w, const float* x, int64_t panel, int64_t tb, int64_t te, float* y) {
  int64_t t = tb;
  for (; t + NT <= te; t += NT) panel_tile<P, NT>(w, x, panel, t, y);
  if constexpr (NT > 1) {
    if (t < te) token_tiles<P, NT - 1>(w, x, panel, t, te, y);
  }
}

}  // namespace

void avx512_f32x16_rows(const MatrixView& w, const float* x, const Q8Activations&, int64_t n, int64_t r0, int64_t r1,
                        float* y) {
  const int64_t p0 = r0 / kF32PanelRows, p1 = r1 / kF32PanelRows;
  for (int64_t tb = 0; tb < n; tb += kTokenBlock) {
    const int64_t te = std::min(n, tb + kTokenBlock);
    int64_t p = p0;
    for (; p + 2 <= p1; p += 2) token_tiles<2, kTileTokens>(w, x, p, tb, te, y);
    if (p < p1) token_tiles<1, kTileTokens>(w, x, p, tb, te, y);
  }
}

}  // namespace sluice::kernels::detail
