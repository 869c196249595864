// AVX2 matmul on weights interleaved by 8 rows (kQ8_0x8, kQ4_0x8; quant_x8.h) against Q8_0
// activations. Compiled with AVX2 flags; called only when the CPU reports AVX2 and FMA.
//
// A tile is one group of 8 rows x NT tokens (NT = 4; 3, 2, 1 for the remainder). Per block:
// - Q8_0x8, for each of the 8 four-column slices: one load of the 8 rows' slice and |w| once,
//   then per token a broadcast of its 4 activations, vpsignb + vpmaddubsw + vpmaddwd and an
//   integer add, so lane i holds row i's dot product;
// - Q4_0x8, for each of the 4 loads: the low and high nibbles (two slices) as unsigned bytes,
//   then per token two broadcasts and two vpmaddubsw whose pair sums (at most 2 x 15 x 127)
//   add up in 16 bits over the whole block (8 x 3,810 < 2^15), one vpmaddwd at the end, and
//   -8 x the block's activation sum added back (the nibbles carry +8).
// Then per token one conversion, one product of scales (8 rows' d times the token's d) and one
// FMA. The row-major tiles spend 6 vector operations per row, token and Q8_0 block plus a
// horizontal sum; these about 4.5 (Q8_0) and 2.5 (Q4_0).
//
// Arithmetic per (row, token), whatever the tile: acc = fma(float(dot_j), d_w * d_x, acc) over
// blocks j in column order, dot_j the exact integer dot product of the block. The scalar
// kernels for the interleaved types (matmul.cc) compute the same, so the two agree bit for bit,
// and a token's output does not depend on its batch (the serving engine's batch invariance).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/matmul_tiles.h"
#include "kernels/cpu/quant_x8.h"
#include "kernels/quant_blocks.h"

namespace sluice::kernels::detail {
namespace {

constexpr int kMaxTokens = 4;  // 4 integer + 4 float accumulators and the shared operands fit 16 registers
// Decoding streams the weights from DRAM once per token: prefetch this far ahead in the
// (contiguous) group stream. 8 KiB read from DRAM as fast as the row-major decode tile; 1-4 KiB
// were 5-12% slower.
constexpr int64_t kPrefetchBytes = 8192;

inline __m256i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline void prefetch_ahead(const void* p, const char* stream_end) {
  const char* ahead = static_cast<const char*>(p) + kPrefetchBytes;
  if (ahead < stream_end) _mm_prefetch(ahead, _MM_HINT_T0);  // not past this thread's rows
}

template <class Block, int NT>
inline void tile(const Block* group, int64_t nb, const Q8Activations& xq, int64_t cols, int64_t t0, float* y,
                 int64_t rows, const char* stream_end) {
  constexpr bool kQ4 = sizeof(Block) == sizeof(BlockQ4_0x8);
  const int8_t* xs[NT];
  const float* xd[NT];
  const int32_t* xsum[NT];
  _Pragma("GCC unroll 8")
  for (int t = 0; t < NT; ++t) {
    xs[t] = xq.qs.data() + (t0 + t) * cols;
    xd[t] = xq.d.data() + (t0 + t) * (cols / kQuantBlock);
    xsum[t] = xq.neg8sum.data() + (t0 + t) * (cols / kQuantBlock);
  }
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[NT];
  _Pragma("GCC unroll 8")
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t j = 0; j < nb; ++j) {
    const Block& b = group[j];
    __m256i dot[NT];
    if constexpr (kQ4) {
      const __m256i low = _mm256_set1_epi8(0x0f);
      __m256i sum16[NT];
      _Pragma("GCC unroll 8")
      for (int t = 0; t < NT; ++t) sum16[t] = _mm256_setzero_si256();
      _Pragma("GCC unroll 4")
      for (int m = 0; m < 4; ++m) {
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * m));
        if (NT == 1 && (m & 1) == 0) prefetch_ahead(b.qs + 32 * m, stream_end);
        const __m256i lo = _mm256_and_si256(raw, low), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);
        _Pragma("GCC unroll 8")
        for (int t = 0; t < NT; ++t) {
          const __m256i plo = _mm256_maddubs_epi16(lo, broadcast4(xs[t] + 32 * j + 4 * m));
          const __m256i phi = _mm256_maddubs_epi16(hi, broadcast4(xs[t] + 32 * j + 16 + 4 * m));
          sum16[t] = _mm256_add_epi16(sum16[t], _mm256_add_epi16(plo, phi));
        }
      }
      _Pragma("GCC unroll 8")
      for (int t = 0; t < NT; ++t)
        dot[t] = _mm256_add_epi32(_mm256_madd_epi16(sum16[t], ones), _mm256_set1_epi32(xsum[t][j]));
    } else {
      _Pragma("GCC unroll 8")
      for (int t = 0; t < NT; ++t) dot[t] = _mm256_setzero_si256();
      _Pragma("GCC unroll 8")
      for (int m = 0; m < 8; ++m) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * m));
        if (NT == 1 && (m & 1) == 0) prefetch_ahead(b.qs + 32 * m, stream_end);
        // |w| as unsigned bytes (128 for -128, exact), the sign moved onto x: pair sums stay
        // below 2 * 128 * 127 < 2^15, so vpmaddubsw never saturates.
        const __m256i aw = _mm256_sign_epi8(w, w);
        _Pragma("GCC unroll 8")
        for (int t = 0; t < NT; ++t) {
          const __m256i x4 = broadcast4(xs[t] + 32 * j + 4 * m);
          dot[t] = _mm256_add_epi32(dot[t], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(x4, w)), ones));
        }
      }
    }
    const __m256 wd = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.d)));
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; ++t)
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[t]), _mm256_mul_ps(wd, _mm256_broadcast_ss(xd[t] + j)), acc[t]);
  }
  _Pragma("GCC unroll 8")
  for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + (t0 + t) * rows, acc[t]);
}

template <class Block, int NT>
inline void token_tiles(const Block* group, int64_t nb, const Q8Activations& xq, int64_t cols, int64_t tb, int64_t te,
                        float* y, int64_t rows, const char* stream_end) {
  int64_t t = tb;
  for (; t + NT <= te; t += NT) tile<Block, NT>(group, nb, xq, cols, t, y, rows, stream_end);
  if constexpr (NT > 1) {
    if (t < te) token_tiles<Block, NT - 1>(group, nb, xq, cols, t, te, y, rows, stream_end);
  }
}

// Rows [r0, r1), both multiples of 8. Tokens in blocks of kTokenBlock (their activations stay
// in L2 while the groups stream past), as the row-major kernels walk them.
template <class Block>
void rows_x8(const MatrixView& w, const Q8Activations& xq, int64_t n, int64_t r0, int64_t r1, float* y) {
  const int64_t nb = w.cols / kQuantBlock;
  const auto* blocks = static_cast<const Block*>(w.data);
  const char* stream_end = reinterpret_cast<const char*>(blocks + r1 / kX8Rows * nb);
  for (int64_t tb = 0; tb < n; tb += kTokenBlock) {
    const int64_t te = std::min(n, tb + kTokenBlock);
    for (int64_t r = r0; r < r1; r += kX8Rows)
      token_tiles<Block, kMaxTokens>(blocks + r / kX8Rows * nb, nb, xq, w.cols, tb, te, y + r, w.rows, stream_end);
  }
}

}  // namespace

void avx2_q8_0x8_rows(const MatrixView& w, const float*, const Q8Activations& xq, int64_t n, int64_t r0, int64_t r1,
                      float* y) {
  rows_x8<BlockQ8_0x8>(w, xq, n, r0, r1, y);
}

void avx2_q4_0x8_rows(const MatrixView& w, const float*, const Q8Activations& xq, int64_t n, int64_t r0, int64_t r1,
                      float* y) {
  rows_x8<BlockQ4_0x8>(w, xq, n, r0, r1, y);
}

}  // namespace sluice::kernels::detail
