// AVX-512 BF16 matmul on BF16 row panels (DType::kBF16x16, bf16_panels.h): tiles of 2 panels
// (32 rows) x 12 tokens, 24 accumulators, as the F32 panel kernel; per column pair, two aligned
// weight loads, one broadcast of each token's activation pair and one vdpbf16ps per (panel,
// token), on the activations the runner rounded to bfloat16 once (avx512_round_bf16,
// vcvtne2ps2bf16). Compiled with AVX-512 BF16 flags and called only when the
// CPU reports them (bf16_dot_supported). The tile loops mirror matmul_panels_avx512.cc's and
// are not shared with it: an inline template compiled in two files with different ISA flags
// may be the copy the linker keeps for both.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/bf16_panels.h"
#include "kernels/cpu/matmul_kernels.h"

namespace sluice::kernels::detail {
namespace {

constexpr int kTileTokens = 12;
constexpr int64_t kTokenBlock = 48;  // a block's activations (48 x cols/2 words) stay in L2

template <int P, int NT>
inline void panel_tile(const MatrixView& w, const uint32_t* xb, int64_t panel, int64_t t0, float* y) {
  const int64_t pairs = w.cols / 2;
  const uint16_t* wp[P];
  for (int j = 0; j < P; ++j) wp[j] = static_cast<const uint16_t*>(w.data) + (panel + j) * pairs * kBF16PanelRows * 2;
  const uint32_t* xt[NT];
  for (int t = 0; t < NT; ++t) xt[t] = xb + (t0 + t) * pairs;
  __m512 acc[P][NT];
  _Pragma("GCC unroll 16")
  for (int j = 0; j < P; ++j)
    _Pragma("GCC unroll 16")
    for (int t = 0; t < NT; ++t) acc[j][t] = _mm512_setzero_ps();
  for (int64_t q = 0; q < pairs; ++q) {
    __m512bh wv[P];
    _Pragma("GCC unroll 16")
    for (int j = 0; j < P; ++j) {
      const __m512i v = _mm512_load_si512(wp[j] + q * kBF16PanelRows * 2);
      wv[j] = reinterpret_cast<const __m512bh&>(v);
    }
    _Pragma("GCC unroll 16")
    for (int t = 0; t < NT; ++t) {
      const __m512i b = _mm512_set1_epi32(int(xt[t][q]));
      const __m512bh xv = reinterpret_cast<const __m512bh&>(b);
      _Pragma("GCC unroll 16")
      for (int j = 0; j < P; ++j) acc[j][t] = _mm512_dpbf16_ps(acc[j][t], wv[j], xv);
    }
  }
  _Pragma("GCC unroll 16")
  for (int t = 0; t < NT; ++t)
    _Pragma("GCC unroll 16")
    for (int j = 0; j < P; ++j) _mm512_storeu_ps(y + (t0 + t) * w.rows + (panel + j) * kBF16PanelRows, acc[j][t]);
}

template <int P, int NT>
inline void token_tiles(const MatrixView& w, const uint32_t* xb, int64_t panel, int64_t tb, int64_t te, float* y) {
  int64_t t = tb;
  for (; t + NT <= te; t += NT) panel_tile<P, NT>(w, xb, panel, t, y);
  if constexpr (NT > 1) {
    if (t < te) token_tiles<P, NT - 1>(w, xb, panel, t, te, y);
  }
}

}  // namespace

void avx512_round_bf16(const float* x, int64_t count, uint16_t* out) {
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
    _mm512_storeu_si512(out + i, reinterpret_cast<const __m512i&>(h));
  }
  if (i < count) {  // the last floats: the same instruction on zero-padded copies
    alignas(64) float lo[16] = {}, hi[16] = {};
    alignas(64) uint16_t h[32];
    for (int64_t k = i; k < count; ++k) (k - i < 16 ? lo[k - i] : hi[k - i - 16]) = x[k];
    const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_load_ps(hi), _mm512_load_ps(lo));
    _mm512_store_si512(h, reinterpret_cast<const __m512i&>(v));
    std::memcpy(out + i, h, size_t(count - i) * sizeof(uint16_t));
  }
}

void avx512_bf16x16_rows(const MatrixView& w, const float*, const Q8Activations& xq, int64_t n, int64_t r0,
                         int64_t r1, float* y) {
  const auto* xb = reinterpret_cast<const uint32_t*>(xq.bf16.data());  // column pairs as words
  const int64_t p0 = r0 / kBF16PanelRows, p1 = r1 / kBF16PanelRows;
  for (int64_t tb = 0; tb < n; tb += kTokenBlock) {
    const int64_t te = std::min(n, tb + kTokenBlock);
    int64_t p = p0;
    for (; p + 2 <= p1; p += 2) token_tiles<2, kTileTokens>(w, xb, p, tb, te, y);
    if (p < p1) token_tiles<1, kTileTokens>(w, xb, p, tb, te, y);
  }
}

}  // namespace sluice::kernels::detail
