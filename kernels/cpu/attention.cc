#include "kernels/cpu/attention.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/elementwise.h"
#include "kernels/quant_blocks.h"

namespace sluice::kernels {

void kv_store_rows(const KvLayerView& kv, const int32_t* block_table, int64_t pos0, int64_t n,
                   const float* k, const float* v) {
  const int64_t bs = kv.block_size, dim = kv.kv_dim;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t pos = pos0 + t, block = block_table[pos / bs], slot = pos % bs;
    const int64_t v_at = (block * bs + slot) * dim, k_at = block * dim * bs + slot;  // K: feature-major
    if (kv.type == DType::kF16) {
      uint16_t* vh = static_cast<uint16_t*>(kv.v) + v_at;
      uint16_t* kh = static_cast<uint16_t*>(kv.k) + k_at;
      for (int64_t f = 0; f < dim; ++f) vh[f] = fp32_to_fp16(v[t * dim + f]);
      for (int64_t f = 0; f < dim; ++f) kh[f * bs] = fp32_to_fp16(k[t * dim + f]);
      continue;
    }
    std::memcpy(static_cast<float*>(kv.v) + v_at, v + t * dim, size_t(dim) * 4);
    float* kb = static_cast<float*>(kv.k) + k_at;
    for (int64_t f = 0; f < dim; ++f) kb[f * bs] = k[t * dim + f];
  }
}

namespace {

// attention_head over an F16 pool: the same computation in plain scalar code (the portable
// path; CPUs with AVX2 take attention_tile_avx2).
void attention_head_f16(const float* q, const KvLayerView& kv, const int32_t* block_table, int64_t pos,
                        int kv_head, int head_dim, float* scores, float* out) {
  const float scale = 1.0f / std::sqrt(float(head_dim));
  const int64_t bs = kv.block_size, dim = kv.kv_dim, head_off = int64_t(kv_head) * head_dim;
  const uint16_t* k = static_cast<const uint16_t*>(kv.k);
  const uint16_t* v = static_cast<const uint16_t*>(kv.v);
  for (int64_t p = 0; p <= pos; ++p) {
    const uint16_t* kb = k + (int64_t(block_table[p / bs]) * dim + head_off) * bs + p % bs;
    float dot = 0;
    for (int d = 0; d < head_dim; ++d) dot += q[d] * fp16_to_fp32(kb[d * bs]);
    scores[p] = dot * scale;
  }
  softmax_row(scores, pos + 1);
  for (int d = 0; d < head_dim; ++d) out[d] = 0;
  for (int64_t p = 0; p <= pos; ++p) {
    const uint16_t* vr = v + (int64_t(block_table[p / bs]) * bs + p % bs) * dim + head_off;
    for (int d = 0; d < head_dim; ++d) out[d] += scores[p] * fp16_to_fp32(vr[d]);
  }
}

}  // namespace

namespace {

// 16 floats as one vector value: GCC lowers it to one zmm on AVX-512, two ymm on AVX2, scalars
// otherwise; being a value (not memory) it stays in registers across the feature loop.
typedef float F16x __attribute__((vector_size(64), aligned(4)));
__attribute__((always_inline)) inline F16x load16(const float* p) {
  F16x v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

// Cloned per ISA (the loader picks the widest the CPU runs).
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void attention_head(const float* q, const KvLayerView& kv, const int32_t* block_table, int64_t pos,
                    int kv_head, int head_dim, float* scores, float* out) {
  if (kv.type == DType::kF16) return attention_head_f16(q, kv, block_table, pos, kv_head, head_dim, scores, out);
  const float scale = 1.0f / std::sqrt(float(head_dim));
  const int64_t bs = kv.block_size, dim = kv.kv_dim, head_off = int64_t(kv_head) * head_dim;
  const float* kv_k = static_cast<const float*>(kv.k);
  const float* kv_v = static_cast<const float*>(kv.v);
  for (int64_t p0 = 0; p0 <= pos; p0 += bs) {
    const float* kb = kv_k + (int64_t(block_table[p0 / bs]) * dim + head_off) * bs;
    const int64_t m = std::min<int64_t>(bs, pos + 1 - p0);
    if (bs == 16) {
      // Whole block in one vector; slots past m hold stale values and are never stored.
      // Four independent sums: one chain would wait on the FMA latency every step.
      F16x a0 = {}, a1 = {}, a2 = {}, a3 = {};
      int d = 0;
      for (; d + 4 <= head_dim; d += 4) {
        a0 += q[d] * load16(kb + d * 16);
        a1 += q[d + 1] * load16(kb + (d + 1) * 16);
        a2 += q[d + 2] * load16(kb + (d + 2) * 16);
        a3 += q[d + 3] * load16(kb + (d + 3) * 16);
      }
      for (; d < head_dim; ++d) a0 += q[d] * load16(kb + d * 16);
      const F16x acc = ((a0 + a1) + (a2 + a3)) * scale;
      std::memcpy(scores + p0, &acc, sizeof acc);  // whole vector: `scores` has 16 spare slots
      continue;
    }
    for (int64_t s = 0; s < m; ++s) {
      float dot = 0;
      for (int d = 0; d < head_dim; ++d) dot += q[d] * kb[d * bs + s];
      scores[p0 + s] = dot * scale;
    }
  }
  softmax_row(scores, pos + 1);
  for (int d0 = 0; d0 < head_dim; d0 += 16) {
    if (d0 + 16 <= head_dim) {
      F16x a0 = {}, a1 = {}, a2 = {}, a3 = {};
      for (int64_t p0 = 0; p0 <= pos; p0 += bs) {
        const float* vb = kv_v + (int64_t(block_table[p0 / bs]) * bs) * dim + head_off + d0;
        const float* sc = scores + p0;
        const int64_t m = std::min<int64_t>(bs, pos + 1 - p0);
        int64_t s = 0;
        for (; s + 4 <= m; s += 4) {
          a0 += sc[s] * load16(vb + s * dim);
          a1 += sc[s + 1] * load16(vb + (s + 1) * dim);
          a2 += sc[s + 2] * load16(vb + (s + 2) * dim);
          a3 += sc[s + 3] * load16(vb + (s + 3) * dim);
        }
        for (; s < m; ++s) a0 += sc[s] * load16(vb + s * dim);
      }
      const F16x acc = (a0 + a1) + (a2 + a3);
      std::memcpy(out + d0, &acc, sizeof acc);
      continue;
    }
    for (int d = d0; d < head_dim; ++d) {  // head sizes that are not a multiple of 16
      float acc = 0;
      for (int64_t p = 0; p <= pos; ++p)
        acc += scores[p] * kv_v[(int64_t(block_table[p / bs]) * bs + p % bs) * dim + head_off + d];
      out[d] = acc;
    }
  }
}

}  // namespace sluice::kernels
