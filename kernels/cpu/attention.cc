#include "kernels/cpu/attention.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/elementwise.h"

namespace sluice::kernels {

void kv_store_rows(const KvLayerView& kv, const int32_t* block_table, int64_t pos0, int64_t n,
                   const float* k, const float* v) {
  for (int64_t t = 0; t < n; ++t) {
    const int64_t off = kv_row_offset(kv, block_table, pos0 + t);
    std::memcpy(kv.k + off, k + t * kv.kv_dim, size_t(kv.kv_dim) * 4);
    std::memcpy(kv.v + off, v + t * kv.kv_dim, size_t(kv.kv_dim) * 4);
  }
}

// Cloned per ISA (the loader picks the widest the CPU runs); `omp simd` lets the compiler
// vectorise the dot-product reductions without -ffast-math for the whole file.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void attention_head(const float* q, const KvLayerView& kv, const int32_t* block_table, int64_t pos,
                    int kv_head, int head_dim, float* scores, float* out) {
  const float scale = 1.0f / std::sqrt(float(head_dim));
  const int64_t head_off = int64_t(kv_head) * head_dim;
  // Walk block by block so the table is read once per block, not once per position.
  for (int64_t p0 = 0; p0 <= pos; p0 += kv.block_size) {
    const float* kb = kv.k + int64_t(block_table[p0 / kv.block_size]) * kv.block_size * kv.kv_dim + head_off;
    const int64_t m = std::min<int64_t>(kv.block_size, pos + 1 - p0);
    for (int64_t s = 0; s < m; ++s) {
      const float* kr = kb + s * kv.kv_dim;
      float dot = 0;
#pragma omp simd reduction(+ : dot)
      for (int d = 0; d < head_dim; ++d) dot += q[d] * kr[d];
      scores[p0 + s] = dot * scale;
    }
  }
  softmax_row(scores, pos + 1);
  for (int d = 0; d < head_dim; ++d) out[d] = 0;
  for (int64_t p0 = 0; p0 <= pos; p0 += kv.block_size) {
    const float* vb = kv.v + int64_t(block_table[p0 / kv.block_size]) * kv.block_size * kv.kv_dim + head_off;
    const int64_t m = std::min<int64_t>(kv.block_size, pos + 1 - p0);
    for (int64_t s = 0; s < m; ++s) {
      const float a = scores[p0 + s];
      const float* vr = vb + s * kv.kv_dim;
#pragma omp simd
      for (int d = 0; d < head_dim; ++d) out[d] += a * vr[d];
    }
  }
}

}  // namespace sluice::kernels
