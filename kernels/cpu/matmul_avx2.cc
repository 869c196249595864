// AVX2 + FMA + F16C matmul kernels (one row x one token at a time): the path for CPUs without
// AVX-512 VNNI. Compiled with AVX2 flags; called only when the CPU reports AVX2 and FMA.
#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/quant_blocks.h"

namespace sluice::kernels::detail {
namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Signed 8-bit dot of 32 lanes, as 8 float partial sums.
inline __m256 dot_i8(__m256i w, __m256i x) {
  const __m256i aw = _mm256_sign_epi8(w, w);
  const __m256i sx = _mm256_sign_epi8(x, w);
  const __m256i p16 = _mm256_maddubs_epi16(aw, sx);
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

void avx2_f32(const MatrixView& w, const float* x, const Q8Activations&, int64_t n, int64_t r0,
              int64_t r1, float* y) {
  const auto* wd = static_cast<const float*>(w.data);
  for (int64_t r = r0; r < r1; ++r) {
    const float* wr = wd + r * w.cols;
    for (int64_t t = 0; t < n; ++t) {
      const float* xt = x + t * w.cols;
      __m256 acc = _mm256_setzero_ps();
      int64_t c = 0;
      for (; c + 8 <= w.cols; c += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(wr + c), _mm256_loadu_ps(xt + c), acc);
      float s = hsum(acc);
      for (; c < w.cols; ++c) s += wr[c] * xt[c];
      y[t * w.rows + r] = s;
    }
  }
}

void avx2_f16(const MatrixView& w, const float* x, const Q8Activations&, int64_t n, int64_t r0,
              int64_t r1, float* y) {
  const auto* wd = static_cast<const uint16_t*>(w.data);
  for (int64_t r = r0; r < r1; ++r) {
    const uint16_t* wr = wd + r * w.cols;
    for (int64_t t = 0; t < n; ++t) {
      const float* xt = x + t * w.cols;
      __m256 acc = _mm256_setzero_ps();
      int64_t c = 0;
      for (; c + 8 <= w.cols; c += 8)
        acc = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wr + c))),
                              _mm256_loadu_ps(xt + c), acc);
      float s = hsum(acc);
      for (; c < w.cols; ++c) s += fp16_to_fp32(wr[c]) * xt[c];
      y[t * w.rows + r] = s;
    }
  }
}

void avx2_q8_0(const MatrixView& w, const float*, const Q8Activations& xq, int64_t n, int64_t r0,
               int64_t r1, float* y) {
  const int64_t nb = w.cols / kQuantBlock;
  for (int64_t r = r0; r < r1; ++r) {
    const auto* b = static_cast<const BlockQ8_0*>(w.data) + r * nb;
    for (int64_t t = 0; t < n; ++t) {
      const int8_t* xs = xq.qs.data() + t * w.cols;
      const float* xd = xq.d.data() + t * nb;
      __m256 acc = _mm256_setzero_ps();
      for (int64_t i = 0; i < nb; ++i) {
        const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qs));
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs + 32 * i));
        acc = _mm256_fmadd_ps(dot_i8(wv, xv), _mm256_set1_ps(_cvtsh_ss(b[i].d) * xd[i]), acc);
      }
      y[t * w.rows + r] = hsum(acc);
    }
  }
}

void avx2_q4_0(const MatrixView& w, const float*, const Q8Activations& xq, int64_t n, int64_t r0,
               int64_t r1, float* y) {
  const int64_t nb = w.cols / kQuantBlock;
  const __m128i m = _mm_set1_epi8(0x0f);
  const __m256i eight = _mm256_set1_epi8(8);
  for (int64_t r = r0; r < r1; ++r) {
    const auto* b = static_cast<const BlockQ4_0*>(w.data) + r * nb;
    for (int64_t t = 0; t < n; ++t) {
      const int8_t* xs = xq.qs.data() + t * w.cols;
      const float* xd = xq.d.data() + t * nb;
      __m256 acc = _mm256_setzero_ps();
      for (int64_t i = 0; i < nb; ++i) {
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs));
        const __m256i wv = _mm256_sub_epi8(
            _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m)), eight);
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs + 32 * i));
        acc = _mm256_fmadd_ps(dot_i8(wv, xv), _mm256_set1_ps(_cvtsh_ss(b[i].d) * xd[i]), acc);
      }
      y[t * w.rows + r] = hsum(acc);
    }
  }
}

}  // namespace

const IsaKernels& avx2_kernels() {
  static const IsaKernels k{avx2_f32, avx2_f16, avx2_q8_0, avx2_q4_0, scalar_quantize_q8};
  return k;
}

}  // namespace sluice::kernels::detail
