// AVX2 + FMA paged attention, flash-style: one pass over a head's key and value blocks with an
// online softmax (running max m, running sum l, unnormalised output O per query), so no
// score row as long as the context is written and each 16-position K/V block is read from
// memory once per tile of up to kAttentionTileTokens queries and reused from L1 by all of them.
// F32 or F16 pools (F16 widened with F16C as it is loaded: half the bytes, same arithmetic).
//
// Work units of up to 4 rows: a row is (query, key block). Prompt tiles use 4 queries x one
// block (the block's K and V loads serve 4 queries); decoding uses 1 query x 4 blocks (four
// independent FMA chains instead of one latency-bound chain).
//
// Batch invariance: for every query, every tile shape and unit shape runs the same operations
// in the same order: each score is one FMA chain over the features in order, blocks are
// folded into (m, l, O) one at a time in position order, and O's elements are one FMA chain
// over the block's slots. A query's output is therefore bit-identical whether it was decoded
// alone, prefilled in a tile of 16, or sat at any place in a tile. Masked slots contribute
// exact zeros (p = 0 selected, not computed), and slots past the last query are never read as
// values (they may hold stale data, NaN included).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/attention.h"

namespace sluice::kernels {
namespace {

constexpr int kBlock = 16;  // positions per KV block this kernel is written for

// e^x for 8 lanes: Cephes' expf as in elementwise.cc's exp_approx (|r| <= ln2/2, degree-6
// polynomial, 2^n from the exponent bits), input clamped to [-87, 88].
inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// 8 consecutive elements of the pool as floats: F32 as they are, F16 widened with F16C.
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// scores[r][0..16) = q_r . K_r (unscaled) for R rows; K blocks are feature-major (16 slots per
// feature). Each score is one FMA chain over the features in order.
template <int R, class E>
inline void block_scores(const float* const* q, const E* const* kb, int head_dim, float (*scores)[kBlock]) {
  __m256 lo[R], hi[R];
  for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
  for (int d = 0; d < head_dim; ++d) {
    for (int r = 0; r < R; ++r) {
      const __m256 qd = _mm256_broadcast_ss(q[r] + d);
      lo[r] = _mm256_fmadd_ps(qd, load8(kb[r] + d * kBlock), lo[r]);
      hi[r] = _mm256_fmadd_ps(qd, load8(kb[r] + d * kBlock + 8), hi[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(scores[r], lo[r]);
    _mm256_storeu_ps(scores[r] + 8, hi[r]);
  }
}

// The same for U queries against one block: each K vector is loaded (and, for F16, widened)
// once for all of them. Per score the same FMA chain as block_scores.
template <int U, class E>
inline void block_scores_shared(const float* const* q, const E* kb, int head_dim, float (*scores)[kBlock]) {
  __m256 lo[U], hi[U];
  for (int u = 0; u < U; ++u) lo[u] = hi[u] = _mm256_setzero_ps();
  for (int d = 0; d < head_dim; ++d) {
    const __m256 k_lo = load8(kb + d * kBlock), k_hi = load8(kb + d * kBlock + 8);
    for (int u = 0; u < U; ++u) {
      const __m256 qd = _mm256_broadcast_ss(q[u] + d);
      lo[u] = _mm256_fmadd_ps(qd, k_lo, lo[u]);
      hi[u] = _mm256_fmadd_ps(qd, k_hi, hi[u]);
    }
  }
  for (int u = 0; u < U; ++u) {
    _mm256_storeu_ps(scores[u], lo[u]);
    _mm256_storeu_ps(scores[u] + 8, hi[u]);
  }
}

// One query's running softmax state.
struct QueryState {
  float m;  // running max of the scaled scores
  float l;  // running sum of e^(score - m)
};

// Folds one block's scores (the first `visible` slots count) into a query's state: writes the
// block's weights p (zeros past `visible`) and returns alpha, the factor O must be scaled by.
inline float fold_block(const float* scores, int visible, float scale, QueryState& st, float* p) {
  const __m256 iota_lo = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 iota_hi = _mm256_setr_ps(8, 9, 10, 11, 12, 13, 14, 15);
  const __m256 vis = _mm256_set1_ps(float(visible));
  const __m256 mask_lo = _mm256_cmp_ps(iota_lo, vis, _CMP_LT_OQ), mask_hi = _mm256_cmp_ps(iota_hi, vis, _CMP_LT_OQ);
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256 s_lo = _mm256_blendv_ps(ninf, _mm256_mul_ps(_mm256_loadu_ps(scores), _mm256_set1_ps(scale)), mask_lo);
  const __m256 s_hi = _mm256_blendv_ps(ninf, _mm256_mul_ps(_mm256_loadu_ps(scores + 8), _mm256_set1_ps(scale)), mask_hi);
  const float m_new = std::max(st.m, hmax(_mm256_max_ps(s_lo, s_hi)));
  const __m256 mv = _mm256_set1_ps(m_new);
  const __m256 p_lo = _mm256_and_ps(exp8(_mm256_sub_ps(s_lo, mv)), mask_lo);
  const __m256 p_hi = _mm256_and_ps(exp8(_mm256_sub_ps(s_hi, mv)), mask_hi);
  _mm256_storeu_ps(p, p_lo);
  _mm256_storeu_ps(p + 8, p_hi);
  // exp(-inf - m) clamps to e^-87 (not 0); O and l are still 0 then, so it does not matter.
  // An unchanged max (most blocks of a long context) skips the exp: exp8(0) is exactly 1.
  const float alpha = m_new == st.m ? 1.0f : _mm256_cvtss_f32(exp8(_mm256_set1_ps(st.m - m_new)));
  st.l = st.l * alpha + hsum(_mm256_add_ps(p_lo, p_hi));
  st.m = m_new;
  return alpha;
}

// O_u = O_u * alpha_u + sum over slots s < n_slots of p_u[s] * V[s], for U queries, W ymm
// (8 features each) at a time. Per element: one multiply, then one FMA chain over the slots.
template <int U, int W, class E>
inline void accumulate_values(float* const* o, const float* const* p, const float* alpha, const E* vb,
                              int64_t v_stride, int n_slots, int head_dim) {
  for (int d0 = 0; d0 < head_dim; d0 += 8 * W) {
    __m256 acc[U][W];
    for (int u = 0; u < U; ++u)
      for (int w = 0; w < W; ++w)
        acc[u][w] = _mm256_mul_ps(_mm256_loadu_ps(o[u] + d0 + 8 * w), _mm256_set1_ps(alpha[u]));
    for (int s = 0; s < n_slots; ++s) {
      const E* vrow = vb + s * v_stride + d0;
      __m256 v[W];
      for (int w = 0; w < W; ++w) v[w] = load8(vrow + 8 * w);
      for (int u = 0; u < U; ++u) {
        const __m256 pu = _mm256_broadcast_ss(p[u] + s);
        for (int w = 0; w < W; ++w) acc[u][w] = _mm256_fmadd_ps(pu, v[w], acc[u][w]);
      }
    }
    for (int u = 0; u < U; ++u)
      for (int w = 0; w < W; ++w) _mm256_storeu_ps(o[u] + d0 + 8 * w, acc[u][w]);
  }
}

// One query's value update with W as wide as head_dim allows (independent chains).
template <class E>
inline void accumulate_values_one(float* o, const float* p, float alpha, const E* vb, int64_t v_stride,
                                  int n_slots, int head_dim) {
  if (head_dim % 64 == 0) accumulate_values<1, 8, E>(&o, &p, &alpha, vb, v_stride, n_slots, head_dim);
  else if (head_dim % 32 == 0) accumulate_values<1, 4, E>(&o, &p, &alpha, vb, v_stride, n_slots, head_dim);
  else if (head_dim % 16 == 0) accumulate_values<1, 2, E>(&o, &p, &alpha, vb, v_stride, n_slots, head_dim);
  else accumulate_values<1, 1, E>(&o, &p, &alpha, vb, v_stride, n_slots, head_dim);
}

// U (2..4) consecutive queries against one block: shared K loads in the scores, shared V loads
// in the values (two ymm of features per query at a time when head_dim allows).
template <int U, class E>
inline void tile_unit(const float* const* q, float* const* o, QueryState* st, const int* visible, const E* kb,
                      const E* vb, int64_t v_stride, int head_dim, float scale) {
  float scores[U][kBlock], p[U][kBlock], alpha[U];
  block_scores_shared<U, E>(q, kb, head_dim, scores);
  const float* pp[U];
  int n_slots = 0;
  for (int u = 0; u < U; ++u) {
    alpha[u] = fold_block(scores[u], std::clamp(visible[u], 0, kBlock), scale, st[u], p[u]);
    pp[u] = p[u];
    n_slots = std::max(n_slots, std::min(visible[u], kBlock));
  }
  if (head_dim % 16 == 0) accumulate_values<U, 2, E>(o, pp, alpha, vb, v_stride, n_slots, head_dim);
  else accumulate_values<U, 1, E>(o, pp, alpha, vb, v_stride, n_slots, head_dim);
}

}  // namespace

void kv_store_rows_f16c(const KvLayerView& kv, const int32_t* block_table, int64_t pos0, int64_t n, const float* k,
                        const float* v) {
  const int64_t bs = kv.block_size, dim = kv.kv_dim;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t pos = pos0 + t, block = block_table[pos / bs], slot = pos % bs;
    uint16_t* vh = static_cast<uint16_t*>(kv.v) + (block * bs + slot) * dim;
    uint16_t* kh = static_cast<uint16_t*>(kv.k) + block * dim * bs + slot;  // K: feature-major
    const float* vt = v + t * dim;
    const float* kt = k + t * dim;
    int64_t f = 0;
    for (; f + 8 <= dim; f += 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(vh + f), _mm256_cvtps_ph(_mm256_loadu_ps(vt + f), _MM_FROUND_TO_NEAREST_INT));
      alignas(16) uint16_t kk[8];
      _mm_store_si128(reinterpret_cast<__m128i*>(kk), _mm256_cvtps_ph(_mm256_loadu_ps(kt + f), _MM_FROUND_TO_NEAREST_INT));
      for (int i = 0; i < 8; ++i) kh[(f + i) * bs] = kk[i];
    }
    for (; f < dim; ++f) {
      vh[f] = uint16_t(_cvtss_sh(vt[f], _MM_FROUND_TO_NEAREST_INT));
      kh[f * bs] = uint16_t(_cvtss_sh(kt[f], _MM_FROUND_TO_NEAREST_INT));
    }
  }
}

bool attention_tile_supported(const KvLayerView& kv, int head_dim) {
  return (kv.type == DType::kF32 || kv.type == DType::kF16) && kv.block_size == kBlock && head_dim % 8 == 0 && head_dim > 0 && head_dim <= kAttentionMaxHeadDim;
}

namespace {

template <class E>
void attention_tile_impl(const float* q, int64_t q_stride, int n_tokens, const KvLayerView& kv,
                         const int32_t* block_table, int64_t pos_first, int kv_head, int head_dim, float* out,
                         int64_t out_stride) {
  const float scale = 1.0f / std::sqrt(float(head_dim));
  const int64_t dim = kv.kv_dim, head_off = int64_t(kv_head) * head_dim;
  const E* k_pool = static_cast<const E*>(kv.k);
  const E* v_pool = static_cast<const E*>(kv.v);
  auto k_block = [&](int64_t b) { return k_pool + (int64_t(block_table[b]) * dim + head_off) * kBlock; };
  auto v_block = [&](int64_t b) { return v_pool + int64_t(block_table[b]) * kBlock * dim + head_off; };
  alignas(32) float o_buf[kAttentionTileTokens * kAttentionMaxHeadDim];
  QueryState st[kAttentionTileTokens];
  const float* qs[kAttentionTileTokens];
  float* os[kAttentionTileTokens];
  for (int t = 0; t < n_tokens; ++t) {
    st[t] = {-std::numeric_limits<float>::infinity(), 0.0f};
    qs[t] = q + t * q_stride;
    os[t] = o_buf + t * head_dim;
    std::fill_n(os[t], head_dim, 0.0f);
  }
  const int64_t pos_last = pos_first + n_tokens - 1, n_blocks = pos_last / kBlock + 1;
  if (n_tokens == 1) {
    // Decoding: scores of up to 4 blocks at once (independent chains), folded in order.
    const int64_t full = pos_first / kBlock;  // blocks before the query's own block are whole
    for (int64_t b0 = 0; b0 < n_blocks; b0 += 4) {
      const int rows = int(std::min<int64_t>(4, n_blocks - b0));
      const E* kbs[4];
      for (int r = 0; r < rows; ++r) kbs[r] = k_block(b0 + r);
      const float* qq[4] = {qs[0], qs[0], qs[0], qs[0]};
      float scores[4][kBlock], p[kBlock];
      switch (rows) {
        case 4: block_scores<4, E>(qq, kbs, head_dim, scores); break;
        case 3: block_scores<3, E>(qq, kbs, head_dim, scores); break;
        case 2: block_scores<2, E>(qq, kbs, head_dim, scores); break;
        default: block_scores<1, E>(qq, kbs, head_dim, scores); break;
      }
      for (int r = 0; r < rows; ++r) {
        const int64_t b = b0 + r;
        const int visible = b < full ? kBlock : int(pos_first - b * kBlock + 1);
        const float alpha = fold_block(scores[r], visible, scale, st[0], p);
        accumulate_values_one(os[0], p, alpha, v_block(b), dim, visible, head_dim);
      }
    }
  } else {
    for (int64_t b = 0; b < n_blocks; ++b) {
      const E* kb = k_block(b);
      const E* vb = v_block(b);
      // Queries before this block's first position see none of it.
      int t = int(std::max<int64_t>(0, b * kBlock - pos_first));
      for (; t < n_tokens; t += 4) {
        const int units = std::min(4, n_tokens - t);
        int visible[4];
        for (int u = 0; u < units; ++u) visible[u] = int(std::min<int64_t>(kBlock, pos_first + t + u - b * kBlock + 1));
        switch (units) {
          case 4: tile_unit<4, E>(qs + t, os + t, st + t, visible, kb, vb, dim, head_dim, scale); break;
          case 3: tile_unit<3, E>(qs + t, os + t, st + t, visible, kb, vb, dim, head_dim, scale); break;
          case 2: tile_unit<2, E>(qs + t, os + t, st + t, visible, kb, vb, dim, head_dim, scale); break;
          default: {
            float scores[1][kBlock], p[kBlock];
            block_scores<1, E>(qs + t, &kb, head_dim, scores);
            const float alpha = fold_block(scores[0], visible[0], scale, st[t], p);
            accumulate_values_one(os[t], p, alpha, vb, dim, visible[0], head_dim);
          }
        }
      }
    }
  }
  for (int t = 0; t < n_tokens; ++t) {
    const __m256 inv = _mm256_set1_ps(1.0f / st[t].l);
    float* dst = out + t * out_stride;
    for (int d = 0; d < head_dim; d += 8) _mm256_storeu_ps(dst + d, _mm256_mul_ps(_mm256_loadu_ps(os[t] + d), inv));
  }
}

}  // namespace

void attention_tile_avx2(const float* q, int64_t q_stride, int n_tokens, const KvLayerView& kv,
                         const int32_t* block_table, int64_t pos_first, int kv_head, int head_dim, float* out,
                         int64_t out_stride) {
  if (kv.type == DType::kF16)
    attention_tile_impl<uint16_t>(q, q_stride, n_tokens, kv, block_table, pos_first, kv_head, head_dim, out, out_stride);
  else
    attention_tile_impl<float>(q, q_stride, n_tokens, kv, block_table, pos_first, kv_head, head_dim, out, out_stride);
}

}  // namespace sluice::kernels
