#include "inference/encoder/text_attention.h"

#include <cmath>

namespace sluice::inference {

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void text_attention(const float* qkv, int64_t len, int64_t stride, int width, int head, int head_dim, float* out,
                    float* scratch) {
  float* kt = scratch;                         // head_dim x len
  float* scores = scratch + head_dim * len;    // len
  const int64_t q_at = int64_t(head) * head_dim, k_at = width + q_at, v_at = 2 * int64_t(width) + q_at;
  for (int64_t j = 0; j < len; ++j) {
    const float* k = qkv + j * stride + k_at;
    for (int d = 0; d < head_dim; ++d) kt[d * len + j] = k[d];
  }
  for (int64_t i = 0; i < len; ++i) {
    const float* q = qkv + i * stride + q_at;
#pragma omp simd
    for (int64_t j = 0; j < len; ++j) scores[j] = 0.0f;
    for (int d = 0; d < head_dim; ++d) {
      const float qd = q[d];
      const float* row = kt + d * len;
#pragma omp simd
      for (int64_t j = 0; j < len; ++j) scores[j] += qd * row[j];
    }
    float top = scores[0];
    for (int64_t j = 1; j < len; ++j) top = scores[j] > top ? scores[j] : top;
    float sum = 0;
    for (int64_t j = 0; j < len; ++j) sum += (scores[j] = std::exp(scores[j] - top));
    const float inv = 1.0f / sum;
    float* o = out + i * width + q_at;
#pragma omp simd
    for (int d = 0; d < head_dim; ++d) o[d] = 0.0f;
    for (int64_t j = 0; j < len; ++j) {
      const float p = scores[j] * inv;
      const float* v = qkv + j * stride + v_at;
#pragma omp simd
      for (int d = 0; d < head_dim; ++d) o[d] += p * v[d];
    }
  }
}

}  // namespace sluice::inference
