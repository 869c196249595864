// The flash-style attention tiles (kernels/cpu/attention_avx2.cc) against a straightforward
// double-precision causal softmax attention, and their batch invariance: a query's output is
// bit-identical whether it was decoded alone or computed at any place in a tile.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/cpu_features.h"

namespace sluice::kernels {
namespace {

constexpr int kBlock = 16;

// Keys and values for `positions` positions of two KV heads in a paged pool with a scrambled
// block table. Slots past the last position hold NaN: a kernel that reads them as values (or
// lets their scores through) poisons its output.
struct PagedKv {
  int hd, kv_dim, positions;
  std::vector<int32_t> table;
  std::vector<float> kpool, vpool, k, v;  // k, v: dense rows, positions x kv_dim
  KvLayerView view() { return KvLayerView{kpool.data(), vpool.data(), kBlock, kv_dim}; }

  PagedKv(int head_dim, int n_positions) : hd(head_dim), kv_dim(2 * head_dim), positions(n_positions) {
    const int blocks = (positions + kBlock - 1) / kBlock + 1;  // one spare block, never referenced
    std::mt19937 rng(11);
    for (int b = 0; b < blocks; ++b) table.push_back(b);
    std::shuffle(table.begin(), table.end(), rng);
    kpool.assign(size_t(blocks * kBlock * kv_dim), NAN);
    vpool.assign(kpool.size(), NAN);
    std::normal_distribution<float> d(0.0f, 1.0f);
    k.resize(size_t(positions * kv_dim));
    v.resize(k.size());
    for (auto& x : k) x = d(rng);
    for (auto& x : v) x = d(rng);
    kv_store_rows(view(), table.data(), 0, positions, k.data(), v.data());
  }

  // Query at position `pos` of KV head `kvh`, in double precision.
  std::vector<double> reference(const float* q, int64_t pos, int kvh) const {
    std::vector<double> sc(size_t(pos + 1)), out(size_t(hd), 0.0);
    double mx = -1e300, sum = 0;
    for (int64_t p = 0; p <= pos; ++p) {
      double dot = 0;
      for (int i = 0; i < hd; ++i) dot += double(q[i]) * k[size_t(p * kv_dim + kvh * hd + i)];
      sc[size_t(p)] = dot / std::sqrt(double(hd));
      mx = std::max(mx, sc[size_t(p)]);
    }
    for (auto& s : sc) sum += s = std::exp(s - mx);
    for (int64_t p = 0; p <= pos; ++p)
      for (int i = 0; i < hd; ++i) out[size_t(i)] += sc[size_t(p)] / sum * v[size_t(p * kv_dim + kvh * hd + i)];
    return out;
  }
};

class AttentionTile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (detected_isa() == Isa::kScalar) GTEST_SKIP() << "the tiles need AVX2 and FMA";
  }
};

TEST_F(AttentionTile, SupportsSixteenPositionBlocksAndHeadSizesOfEightFloats) {
  float dummy = 0;
  EXPECT_TRUE(attention_tile_supported(KvLayerView{&dummy, &dummy, 16, 128}, 64));
  EXPECT_TRUE(attention_tile_supported(KvLayerView{&dummy, &dummy, 16, 80}, 40));
  EXPECT_FALSE(attention_tile_supported(KvLayerView{&dummy, &dummy, 8, 128}, 64));    // block size
  EXPECT_FALSE(attention_tile_supported(KvLayerView{&dummy, &dummy, 16, 24}, 12));    // head size
  EXPECT_FALSE(attention_tile_supported(KvLayerView{&dummy, &dummy, 16, 1024}, 512));  // too wide
}

// Every tile size 1..16 at first positions on, before, and after block boundaries; head sizes
// that take the 64-, 32-, 16- and 8-feature value paths.
TEST_F(AttentionTile, MatchesDenseCausalAttention) {
  for (int hd : {64, 32, 48, 40}) {
    PagedKv kv(hd, 300);
    std::mt19937 rng(5);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> q(size_t(kAttentionTileTokens * hd)), out(q.size());
    for (int64_t first : {0, 1, 14, 15, 16, 17, 31, 47, 100, 255, 283}) {
      for (int n = 1; n <= kAttentionTileTokens; ++n) {
        if (first + n > kv.positions) continue;
        for (auto& x : q) x = d(rng);
        for (int kvh : {0, 1}) {
          attention_tile_avx2(q.data(), hd, n, kv.view(), kv.table.data(), first, kvh, hd, out.data(), hd);
          for (int t = 0; t < n; ++t) {
            const auto ref = kv.reference(q.data() + t * hd, first + t, kvh);
            for (int i = 0; i < hd; ++i)
              ASSERT_NEAR(out[size_t(t * hd + i)], ref[size_t(i)], 2e-5)
                  << "hd " << hd << " first " << first << " n " << n << " t " << t << " kv head " << kvh << " i " << i;
          }
        }
      }
    }
  }
}

// A query decoded alone gives exactly the bits it gets inside any tile (the serving engine's
// batched == solo and preempt-and-resume exactness rest on this).
TEST_F(AttentionTile, AQuerysOutputDoesNotDependOnItsTile) {
  const int hd = 64;
  PagedKv kv(hd, 200);
  std::mt19937 rng(9);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> q(size_t(200 * hd));
  for (auto& x : q) x = d(rng);
  std::vector<float> alone(q.size()), tiled(size_t(kAttentionTileTokens * hd));
  for (int64_t pos = 0; pos < 200; ++pos)
    attention_tile_avx2(q.data() + pos * hd, hd, 1, kv.view(), kv.table.data(), pos, 1, hd, alone.data() + pos * hd, hd);
  for (int64_t first : {0, 3, 16, 29, 150, 184}) {
    for (int n = 2; n <= kAttentionTileTokens; ++n) {
      attention_tile_avx2(q.data() + first * hd, hd, n, kv.view(), kv.table.data(), first, 1, hd, tiled.data(), hd);
      EXPECT_EQ(std::memcmp(tiled.data(), alone.data() + first * hd, size_t(n * hd) * sizeof(float)), 0)
          << "first " << first << " n " << n;
    }
  }
}

}  // namespace
}  // namespace sluice::kernels
