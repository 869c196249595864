// AVX-512 (F, BW, VL, VNNI) matmul kernels. Compiled with AVX-512 flags and called only when
// the CPU reports those features. Tiles of R weight rows x NT tokens share each weight load
// across tokens (prompt processing) and each activation load across rows.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/bf16_panels.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/matmul_tiles.h"
#include "kernels/quant_blocks.h"

namespace sluice::kernels::detail {
namespace {

// Weight rows stream from DRAM once per token in decoding; the hardware prefetcher alone does
// not keep enough lines in flight for one core to reach the memory bandwidth.
#ifndef SLUICE_PREFETCH_BYTES
#define SLUICE_PREFETCH_BYTES 4096
#endif
constexpr int64_t kPrefetchBytes = SLUICE_PREFETCH_BYTES;
inline void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p) + kPrefetchBytes, _MM_HINT_T0); }

// ---- F32 / F16 -----------------------------------------------------------------------------
template <bool kHalf>
inline __m512 load_w(const void* row, int64_t c) {
  if constexpr (kHalf)
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(row) + c)));
  else
    return _mm512_loadu_ps(static_cast<const float*>(row) + c);
}
template <bool kHalf>
inline __m512 load_w_masked(const void* row, int64_t c, __mmask16 m) {
  if constexpr (kHalf)
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(row) + c));
  else
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(row) + c);
}

template <bool kHalf, int R, int NT>
inline void tile_float(const MatrixView& w, const float* x, int64_t r, int64_t t0, float* y) {
  const int64_t cols = w.cols;
  const size_t esz = kHalf ? 2 : 4;
  const char* base = static_cast<const char*>(w.data);
  const void* wr[R];
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i) wr[i] = base + size_t(r + i) * size_t(cols) * esz;
  __m512 acc[R][NT];
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i)
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) acc[i][t] = _mm512_setzero_ps();
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) {
    __m512 xv[NT];
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) xv[t] = _mm512_loadu_ps(x + (t0 + t) * cols + c);
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) {
      if ((c & 15) == 0) prefetch(static_cast<const char*>(wr[i]) + c * esz);
      const __m512 wv = load_w<kHalf>(wr[i], c);
      _Pragma("GCC unroll 8")
      for (int t = 0; t < NT; ++t) acc[i][t] = _mm512_fmadd_ps(wv, xv[t], acc[i][t]);
    }
  }
  if (c < cols) {
    const __mmask16 m = __mmask16((1u << (cols - c)) - 1);
    __m512 xv[NT];
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) xv[t] = _mm512_maskz_loadu_ps(m, x + (t0 + t) * cols + c);
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) {
      const __m512 wv = load_w_masked<kHalf>(wr[i], c, m);
      _Pragma("GCC unroll 8")
      for (int t = 0; t < NT; ++t) acc[i][t] = _mm512_fmadd_ps(wv, xv[t], acc[i][t]);
    }
  }
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i)
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) y[(t0 + t) * w.rows + r + i] = _mm512_reduce_add_ps(acc[i][t]);
}

// ---- Q8_0 / Q4_0 against Q8_0 activations -----------------------------------------------------
// Lanes 0-7 of a 512-bit dot product belong to the first block of a pair, lanes 8-15 to the
// second; kPairIdx spreads a pair of per-block scales onto those halves.
inline __m512i pair_idx() { return _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0); }

inline __m512 pair_scale_f16(uint16_t a, uint16_t b, __m512i idx) {
  const __m128i h = _mm_insert_epi16(_mm_cvtsi32_si128(a), b, 1);
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(_mm_cvtph_ps(h)));
}
inline __m512 pair_scale_f32(const float* d, __m512i idx) {
  const __m128 v = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(d)));  // unaligned
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(v));
}
inline int32_t hsum256_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

template <int R, int NT>
inline void tile_q8_0(const MatrixView& w, const Q8Activations& xq, int64_t r, int64_t t0, float* y) {
  const int64_t cols = w.cols, nb = cols / kQuantBlock, npairs = nb / 2;
  const BlockQ8_0* wr[R];
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i) wr[i] = static_cast<const BlockQ8_0*>(w.data) + (r + i) * nb;
  const int8_t* xs[NT];
  const float* xd[NT];
  _Pragma("GCC unroll 8")
  for (int t = 0; t < NT; ++t) {
    xs[t] = xq.qs.data() + (t0 + t) * cols;
    xd[t] = xq.d.data() + (t0 + t) * nb;
  }
  const __m512i idx = pair_idx();
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc[R][NT];
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i)
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) acc[i][t] = _mm512_setzero_ps();
  // vpdpbusd multiplies unsigned by signed bytes: feed x + 128 as the unsigned side and start
  // each sum at -128 * sum(w) (per row and block pair, shared by all tokens of the tile).
  const __m512i bias = _mm512_set1_epi8(char(0x80));
  for (int64_t j = 0; j < npairs; ++j) {
    __m512i wv[R], corr[R];
    __m512 wd[R];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) {
      const BlockQ8_0* b = wr[i] + 2 * j;
      prefetch(b);
      wv[i] = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs))),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[1].qs)), 1);
      corr[i] = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, bias, wv[i]));
      wd[i] = pair_scale_f16(b[0].d, b[1].d, idx);
    }
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) {
      const __m512i xu = _mm512_xor_si512(_mm512_loadu_si512(xs[t] + 64 * j), bias);
      const __m512 xdv = pair_scale_f32(xd[t] + 2 * j, idx);
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) {
        const __m512i p = _mm512_dpbusd_epi32(corr[i], xu, wv[i]);
        acc[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(wd[i], xdv), acc[i][t]);
      }
    }
  }
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i) {
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) {
      float s = _mm512_reduce_add_ps(acc[i][t]);
      if (nb & 1) {  // odd block count (e.g. 288 columns): last block on 256-bit lanes
        const BlockQ8_0& b = wr[i][nb - 1];
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs[t] + 32 * (nb - 1)));
        const __m256i sx = _mm256_mask_sub_epi8(xv, _mm256_movepi8_mask(v), _mm256_setzero_si256(), xv);
        const __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(v), sx);
        s += float(hsum256_epi32(p)) * _cvtsh_ss(b.d) * xd[t][nb - 1];
      }
      y[(t0 + t) * w.rows + r + i] = s;
    }
  }
}

inline __m512i q4_unpack_pair(const BlockQ4_0* b, __m512i shifts, __m512i low4) {
  __m512i z = _mm512_inserti32x4(
      _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b[0].qs))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[1].qs)), 1);
  z = _mm512_shuffle_i32x4(z, z, _MM_SHUFFLE(1, 1, 0, 0));  // [q0, q0, q1, q1]
  return _mm512_and_si512(_mm512_srlv_epi16(z, shifts), low4);  // [lo0, hi0, lo1, hi1]
}

template <int R, int NT>
inline void tile_q4_0(const MatrixView& w, const Q8Activations& xq, int64_t r, int64_t t0, float* y) {
  const int64_t cols = w.cols, nb = cols / kQuantBlock, npairs = nb / 2;
  const BlockQ4_0* wr[R];
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i) wr[i] = static_cast<const BlockQ4_0*>(w.data) + (r + i) * nb;
  const int8_t* xs[NT];
  const float* xd[NT];
  const int32_t* xc[NT];
  _Pragma("GCC unroll 8")
  for (int t = 0; t < NT; ++t) {
    xs[t] = xq.qs.data() + (t0 + t) * cols;
    xd[t] = xq.d.data() + (t0 + t) * nb;
    xc[t] = xq.neg8sum.data() + (t0 + t) * nb;
  }
  const __m512i idx = pair_idx();
  const __m512i shifts = _mm512_set_epi64(0x0004000400040004LL, 0x0004000400040004LL, 0, 0,
                                          0x0004000400040004LL, 0x0004000400040004LL, 0, 0);
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  __m512 acc[R][NT];
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i)
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) acc[i][t] = _mm512_setzero_ps();
  for (int64_t j = 0; j < npairs; ++j) {
    __m512i wq[R];
    __m512 wd[R];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) {
      prefetch(wr[i] + 2 * j);
      wq[i] = q4_unpack_pair(wr[i] + 2 * j, shifts, low4);
      wd[i] = pair_scale_f16(wr[i][2 * j].d, wr[i][2 * j + 1].d, idx);
    }
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) {
      const __m512i xv = _mm512_loadu_si512(xs[t] + 64 * j);
      const __m512 xdv = pair_scale_f32(xd[t] + 2 * j, idx);
      // Start the integer sum at -8*sum(x) per block (lane 0 and lane 8): the nibble offset.
      const __m512i corr = _mm512_maskz_permutexvar_epi32(
          0x0101, idx, _mm512_castsi128_si512(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(xc[t] + 2 * j))));
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) {
        const __m512i p = _mm512_dpbusd_epi32(corr, wq[i], xv);
        acc[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(wd[i], xdv), acc[i][t]);
      }
    }
  }
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i) {
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) {
      float s = _mm512_reduce_add_ps(acc[i][t]);
      if (nb & 1) {
        const BlockQ4_0& b = wr[i][nb - 1];
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
        const __m128i m = _mm_set1_epi8(0x0f);
        const __m256i z = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs[t] + 32 * (nb - 1)));
        const __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), z, xv);
        s += float(hsum256_epi32(p) + xc[t][nb - 1]) * _cvtsh_ss(b.d) * xd[t][nb - 1];
      }
      y[(t0 + t) * w.rows + r + i] = s;
    }
  }
}

// ---- drivers ------------------------------------------------------------------------------
struct FloatTiles {
  template <int R, int NT>
  static void run(const MatrixView& w, const float* x, const Q8Activations&, int64_t r, int64_t t0, float* y) {
    if (w.type == DType::kF16) tile_float<true, R, NT>(w, x, r, t0, y);
    else tile_float<false, R, NT>(w, x, r, t0, y);
  }
};
struct Q8Tiles {
  template <int R, int NT>
  static void run(const MatrixView& w, const float*, const Q8Activations& xq, int64_t r, int64_t t0, float* y) {
    tile_q8_0<R, NT>(w, xq, r, t0, y);
  }
};
struct Q4Tiles {
  template <int R, int NT>
  static void run(const MatrixView& w, const float*, const Q8Activations& xq, int64_t r, int64_t t0, float* y) {
    tile_q4_0<R, NT>(w, xq, r, t0, y);
  }
};

template <class Tiles>
constexpr RowsKernel rows_kernel = tiled_rows_kernel<Tiles, 4, 8, 4>;  // 4 rows (8 decoding) x 4 tokens

void quantize_q8(const float* x, int64_t cols, int8_t* qs, float* d, int32_t* neg8sum) {
  const __m512 sign_off = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  for (int64_t i = 0; i < cols / kQuantBlock; ++i) {
    const __m512 v0 = _mm512_loadu_ps(x + i * 32), v1 = _mm512_loadu_ps(x + i * 32 + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_and_ps(v0, sign_off), _mm512_and_ps(v1, sign_off)));
    const float di = amax / 127.0f;
    const float id = di != 0 ? 1.0f / di : 0.0f;
    const __m512 idv = _mm512_set1_ps(id);
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, idv));
    const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, idv));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + i * 32), _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + i * 32 + 16), _mm512_cvtsepi32_epi8(q1));
    d[i] = di;
    neg8sum[i] = -8 * _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
  }
}

}  // namespace

const IsaKernels& avx512_kernels() {
  static const IsaKernels k{rows_kernel<FloatTiles>, rows_kernel<FloatTiles>, rows_kernel<Q8Tiles>,
                            rows_kernel<Q4Tiles>, avx512_q8_0x8_rows, avx512_q4_0x8_rows, quantize_q8,
                            avx512_f32x16_rows, cpu_has_avx512_bf16() ? avx512_bf16x16_rows : scalar_bf16x16_rows,
                            cpu_has_avx512_bf16() ? avx512_round_bf16 : scalar_round_bf16};
  return k;
}

}  // namespace sluice::kernels::detail
