// AVX2 + FMA + F16C matmul kernels: the path for CPUs without AVX-512 VNNI. Compiled with AVX2
// flags; called only when the CPU reports AVX2 and FMA.
//
// Tiles of R weight rows x NT tokens: the weight side of a block (load, unpack, |w|, scale
// conversion) is done once per row and shared by the tile's tokens, the activation side once
// per token and shared by the rows, and every (row, token) pair has its own accumulator.
//
// Batch invariance: every tile shape runs, for each (row, token) pair, the same operations on
// the same blocks in the same order (one 8-lane accumulator, blocks in column order, one final
// horizontal sum), so y[t, r] is bit-identical whatever n is and whichever tile computed it.
// The serving engine relies on this: a sequence's logits must not depend on its batch mates.
// tests/kernels/cpu/matmul_test.cc (BatchInvariance) checks it.
#include <immintrin.h>


#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/matmul_tiles.h"
#include "kernels/quant_blocks.h"

namespace sluice::kernels::detail {
namespace {

// 2 rows x 4 tokens: 8 accumulators plus the shared operands fit the 16 ymm registers, and the
// per-block weight work (Q4_0 unpacking especially) is shared by 4 tokens. In CPU-time
// microbenchmarks on Zen 3 (4x2, 3x3, 4x4, 3x4 also tried) it was fastest or within noise for
// every type. Decoding (n == 1, DRAM-bound): one row per tile read weights fastest (Q8_0
// 10.4 GB/s vs 6.0 for 4 rows, 8 rows slower still: its 24 live registers spill).
constexpr int kRows = 2;          // rows per tile when n > 1
constexpr int kMaxTokens = 4;     // tokens per tile; remainders run 3-, 2-, 1-token tiles
constexpr int kDecodeRows = 1;    // rows per tile when n == 1 (one weight stream, prefetched)
// Weight rows stream from DRAM once per token in decoding; prefetching this far ahead keeps
// enough lines in flight for one core to approach the memory bandwidth.
constexpr int64_t kPrefetchBytes = 4096;
inline void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p) + kPrefetchBytes, _MM_HINT_T0); }

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// ---- F32 / F16 -----------------------------------------------------------------------------
template <bool kHalf>
inline __m256 load_w(const void* row, int64_t c) {
  if constexpr (kHalf)
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + c)));
  else
    return _mm256_loadu_ps(static_cast<const float*>(row) + c);
}
// The last cols % 8 columns, zero-filled, without reading past the row.
template <bool kHalf>
inline __m256 load_w_tail(const void* row, int64_t c, int64_t left, __m256i mask) {
  if constexpr (kHalf) {
    alignas(16) uint16_t tmp[8] = {};
    for (int64_t k = 0; k < left; ++k) tmp[k] = static_cast<const uint16_t*>(row)[c + k];
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(tmp)));
  } else {
    return _mm256_maskload_ps(static_cast<const float*>(row) + c, mask);
  }
}

template <bool kHalf, int R, int NT>
inline void tile_float(const MatrixView& w, const float* x, int64_t r, int64_t t0, float* y) {
  const int64_t cols = w.cols;
  const size_t esz = kHalf ? 2 : 4;
  const char* base = static_cast<const char*>(w.data);
  const void* wr[R];
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i) wr[i] = base + size_t(r + i) * size_t(cols) * esz;
  const float* xt[NT];
  _Pragma("GCC unroll 8")
  for (int t = 0; t < NT; ++t) xt[t] = x + (t0 + t) * cols;
  __m256 acc[R][NT];
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i)
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) acc[i][t] = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    __m256 xv[NT];
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) xv[t] = _mm256_loadu_ps(xt[t] + c);
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) {
      if (((c * int64_t(esz)) & 63) == 0) prefetch(static_cast<const char*>(wr[i]) + c * esz);
      const __m256 wv = load_w<kHalf>(wr[i], c);
      _Pragma("GCC unroll 8")
      for (int t = 0; t < NT; ++t) acc[i][t] = _mm256_fmadd_ps(wv, xv[t], acc[i][t]);
    }
  }
  if (c < cols) {  // same fmadd into the same accumulator, on zero-filled lanes
    const int64_t left = cols - c;
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(left)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 xv[NT];
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) xv[t] = _mm256_maskload_ps(xt[t] + c, mask);
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) {
      const __m256 wv = load_w_tail<kHalf>(wr[i], c, left, mask);
      _Pragma("GCC unroll 8")
      for (int t = 0; t < NT; ++t) acc[i][t] = _mm256_fmadd_ps(wv, xv[t], acc[i][t]);
    }
  }
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i)
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) y[(t0 + t) * w.rows + r + i] = hsum(acc[i][t]);
}

// ---- Q8_0 / Q4_0 against Q8_0 activations -----------------------------------------------------
// The signed weights of one block as 32 int8 lanes.
struct Q8Weights {
  using Block = BlockQ8_0;
  static __m256i unpack(const Block& b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)); }
};
struct Q4Weights {
  using Block = BlockQ4_0;
  static __m256i unpack(const Block& b) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    const __m128i m = _mm_set1_epi8(0x0f);
    return _mm256_sub_epi8(_mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m)),
                           _mm256_set1_epi8(8));
  }
};

// vpmaddubsw multiplies unsigned by signed bytes: |w| (shared by the tile's tokens; 128 for a
// -128 weight, which the unsigned side holds exactly) times x carrying w's sign. Pair sums stay
// below 2 * 128 * 127 < 2^15, so nothing saturates and the integer dot is exact.
template <class Weights, int R, int NT>
inline void tile_quant(const MatrixView& w, const Q8Activations& xq, int64_t r, int64_t t0, float* y) {
  using Block = typename Weights::Block;
  const int64_t cols = w.cols, nb = cols / kQuantBlock;
  const Block* wr[R];
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i) wr[i] = static_cast<const Block*>(w.data) + (r + i) * nb;
  const int8_t* xs[NT];
  const float* xd[NT];
  _Pragma("GCC unroll 8")
  for (int t = 0; t < NT; ++t) {
    xs[t] = xq.qs.data() + (t0 + t) * cols;
    xd[t] = xq.d.data() + (t0 + t) * nb;
  }
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R][NT];
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i)
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) acc[i][t] = _mm256_setzero_ps();
  for (int64_t j = 0; j < nb; ++j) {
    __m256i wv[R], aw[R];
    __m256 wd[R];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) {
      if ((j & 1) == 0) prefetch(wr[i] + j);
      wv[i] = Weights::unpack(wr[i][j]);
      aw[i] = _mm256_sign_epi8(wv[i], wv[i]);
      wd[i] = _mm256_set1_ps(_cvtsh_ss(wr[i][j].d));
    }
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs[t] + 32 * j));
      const __m256 xdv = _mm256_set1_ps(xd[t][j]);
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) {
        const __m256i p16 = _mm256_maddubs_epi16(aw[i], _mm256_sign_epi8(xv, wv[i]));
        const __m256 p = _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, ones));
        acc[i][t] = _mm256_fmadd_ps(p, _mm256_mul_ps(wd[i], xdv), acc[i][t]);
      }
    }
  }
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i)
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t) y[(t0 + t) * w.rows + r + i] = hsum(acc[i][t]);
}

// ---- drivers ------------------------------------------------------------------------------
struct FloatTiles {
  template <int R, int NT>
  static void run(const MatrixView& w, const float* x, const Q8Activations&, int64_t r, int64_t t0, float* y) {
    if (w.type == DType::kF16) tile_float<true, R, NT>(w, x, r, t0, y);
    else tile_float<false, R, NT>(w, x, r, t0, y);
  }
};
template <class Weights>
struct QuantTiles {
  template <int R, int NT>
  static void run(const MatrixView& w, const float*, const Q8Activations& xq, int64_t r, int64_t t0, float* y) {
    tile_quant<Weights, R, NT>(w, xq, r, t0, y);
  }
};

template <class Tiles>
constexpr RowsKernel rows_kernel = tiled_rows_kernel<Tiles, kRows, kDecodeRows, kMaxTokens>;

// Same contract and rounding as scalar_quantize_q8: amax / 127 as the scale, x * (1 / d)
// rounded to nearest even (the default MXCSR mode), -8 * sum(q) for the Q4_0 offset.
void quantize_q8(const float* x, int64_t cols, int8_t* qs, float* d, int32_t* neg8sum) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);  // undo packs' lane interleave
  for (int64_t i = 0; i < cols / kQuantBlock; ++i) {
    const float* xb = x + i * 32;
    __m256 v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(xb + 8 * k);
    const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask)),
                                   _mm256_max_ps(_mm256_and_ps(v[2], abs_mask), _mm256_and_ps(v[3], abs_mask)));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    const float di = amax / 127.0f;
    const float id = di != 0 ? 1.0f / di : 0.0f;
    const __m256 idv = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], idv));
    const __m256i q16 = _mm256_packs_epi32(q[0], q[1]), q16b = _mm256_packs_epi32(q[2], q[3]);
    const __m256i q8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q16, q16b), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + i * 32), q8);
    const __m256i s8 = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    d[i] = di;
    neg8sum[i] = -8 * _mm_cvtsi128_si32(s);
  }
}

}  // namespace

const IsaKernels& avx2_kernels() {
  static const IsaKernels k{rows_kernel<FloatTiles>, rows_kernel<FloatTiles>, rows_kernel<QuantTiles<Q8Weights>>,
                            rows_kernel<QuantTiles<Q4Weights>>, avx2_q8_0x8_rows, avx2_q4_0x8_rows,
                            quantize_q8, avx2_f32x16_rows, scalar_bf16x16_rows, scalar_round_bf16};
  return k;
}

}  // namespace sluice::kernels::detail
