// RMSNorm, RoPE, SwiGLU, softmax and paged attention against plain scalar references.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "tests/kernels/cpu/kernel_test_util.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/elementwise.h"

namespace sluice::kernels {
namespace {

using test_util::random_vec;

TEST(Elementwise, RmsNorm) {
  const auto x = random_vec(37, 1), w = random_vec(37, 2);
  std::vector<float> y(37);
  rms_norm_row(x.data(), w.data(), 37, 1e-5f, y.data());
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  const double s = 1.0 / std::sqrt(ss / 37 + 1e-5);
  for (int i = 0; i < 37; ++i) EXPECT_NEAR(y[size_t(i)], x[size_t(i)] * s * w[size_t(i)], 1e-5);
}

TEST(Elementwise, RopeRotatesAdjacentPairsOfTheFirstNRotFeatures) {
  const int heads = 2, hd = 8, n_rot = 6;
  auto x = random_vec(heads * hd, 3);
  const auto orig = x;
  rope_row(x.data(), heads, hd, n_rot, 5, 10000.0f);
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < hd / 2; ++i) {
      const float a = orig[size_t(h * hd + 2 * i)], b = orig[size_t(h * hd + 2 * i + 1)];
      float ea = a, eb = b;
      if (2 * i < n_rot) {
        const double th = 5.0 * std::pow(10000.0, -2.0 * i / n_rot);
        ea = float(a * std::cos(th) - b * std::sin(th));
        eb = float(a * std::sin(th) + b * std::cos(th));
      }
      EXPECT_NEAR(x[size_t(h * hd + 2 * i)], ea, 1e-5);
      EXPECT_NEAR(x[size_t(h * hd + 2 * i + 1)], eb, 1e-5);
    }
  // Position 0 is the identity.
  auto y = orig;
  rope_row(y.data(), heads, hd, n_rot, 0, 10000.0f);
  EXPECT_EQ(y, orig);
}

TEST(Elementwise, SwigluAndSoftmax) {
  auto g = random_vec(20, 4);
  const auto u = random_vec(20, 5), g0 = g;
  swiglu_row(g.data(), u.data(), 20);
  for (int i = 0; i < 20; ++i) EXPECT_NEAR(g[size_t(i)], g0[size_t(i)] / (1 + std::exp(-g0[size_t(i)])) * u[size_t(i)], 1e-6);
  std::vector<float> s = {1000.0f, 1000.0f, -1000.0f};  // max-subtracted: no overflow
  softmax_row(s.data(), 3);
  EXPECT_NEAR(s[0], 0.5f, 1e-6);
  EXPECT_NEAR(s[1], 0.5f, 1e-6);
  EXPECT_NEAR(s[2], 0.0f, 1e-6);
}

// Paged attention with a scrambled block table equals dense causal attention over the same
// keys and values, for grouped-query heads and for several query tokens at once.
// Two layouts: small blocks (the portable path) and 16-position blocks with head sizes that are
// multiples of 8 (the flash-style tiles of up to 16 queries).
void check_paged_attention(int block, int hd, int positions, int first_query) {
  const int n_heads = 4, n_kv = 2, kv_dim = n_kv * hd;
  const int blocks = (positions + block - 1) / block;
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  for (int b = 0; b < blocks; ++b) table[size_t(b)] = (b * 5 + 3) % blocks;  // scrambled (blocks % 5 != 0)
  std::vector<float> kpool(size_t(blocks * block * kv_dim), NAN), vpool(kpool.size(), NAN);
  const KvLayerView kv{kpool.data(), vpool.data(), block, kv_dim};
  const auto k = random_vec(size_t(positions * kv_dim), 6), v = random_vec(size_t(positions * kv_dim), 7);
  const auto q = random_vec(size_t(positions * n_heads * hd), 8);
  const int nq = positions - first_query;
  for (int threads : {1, 2}) {
    CpuBackend be(threads);
    be.kv_store(kv, table.data(), 0, first_query, k.data(), v.data());  // prefix, then the rest
    be.kv_store(kv, table.data(), first_query, nq, k.data() + first_query * kv_dim, v.data() + first_query * kv_dim);
    std::vector<float> out(size_t(nq * n_heads * hd));
    be.attention(q.data() + first_query * n_heads * hd, kv, table.data(), first_query, nq, {n_heads, n_kv, hd}, out.data());
    for (int t = 0; t < nq; ++t) {
      const int pos = first_query + t;
      for (int h = 0; h < n_heads; ++h) {
        const float* qh = q.data() + size_t((pos * n_heads + h) * hd);
        const int kvh = h / (n_heads / n_kv);
        std::vector<double> sc(size_t(pos + 1));
        double mx = -1e300;
        for (int p = 0; p <= pos; ++p) {
          double d = 0;
          for (int i = 0; i < hd; ++i) d += double(qh[i]) * k[size_t(p * kv_dim + kvh * hd + i)];
          sc[size_t(p)] = d / std::sqrt(double(hd));
          mx = std::max(mx, sc[size_t(p)]);
        }
        double sum = 0;
        for (auto& s : sc) sum += s = std::exp(s - mx);
        for (int i = 0; i < hd; ++i) {
          double o = 0;
          for (int p = 0; p <= pos; ++p) o += sc[size_t(p)] / sum * v[size_t(p * kv_dim + kvh * hd + i)];
          ASSERT_NEAR(out[size_t((t * n_heads + h) * hd + i)], o, 1e-5)
              << "block " << block << " hd " << hd << " t " << t << " h " << h;
        }
      }
    }
  }
}

// The backend splits a batch's SwiGLU across threads (chunks and a ragged end): the same bits
// as one pass.
TEST(Elementwise, ThreadedSwigluMatchesOnePass) {
  const int64_t count = 3 * 8192 + 1000;
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> gate(static_cast<size_t>(count)), up(gate.size());
  for (auto& x : gate) x = d(rng);
  for (auto& x : up) x = d(rng);
  std::vector<float> want = gate, got = gate;
  swiglu_row(want.data(), up.data(), count);
  CpuBackend be(2);
  be.swiglu(got.data(), up.data(), count);
  EXPECT_EQ(got, want);
}

TEST(Attention, PagedMatchesDenseCausalAttention) {
  check_paged_attention(4, 16, 23, 20);   // generic path, 3 queries
  check_paged_attention(16, 32, 45, 30);  // vector path: tiles of 4, 4, 4, 3 queries across blocks
  check_paged_attention(16, 48, 37, 36);  // decoding: one query
  check_paged_attention(16, 8, 20, 0);    // head size below 16: generic, whole prompt
  check_paged_attention(16, 64, 90, 0);   // whole prompt in tiles of 16 x 5 and 10 queries (6 blocks)
  check_paged_attention(16, 64, 100, 37); // a chunk after a prefix: 63 queries, 4 tiles
}

}  // namespace
}  // namespace sluice::kernels

namespace sluice::kernels {
namespace {

TEST(Elementwise, ExpApproximationIsWithinAFewUlp) {
  for (float x = -87.0f; x < 88.0f; x += 0.0137f) {
    const double ref = std::exp(double(x));
    ASSERT_NEAR(exp_for_tests(x) / ref, 1.0, 4e-7) << x;
  }
  EXPECT_GE(exp_for_tests(-1000.0f), 0.0f);  // clamped, no NaN or negative
  EXPECT_TRUE(std::isfinite(exp_for_tests(1000.0f)));
}

}  // namespace
}  // namespace sluice::kernels
