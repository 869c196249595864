#include "inference/encoder/encoder_rows.h"

#include <algorithm>
#include <cmath>

namespace sluice::inference::rows {

#define SLUICE_ROW_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

SLUICE_ROW_CLONES void layer_norm(const float* x, const float* scale, const float* bias, int n, float eps, float* out) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int i = 0; i < n; ++i) sum += x[i];
  const float mean = sum / float(n);
  float sq = 0;
#pragma omp simd reduction(+ : sq)
  for (int i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const float inv = 1.0f / std::sqrt(sq / float(n) + eps);
#pragma omp simd
  for (int i = 0; i < n; ++i) out[i] = scale[i] * inv * (x[i] - mean) + bias[i];
}

SLUICE_ROW_CLONES void add_biased(float* x, const float* f, const float* b, int n) {
#pragma omp simd
  for (int i = 0; i < n; ++i) x[i] = (f[i] + b[i]) + x[i];
}

SLUICE_ROW_CLONES void sum_biased(float* o, const float* ob, const float* r, const float* rb, int n) {
#pragma omp simd
  for (int i = 0; i < n; ++i) o[i] = (o[i] + ob[i]) + (r[i] + rb[i]);
}

SLUICE_ROW_CLONES void relu_biased(float* r, const float* b, int n) {
#pragma omp simd
  for (int i = 0; i < n; ++i) r[i] = std::max(0.0f, r[i] + b[i]);
}

SLUICE_ROW_CLONES void add_twice_with(float* x, const float* t, int n) {
#pragma omp simd
  for (int i = 0; i < n; ++i) x[i] = x[i] + (x[i] + t[i]);
}

namespace {
// The sums of a whole block of kBlock columns, a compile-time width so they stay in registers.
constexpr int kBlock = 64;
template <bool kRelu>
__attribute__((always_inline)) inline void column_sums(const float* rows, int64_t count, int64_t stride, const float* b,
                                                       int n, float* sum) {
  float acc[kBlock] = {};
  if (n == kBlock) {
    for (int64_t k = 0; k < count; ++k) {
      const float* r = rows + k * stride;
#pragma omp simd
      for (int i = 0; i < kBlock; ++i) acc[i] += kRelu ? std::max(0.0f, r[i] + b[i]) : r[i];
    }
  } else {
    for (int64_t k = 0; k < count; ++k) {
      const float* r = rows + k * stride;
#pragma omp simd
      for (int i = 0; i < n; ++i) acc[i] += kRelu ? std::max(0.0f, r[i] + b[i]) : r[i];
    }
  }
  // After every row is read: sum may be one of the rows.
#pragma omp simd
  for (int i = 0; i < n; ++i) sum[i] = acc[i];
}
}  // namespace

SLUICE_ROW_CLONES void column_mean(const float* rows, int64_t count, int64_t stride, const float* b, int n, float* out) {
  if (b) {
    column_sums<true>(rows, count, stride, b, n, out);
  } else {
    column_sums<false>(rows, count, stride, b, n, out);
  }
  const float c = float(std::max<int64_t>(count, 1));
#pragma omp simd
  for (int i = 0; i < n; ++i) out[i] /= c;
}

}  // namespace sluice::inference::rows
