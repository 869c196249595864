#include "inference/encoder/text_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace sluice::inference {
namespace {

constexpr int kLanes = 16;   // keys (scores) or features (outputs) per vector
constexpr int kQueries = 6;  // queries per tile: 6 accumulators fit the registers of every clone but the baseline

// GCC's generic vectors: one zmm in the x86-64-v4 clone, two ymm in v3, four xmm in the baseline.
typedef float F32x16 __attribute__((vector_size(64)));

__attribute__((always_inline)) inline F32x16 load16(const float* p) {
  F32x16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

__attribute__((always_inline)) inline void store16(float* p, F32x16 v) { std::memcpy(p, &v, sizeof v); }

int64_t padded_keys(int64_t len) { return (len + kLanes - 1) / kLanes * kLanes; }

}  // namespace

int64_t text_attention_scratch(int64_t len, int head_dim) { return (int64_t(head_dim) + len) * padded_keys(len); }

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void text_attention(float* qkv, int64_t len, int64_t stride, int width, int head, int head_dim, const float* bias,
                    float query_scale, float* out, float* scratch) {
  if (len <= 0) return;
  const int64_t lp = padded_keys(len);
  float* kt = scratch;                  // head_dim x lp: k transposed, the keys past len zero
  float* probs = scratch + head_dim * lp;  // len x lp: scores, then probabilities
  const int64_t q_at = int64_t(head) * head_dim, k_at = width + q_at, v_at = 2 * int64_t(width) + q_at;
  if (bias) {
    for (int64_t t = 0; t < len; ++t) {
      float* row = qkv + t * stride;
      for (const int64_t at : {k_at, v_at}) {
#pragma omp simd
        for (int d = 0; d < head_dim; ++d) row[at + d] += bias[at + d];
      }
#pragma omp simd
      for (int d = 0; d < head_dim; ++d) row[q_at + d] += bias[q_at + d];
#pragma omp simd
      for (int d = 0; d < head_dim; ++d) row[q_at + d] *= query_scale;
    }
  }
  for (int d = 0; d < head_dim; ++d) std::fill(kt + d * lp + len, kt + (d + 1) * lp, 0.0f);
  for (int64_t j = 0; j < len; ++j) {
    const float* k = qkv + j * stride + k_at;
    for (int d = 0; d < head_dim; ++d) kt[d * lp + j] = k[d];
  }
  // Rows of a tile past the text's end repeat its last query; their results are not stored.
  auto tile_rows = [&](int64_t i0, const float* base, int64_t row_stride, const float* (&rows)[kQueries]) {
    for (int r = 0; r < kQueries; ++r) rows[r] = base + std::min<int64_t>(i0 + r, len - 1) * row_stride;
  };

  // Scores: each sum runs over the features in order, as a scalar loop would.
  for (int64_t i0 = 0; i0 < len; i0 += kQueries) {
    const float* q[kQueries];
    tile_rows(i0, qkv + q_at, stride, q);
    for (int64_t j0 = 0; j0 < lp; j0 += kLanes) {
      F32x16 acc[kQueries] = {};
      for (int d = 0; d < head_dim; ++d) {
        const F32x16 keys = load16(kt + d * lp + j0);
#pragma GCC unroll 6
        for (int r = 0; r < kQueries; ++r) acc[r] += q[r][d] * keys;
      }
#pragma GCC unroll 6
      for (int r = 0; r < kQueries; ++r)
        if (i0 + r < len) store16(probs + (i0 + r) * lp + j0, acc[r]);
    }
  }
  // Softmax over each query's len keys.
  for (int64_t i = 0; i < len; ++i) {
    float* s = probs + i * lp;
    float top = s[0];
    for (int64_t j = 1; j < len; ++j) top = s[j] > top ? s[j] : top;
    float sum = 0;
    for (int64_t j = 0; j < len; ++j) sum += (s[j] = std::exp(s[j] - top));
    const float inv = 1.0f / sum;
#pragma omp simd
    for (int64_t j = 0; j < len; ++j) s[j] *= inv;
  }
  // Outputs: the probability-weighted sum of v over the keys in order.
  for (int64_t i0 = 0; i0 < len; i0 += kQueries) {
    const float* pr[kQueries];
    tile_rows(i0, probs, lp, pr);
    int d0 = 0;
    for (; d0 + kLanes <= head_dim; d0 += kLanes) {
      F32x16 acc[kQueries] = {};
      for (int64_t j = 0; j < len; ++j) {
        const F32x16 v = load16(qkv + j * stride + v_at + d0);
#pragma GCC unroll 6
        for (int r = 0; r < kQueries; ++r) acc[r] += pr[r][j] * v;
      }
#pragma GCC unroll 6
      for (int r = 0; r < kQueries; ++r)
        if (i0 + r < len) store16(out + (i0 + r) * width + q_at + d0, acc[r]);
    }
    for (; d0 < head_dim; ++d0)  // features past the last whole vector (head_dim not a multiple of 16)
      for (int r = 0; r < kQueries && i0 + r < len; ++r) {
        float sum = 0;
        for (int64_t j = 0; j < len; ++j) sum += pr[r][j] * qkv[j * stride + v_at + d0];
        out[(i0 + r) * width + q_at + d0] = sum;
      }
  }
}

}  // namespace sluice::inference
