// The flash-style attention tiles (kernels/cpu/attention_avx2.cc) against a straightforward
// double-precision causal softmax attention, on F32 and F16 pools, and their batch invariance:
// a query's output is bit-identical whether it was decoded alone or computed at any place in a
// tile. F16 pools also through the portable path and the backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/quant_blocks.h"

namespace sluice::kernels {
namespace {

constexpr int kBlock = 16;

// Keys and values for `positions` positions of two KV heads in a paged pool with a scrambled
// block table, elements of `type`. Slots past the last position hold NaN (all bits set, NaN
// in F32 and F16): a kernel that reads them as values (or lets their scores through) poisons
// its output.
struct PagedKv {
  int hd, kv_dim, positions;
  DType type;
  std::vector<int32_t> table;
  std::vector<float> kpool, vpool;  // raw storage (F16 uses the first half)
  std::vector<float> k, v;          // dense rows, positions x kv_dim, as stored (F16-rounded)
  KvLayerView view() { return KvLayerView{kpool.data(), vpool.data(), kBlock, kv_dim, type}; }

  PagedKv(int head_dim, int n_positions, DType t = DType::kF32)
      : hd(head_dim), kv_dim(2 * head_dim), positions(n_positions), type(t) {
    const int blocks = (positions + kBlock - 1) / kBlock + 1;  // one spare block, never referenced
    std::mt19937 rng(11);
    for (int b = 0; b < blocks; ++b) table.push_back(b);
    std::shuffle(table.begin(), table.end(), rng);
    kpool.resize(size_t(blocks * kBlock * kv_dim));
    vpool.resize(kpool.size());
    std::memset(kpool.data(), 0xff, kpool.size() * sizeof(float));
    std::memset(vpool.data(), 0xff, vpool.size() * sizeof(float));
    std::normal_distribution<float> d(0.0f, 1.0f);
    k.resize(size_t(positions * kv_dim));
    v.resize(k.size());
    for (auto& x : k) x = d(rng);
    for (auto& x : v) x = d(rng);
    kv_store_rows(view(), table.data(), 0, positions, k.data(), v.data());
    if (type == DType::kF16)
      for (auto* rows : {&k, &v})
        for (auto& x : *rows) x = fp16_to_fp32(fp32_to_fp16(x));
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
  for (DType type : {DType::kF32, DType::kF16})
  for (int hd : {64, 32, 48, 40}) {
    PagedKv kv(hd, 300, type);
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
                  << "type " << int(type) << " hd " << hd << " first " << first << " n " << n << " t " << t << " kv head " << kvh << " i " << i;
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
  for (DType type : {DType::kF32, DType::kF16}) {
  PagedKv kv(hd, 200, type);
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
          << "type " << int(type) << " first " << first << " n " << n;
    }
  }
  }
}

TEST(KvStore, F16PoolsHoldEachValueRoundedToNearestHalfInTheLayout) {
  PagedKv kv(16, 40, DType::kF16);
  const auto* kh = reinterpret_cast<const uint16_t*>(kv.kpool.data());
  const auto* vh = reinterpret_cast<const uint16_t*>(kv.vpool.data());
  for (int p = 0; p < 40; ++p)
    for (int f = 0; f < kv.kv_dim; ++f) {
      const int64_t block = kv.table[size_t(p / kBlock)], slot = p % kBlock;
      ASSERT_EQ(fp16_to_fp32(kh[(block * kv.kv_dim + f) * kBlock + slot]), kv.k[size_t(p * kv.kv_dim + f)]);
      ASSERT_EQ(fp16_to_fp32(vh[(block * kBlock + slot) * kv.kv_dim + f]), kv.v[size_t(p * kv.kv_dim + f)]);
    }
}

// The F16C store writes exactly the portable store's bits, extreme values included.
TEST(KvStore, F16cStoreEqualsThePortableOne) {
  if (detected_isa() == Isa::kScalar) GTEST_SKIP() << "needs F16C";
  const int dim = 44, n = 37;  // not a multiple of 8: the tail too
  std::vector<float> k(size_t(n * dim)), v(k.size());
  std::mt19937 rng(4);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (auto& x : k) x = d(rng);
  for (auto& x : v) x = d(rng) * 1e-5f;  // subnormal halves
  k[0] = 70000.0f, k[1] = -1e-9f, v[2] = 65504.0f, v[3] = 6.1e-5f;
  const std::vector<int32_t> table = {2, 0, 1};
  std::vector<uint16_t> ka(size_t(3 * 16 * dim)), va(ka.size()), kb(ka.size()), vb(ka.size());
  kv_store_rows(KvLayerView{ka.data(), va.data(), 16, dim, DType::kF16}, table.data(), 3, n, k.data(), v.data());
  kv_store_rows_f16c(KvLayerView{kb.data(), vb.data(), 16, dim, DType::kF16}, table.data(), 3, n, k.data(), v.data());
  EXPECT_EQ(ka, kb);
  EXPECT_EQ(va, vb);
}

// F16 pools through the backend: the portable path (scalar ISA, and any head size) and the
// tiles agree with the reference, grouped-query heads included.
TEST(Attention, F16PoolsMatchTheReferenceOnEveryPath) {
  for (int hd : {8, 64}) {
    PagedKv kv(hd, 77, DType::kF16);
    const int n_heads = 4, first = 50, n = 27;  // 2 KV heads, so query heads pair up
    std::mt19937 rng(3);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> q(size_t(n * n_heads * hd)), out(q.size());
    for (auto& x : q) x = d(rng);
    for (Isa isa : {Isa::kScalar, detected_isa()}) {
      CpuBackend be(2, isa);
      be.attention(q.data(), kv.view(), kv.table.data(), first, n, {n_heads, 2, hd}, out.data());
      for (int t = 0; t < n; ++t)
        for (int h = 0; h < n_heads; ++h) {
          const auto ref = kv.reference(q.data() + (t * n_heads + h) * hd, first + t, h / 2);
          for (int i = 0; i < hd; ++i)
            ASSERT_NEAR(out[size_t((t * n_heads + h) * hd + i)], ref[size_t(i)], 2e-5)
                << "isa " << isa_name(isa) << " hd " << hd << " t " << t << " h " << h;
        }
    }
  }
}

// A continuous-batching step's attention in one launch: every segment's output is the same
// bits as its own attention() call, with decoding (1 query), prefill chunks (tiles and their
// remainders), an empty segment and several threads, on each path.
TEST(Attention, BatchedSegmentsMatchOneCallEach) {
  for (DType type : {DType::kF32, DType::kF16}) {
    PagedKv kv(64, 90, type);
    const int n_heads = 4, stride = n_heads * 64;
    // Segments share the pool (as sequences share the engine's) and attend to prefixes of it.
    const struct {
      int64_t pos0, n;
    } shapes[] = {{89, 1}, {40, 21}, {10, 0}, {0, 16}, {70, 1}, {33, 3}};
    std::mt19937 rng(9);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<std::vector<float>> q, batched, single;
    for (const auto& sh : shapes) {
      q.emplace_back(size_t(std::max<int64_t>(1, sh.n) * stride));
      for (auto& x : q.back()) x = d(rng);
      batched.emplace_back(q.back().size(), -7.0f);
      single.emplace_back(q.back().size(), -7.0f);
    }
    for (Isa isa : {Isa::kScalar, detected_isa()}) {
      CpuBackend be(2, isa);
      std::vector<AttentionSegment> segs;
      for (size_t i = 0; i < std::size(shapes); ++i) {
        segs.push_back({q[i].data(), kv.table.data(), shapes[i].pos0, shapes[i].n, batched[i].data()});
        be.attention(q[i].data(), kv.view(), kv.table.data(), shapes[i].pos0, shapes[i].n, {n_heads, 2, 64}, single[i].data());
      }
      be.attention_batch(kv.view(), segs.data(), segs.size(), {n_heads, 2, 64});
      for (size_t i = 0; i < segs.size(); ++i)
        ASSERT_EQ(0, std::memcmp(batched[i].data(), single[i].data(), batched[i].size() * sizeof(float)))
            << "segment " << i << " isa " << isa_name(isa) << " type " << dtype_name(type);
    }
  }
}

}  // namespace
}  // namespace sluice::kernels
