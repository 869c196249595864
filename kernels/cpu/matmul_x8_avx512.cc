// AVX-512 VNNI matmul on weights interleaved by 8 rows (kQ8_0x8, kQ4_0x8; quant_x8.h) against
// Q8_0 activations. Compiled with AVX-512 flags; called only when the CPU reports AVX-512 VNNI.
//
// A tile is two groups of 8 rows (16 rows: one zmm lane per row, group A in lanes 0-7, group B
// in lanes 8-15) x NT tokens. Per block and four-column slice, one zmm holds both groups' slice,
// and per token one vpdpbusd against a broadcast of the token's 4 activations adds every row's
// 4-column dot product into its own lane:
// - Q4_0x8: the nibbles (0..15) are vpdpbusd's unsigned operand as they are and the activations
//   its signed one; the sum starts at -8 x the block's activation sum (the nibbles carry +8).
//   A 32-byte slice load is two slices, low and high nibbles.
// - Q8_0x8: |w| is the unsigned operand and the activation takes w's sign (activations are
//   quantised to -127..127, so the negation is exact; |-128| = 128 is exact unsigned).
// Then per token one conversion, one product of scales (16 rows' d times the token's d) and one
// FMA: about 12 vector operations per 16 rows x 32 columns and token, where the row-major
// VNNI tiles spend about 4 per row pair of 32-column blocks and token.
//
// Arithmetic per (row, token), whatever the tile: acc = fma(float(dot_j), d_w * d_x, acc) over
// blocks j in column order, dot_j the block's exact integer dot product: the scalar kernels for
// the interleaved types (matmul.cc) compute the same, so results are bit for bit the scalar
// twin's and the AVX2 kernel's, and a token's output does not depend on its batch. A row range
// with an odd number of groups ends with one group through the AVX2 kernel (same arithmetic).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/matmul_tiles.h"
#include "kernels/cpu/quant_x8.h"
#include "kernels/quant_blocks.h"

namespace sluice::kernels::detail {
namespace {

constexpr int kMaxTokens = 6;  // 6 integer + 6 float accumulators beside 8 unpacked slices: 20 of 32 registers
constexpr int64_t kPrefetchBytes = 8192;  // decoding: how far ahead in each group's stream

inline __m512i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Group A's 32 bytes in the low half, group B's in the high half.
inline __m512i load_pair(const uint8_t* a, const uint8_t* b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a))),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), 1);
}
inline __m512i load_pair(const int8_t* a, const int8_t* b) {
  return load_pair(reinterpret_cast<const uint8_t*>(a), reinterpret_cast<const uint8_t*>(b));
}

// The integer sums of a block in `C` independent chains (the exact sum whatever C): with few
// tokens one chain of eight dependent vpdpbusd would wait on their latency.
template <int C>
inline __m512i sum_chains(const __m512i (&s)[C]) {
  if constexpr (C == 1) {
    return s[0];
  } else if constexpr (C == 2) {
    return _mm512_add_epi32(s[0], s[1]);
  } else {
    return _mm512_add_epi32(_mm512_add_epi32(s[0], s[1]), _mm512_add_epi32(s[2], s[3]));
  }
}

template <class Block, int NT>
inline void tile(const Block* ga, const Block* gb, int64_t nb, const Q8Activations& xq, int64_t cols, int64_t t0,
                 float* y, int64_t rows, const char* stream_end) {
  constexpr bool kQ4 = sizeof(Block) == sizeof(BlockQ4_0x8);
  constexpr int kChains = NT >= 4 ? 1 : NT >= 2 ? 2 : 4;
  const int8_t* xs[NT];
  const float* xd[NT];
  const int32_t* xsum[NT];
  _Pragma("GCC unroll 8")
  for (int t = 0; t < NT; ++t) {
    xs[t] = xq.qs.data() + (t0 + t) * cols;
    xd[t] = xq.d.data() + (t0 + t) * (cols / kQuantBlock);
    xsum[t] = xq.neg8sum.data() + (t0 + t) * (cols / kQuantBlock);
  }
  __m512 acc[NT];
  _Pragma("GCC unroll 8")
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t j = 0; j < nb; ++j) {
    const Block& a = ga[j];
    const Block& b = gb[j];
    if (NT == 1) {  // every cache line of both streams' block kPrefetchBytes ahead
      const char* pa = reinterpret_cast<const char*>(&a) + kPrefetchBytes;
      const char* pb = reinterpret_cast<const char*>(&b) + kPrefetchBytes;
      _Pragma("GCC unroll 8")
      for (size_t off = 0; off < sizeof(Block); off += 64) {
        if (pa + off < stream_end) _mm_prefetch(pa + off, _MM_HINT_T0);
        if (pb + off < stream_end) _mm_prefetch(pb + off, _MM_HINT_T0);
      }
    }
    __m512i dot[NT];
    if constexpr (kQ4) {
      const __m512i low = _mm512_set1_epi8(0x0f);
      __m512i lo[4], hi[4];
      _Pragma("GCC unroll 4")
      for (int m = 0; m < 4; ++m) {
        const __m512i raw = load_pair(a.qs + 32 * m, b.qs + 32 * m);
        lo[m] = _mm512_and_si512(raw, low);
        hi[m] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
      }
      _Pragma("GCC unroll 8")
      for (int t = 0; t < NT; ++t) {
        __m512i s[kChains];
        s[0] = _mm512_set1_epi32(xsum[t][j]);
        _Pragma("GCC unroll 4")
        for (int c = 1; c < kChains; ++c) s[c] = _mm512_setzero_si512();
        const int8_t* x = xs[t] + 32 * j;
        _Pragma("GCC unroll 4")
        for (int m = 0; m < 4; ++m) {
          s[(2 * m) % kChains] = _mm512_dpbusd_epi32(s[(2 * m) % kChains], lo[m], broadcast4(x + 4 * m));
          s[(2 * m + 1) % kChains] = _mm512_dpbusd_epi32(s[(2 * m + 1) % kChains], hi[m], broadcast4(x + 16 + 4 * m));
        }
        dot[t] = sum_chains<kChains>(s);
      }
    } else {
      __m512i s[NT][kChains];
      _Pragma("GCC unroll 8")
      for (int t = 0; t < NT; ++t)
        _Pragma("GCC unroll 4")
        for (int c = 0; c < kChains; ++c) s[t][c] = _mm512_setzero_si512();
      _Pragma("GCC unroll 8")
      for (int m = 0; m < 8; ++m) {
        const __m512i w = load_pair(a.qs + 32 * m, b.qs + 32 * m);
        const __m512i aw = _mm512_abs_epi8(w);
        const __mmask64 negative = _mm512_movepi8_mask(w);
        _Pragma("GCC unroll 8")
        for (int t = 0; t < NT; ++t) {
          const __m512i x4 = broadcast4(xs[t] + 32 * j + 4 * m);
          __m512i& acc_m = s[t][m % kChains];
          acc_m = _mm512_dpbusd_epi32(acc_m, aw, _mm512_mask_sub_epi8(x4, negative, _mm512_setzero_si512(), x4));
        }
      }
      _Pragma("GCC unroll 8")
      for (int t = 0; t < NT; ++t) dot[t] = sum_chains<kChains>(s[t]);
    }
    const __m512 wd = _mm512_insertf32x8(
        _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.d)))),
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.d))), 1);
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t)
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[t]), _mm512_mul_ps(wd, _mm512_set1_ps(xd[t][j])), acc[t]);
  }
  _Pragma("GCC unroll 8")
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + (t0 + t) * rows, acc[t]);
}

template <class Block, int NT>
inline void token_tiles(const Block* ga, const Block* gb, int64_t nb, const Q8Activations& xq, int64_t cols,
                        int64_t tb, int64_t te, float* y, int64_t rows, const char* stream_end) {
  int64_t t = tb;
  for (; t + NT <= te; t += NT) tile<Block, NT>(ga, gb, nb, xq, cols, t, y, rows, stream_end);
  if constexpr (NT > 1) {
    if (t < te) token_tiles<Block, NT - 1>(ga, gb, nb, xq, cols, t, te, y, rows, stream_end);
  }
}

// Rows [r0, r1), both multiples of 8, in pairs of groups; an odd last group goes to `single`
// (the AVX2 kernel). Tokens in blocks of kTokenBlock, as the row-major kernels walk them. The
// groups lie one after another, so each of the pair's streams is prefetched ahead into the
// groups that follow, up to the range's end and no further (r1: another thread's rows).
template <class Block>
void rows_x8(const MatrixView& w, const float* x, const Q8Activations& xq, int64_t n, int64_t r0, int64_t r1,
             float* y, RowsKernel single) {
  const int64_t nb = w.cols / kQuantBlock;
  const auto* blocks = static_cast<const Block*>(w.data);
  const int64_t pairs_end = r0 + (r1 - r0) / (2 * kX8Rows) * (2 * kX8Rows);
  const char* end = reinterpret_cast<const char*>(blocks + r1 / kX8Rows * nb);
  for (int64_t tb = 0; tb < n; tb += kTokenBlock) {
    const int64_t te = std::min(n, tb + kTokenBlock);
    for (int64_t r = r0; r < pairs_end; r += 2 * kX8Rows) {
      const Block* ga = blocks + r / kX8Rows * nb;
      const Block* gb = ga + nb;
      token_tiles<Block, kMaxTokens>(ga, gb, nb, xq, w.cols, tb, te, y + r, w.rows, end);
    }
  }
  if (pairs_end < r1) single(w, x, xq, n, pairs_end, r1, y);
}

}  // namespace

void avx512_q8_0x8_rows(const MatrixView& w, const float* x, const Q8Activations& xq, int64_t n, int64_t r0,
                        int64_t r1, float* y) {
  rows_x8<BlockQ8_0x8>(w, x, xq, n, r0, r1, y, avx2_q8_0x8_rows);
}

void avx512_q4_0x8_rows(const MatrixView& w, const float* x, const Q8Activations& xq, int64_t n, int64_t r0,
                        int64_t r1, float* y) {
  rows_x8<BlockQ4_0x8>(w, x, xq, n, r0, r1, y, avx2_q4_0x8_rows);
}

}  // namespace sluice::kernels::detail
