#include "kernels/cpu/elementwise.h"

#include <bit>
#include <cmath>
#include <cstdint>

namespace sluice::kernels {
namespace {

// e^x from Cephes' expf: x = n ln2 + r, |r| <= ln2/2, a degree-6 polynomial for e^r and 2^n
// built in the exponent bits. Within 2 ulp of expf over [-87, 88]; written without calls or
// branches so `omp simd` loops vectorise it.
inline float exp_approx(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);  // not fmin/fmax: those stay calls
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return p * std::bit_cast<float>((int32_t(n) + 127) << 23);
}

}  // namespace

float exp_for_tests(float x) { return exp_approx(x); }

void rms_norm_row(const float* x, const float* weight, int64_t dim, float eps, float* out) {
  double ss = 0;
  for (int64_t i = 0; i < dim; ++i) ss += double(x[i]) * x[i];
  const float scale = 1.0f / std::sqrt(float(ss / double(dim)) + eps);
  for (int64_t i = 0; i < dim; ++i) out[i] = x[i] * scale * weight[i];
}

void rope_row(float* x, int n_heads, int head_dim, int n_rot, int64_t pos, float freq_base) {
  float cs[512], sn[512];  // n_rot / 2 <= 512: checked by the model loader
  const int half = n_rot / 2;
  for (int i = 0; i < half; ++i) {
    const float freq = 1.0f / std::pow(freq_base, float(2 * i) / float(n_rot));
    const float theta = float(pos) * freq;
    cs[i] = std::cos(theta);
    sn[i] = std::sin(theta);
  }
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + int64_t(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const float a = v[2 * i], b = v[2 * i + 1];
      v[2 * i] = a * cs[i] - b * sn[i];
      v[2 * i + 1] = a * sn[i] + b * cs[i];
    }
  }
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void swiglu_row(float* gate, const float* up, int64_t count) {
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + exp_approx(-g)) * up[i];
  }
}

// Cloned per ISA; the `omp simd` loops vectorise exp_approx.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void softmax_row(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) {
    x[i] = exp_approx(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace sluice::kernels
