#include "kernels/cpu/elementwise.h"

#include <cmath>

namespace sluice::kernels {

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

void swiglu_row(float* gate, const float* up, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void softmax_row(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace sluice::kernels
