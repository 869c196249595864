// text_attention against attention written the plain way in double precision, for the head
// sizes the model has (64, 128), one that is not a multiple of the vector width (40), and text
// lengths around the tiles' edges (1 to 128 tokens; tiles are 6 queries x 16 keys or features).
#include "inference/encoder/text_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace sluice::inference {
namespace {

// out[t][head_dim] for one head, from qkv rows laid out as text_attention reads them.
std::vector<double> plain_attention(const std::vector<float>& qkv, int64_t len, int64_t stride, int width, int head,
                                    int head_dim) {
  const int64_t q_at = int64_t(head) * head_dim, k_at = width + q_at, v_at = 2 * int64_t(width) + q_at;
  std::vector<double> out(size_t(len * head_dim), 0.0);
  std::vector<double> s(static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i) {
    double top = -1e300;
    for (int64_t j = 0; j < len; ++j) {
      double dot = 0;
      for (int d = 0; d < head_dim; ++d) dot += double(qkv[size_t(i * stride + q_at + d)]) * qkv[size_t(j * stride + k_at + d)];
      s[size_t(j)] = dot;
      top = std::max(top, dot);
    }
    double sum = 0;
    for (int64_t j = 0; j < len; ++j) sum += (s[size_t(j)] = std::exp(s[size_t(j)] - top));
    for (int64_t j = 0; j < len; ++j)
      for (int d = 0; d < head_dim; ++d)
        out[size_t(i * head_dim + d)] += s[size_t(j)] / sum * qkv[size_t(j * stride + v_at + d)];
  }
  return out;
}

TEST(TextAttention, MatchesPlainAttentionAtEveryTileEdge) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int head_dim : {64, 128, 40}) {
    const int heads = 2, width = heads * head_dim;
    const int64_t stride = 3 * int64_t(width);
    for (int64_t len : {1, 2, 5, 6, 7, 15, 16, 17, 22, 33, 64, 127, 128}) {
      std::vector<float> qkv(size_t(len * stride));
      for (float& v : qkv) v = normal(rng) * 0.5f;
      std::vector<float> out(size_t(len * width), -7.0f), scratch(size_t(text_attention_scratch(len, head_dim)), 99.0f);
      for (int head = 0; head < heads; ++head) {
        text_attention(qkv.data(), len, stride, width, head, head_dim, nullptr, 1.0f, out.data(), scratch.data());
        const std::vector<double> want = plain_attention(qkv, len, stride, width, head, head_dim);
        double worst = 0;
        for (int64_t t = 0; t < len; ++t)
          for (int d = 0; d < head_dim; ++d)
            worst = std::max(worst, std::abs(out[size_t(t * width + head * head_dim + d)] - want[size_t(t * head_dim + d)]));
        EXPECT_LT(worst, 1e-5) << "head_dim " << head_dim << ", " << len << " tokens, head " << head;
      }
    }
  }
}

TEST(TextAttention, WritesOnlyItsHeadsColumns) {
  const int head_dim = 64, width = 4 * head_dim;
  const int64_t len = 9, stride = 3 * int64_t(width);
  std::vector<float> qkv(size_t(len * stride), 0.25f);
  std::vector<float> out(size_t(len * width), -7.0f), scratch(size_t(text_attention_scratch(len, head_dim)));
  text_attention(qkv.data(), len, stride, width, 2, head_dim, nullptr, 1.0f, out.data(), scratch.data());
  for (int64_t t = 0; t < len; ++t)
    for (int c = 0; c < width; ++c) {
      const bool mine = c >= 2 * head_dim && c < 3 * head_dim;
      EXPECT_FLOAT_EQ(out[size_t(t * width + c)], mine ? 0.25f : -7.0f) << "token " << t << ", column " << c;
    }
}

// With the bias, the head's q, k and v columns get it in place and its q the scale, bit for bit
// a scalar loop's values, and the outputs are those of attention over the biased rows; the
// other heads' columns are untouched.
TEST(TextAttention, AddsTheHeadsBiasAndScalesItsQueriesInPlace) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int head_dim = 64, heads = 2, width = heads * head_dim, head = 1;
  const int64_t len = 22, stride = 3 * int64_t(width);
  const float scale = 0.125f;
  std::vector<float> raw(size_t(len * stride));
  std::vector<float> bias(static_cast<size_t>(stride));
  for (float& v : raw) v = normal(rng) * 0.5f;
  for (float& v : bias) v = normal(rng) * 0.1f;
  std::vector<float> biased = raw;  // the head's columns biased and scaled by a scalar loop
  for (int64_t t = 0; t < len; ++t)
    for (int part = 0; part < 3; ++part)
      for (int d = 0; d < head_dim; ++d) {
        const size_t at = size_t(part * width + head * head_dim + d);
        float& v = biased[size_t(t * stride) + at];
        v += bias[at];
        if (part == 0) v *= scale;
      }
  std::vector<float> scratch(size_t(text_attention_scratch(len, head_dim)));
  std::vector<float> want(size_t(len * width)), got(want.size());
  std::vector<float> ready = biased;
  text_attention(ready.data(), len, stride, width, head, head_dim, nullptr, 1.0f, want.data(), scratch.data());
  std::vector<float> in_place = raw;
  text_attention(in_place.data(), len, stride, width, head, head_dim, bias.data(), scale, got.data(), scratch.data());
  EXPECT_EQ(in_place, biased);
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace sluice::inference
