#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "nodes/retrieval/dense/exact_index.h"
#include "nodes/retrieval/dense/hnsw_index.h"
#include "nodes/retrieval/dense/lsa_embedder.h"
#include "nodes/retrieval/dense/randomized_svd.h"

namespace sluice::retrieval {
namespace {

std::vector<float> random_unit(std::size_t n, std::size_t dim, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  std::vector<float> v(n * dim);
  for (auto& x : v) x = g(rng);
  l2_normalize_rows(v.data(), n, dim);
  return v;
}

std::vector<ScoredDoc> brute(const std::vector<float>& data, std::size_t dim, const float* q, std::size_t k) {
  TopK top(k);
  for (std::size_t i = 0; i < data.size() / dim; ++i) {
    double s = 0;
    for (std::size_t j = 0; j < dim; ++j) s += static_cast<double>(data[i * dim + j]) * q[j];
    top.push(static_cast<DocIndex>(i), static_cast<float>(s));
  }
  return top.take_sorted();
}

TEST(ExactIndex, MatchesBruteForceForEveryBatchShape) {
  // Odd sizes: a partial last panel, query blocks of 8 + 4 + 2 + 1, dimension not a multiple of 16.
  const std::size_t dim = 37, n = 1000 + 7;
  const auto data = random_unit(n, dim, 1);
  const auto queries = random_unit(15, dim, 2);
  ExactIndex idx(dim);
  idx.add(data.data(), 500);
  idx.add(data.data() + 500 * dim, n - 500);
  ASSERT_EQ(idx.size(), n);
  for (std::size_t nq : {1u, 3u, 15u}) {
    const auto got = idx.search(queries.data(), nq, 10);
    for (std::size_t q = 0; q < nq; ++q) {
      const auto want = brute(data, dim, queries.data() + q * dim, 10);
      ASSERT_EQ(got[q].size(), 10u);
      for (std::size_t r = 0; r < 10; ++r) {
        EXPECT_EQ(got[q][r].doc, want[r].doc) << "kernel " << ExactIndex::kernel_name() << " q " << q;
        EXPECT_NEAR(got[q][r].score, want[r].score, 1e-4);
      }
    }
  }
  std::vector<float> v(dim);
  idx.vector(1003, v.data());
  EXPECT_FLOAT_EQ(v[5], data[1003 * dim + 5]);
}

TEST(ExactIndex, SaveLoadRoundTrip) {
  const std::size_t dim = 16;
  const auto data = random_unit(40, dim, 3);
  ExactIndex idx(dim);
  idx.add(data.data(), 40);
  std::stringstream s;
  idx.save(s);
  const auto back = ExactIndex::load(s);
  EXPECT_EQ(back->search(data.data(), 1, 1)[0][0].doc, 0u);
}

TEST(HnswIndex, FindsNearNeighboursAndPersists) {
  const std::size_t dim = 24, n = 2000;
  const auto data = random_unit(n, dim, 4);
  HnswIndex idx(dim, HnswOptions{16, 100, 64, 1});
  idx.add(data.data(), n);
  EXPECT_EQ(idx.size(), n);
  const auto queries = random_unit(20, dim, 5);
  const auto got = idx.search(queries.data(), 20, 10);
  std::size_t hit = 0;
  for (std::size_t q = 0; q < 20; ++q) {
    const auto want = brute(data, dim, queries.data() + q * dim, 10);
    for (const auto& w : want)
      for (const auto& g : got[q]) hit += g.doc == w.doc;
  }
  EXPECT_GE(hit / 200.0, 0.9);
  std::stringstream s;
  idx.save(s);
  const auto back = HnswIndex::load(s);
  EXPECT_EQ(back->size(), n);
  EXPECT_EQ(back->search(data.data() + 7 * dim, 1, 1)[0][0].doc, 7u);
}

TEST(RandomizedSvd, RecoversALowRankMatrix) {
  // X = outer products of 3 known directions with weights 5, 3, 1.
  SparseRows x;
  x.rows = 60;
  x.cols = 40;
  std::mt19937 rng(6);
  std::normal_distribution<double> g;
  std::vector<double> u(60 * 3), v(40 * 3);
  for (auto& a : u) a = g(rng);
  for (auto& a : v) a = g(rng);
  const double w[3] = {5, 3, 1};
  for (std::size_t i = 0; i < 60; ++i) {
    for (std::uint32_t j = 0; j < 40; ++j) {
      double s = 0;
      for (int r = 0; r < 3; ++r) s += w[r] * u[i * 3 + r] * v[j * 3 + r];
      x.col.push_back(j);
      x.val.push_back(s);
    }
    x.row_ptr.push_back(x.val.size());
  }
  const auto svd = randomized_svd(x, SvdOptions{5, 5, 3, 1});
  ASSERT_EQ(svd.rank, 5u);
  EXPECT_GT(svd.singular_values[2], 1.0);
  EXPECT_LT(svd.singular_values[3], 1e-6 * svd.singular_values[0]);
  // Right vectors are orthonormal.
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) {
      double d = 0;
      for (std::size_t j = 0; j < 40; ++j) d += svd.right_vectors[j * 5 + a] * svd.right_vectors[j * 5 + b];
      EXPECT_NEAR(d, a == b ? 1.0 : 0.0, 1e-8);
    }
  }
}

TEST(LsaEmbedder, RelatedTextsAreCloserAndModelPersists) {
  const std::vector<std::string> corpus = {
      "wing lift drag airfoil", "airfoil lift at high angle", "wing drag reduction",
      "heat transfer in slabs", "conduction of heat in composite slabs", "slab temperature heat flux",
      "boundary layer transition", "laminar boundary layer flow", "turbulent boundary layer"};
  LsaOptions o;
  o.dimensions = 4;
  const auto e = LsaEmbedder::fit(corpus, o);
  EXPECT_EQ(e->dimension(), 4u);
  const auto v = e->embed({"lift of a wing", "heat in a slab", "airfoil drag", "zzzz unknown"});
  auto dot = [&](int a, int b) {
    float s = 0;
    for (int i = 0; i < 4; ++i) s += v[a * 4 + i] * v[b * 4 + i];
    return s;
  };
  EXPECT_GT(dot(0, 2), dot(0, 1));
  EXPECT_NEAR(dot(0, 0), 1.0f, 1e-5);
  EXPECT_FLOAT_EQ(dot(3, 3), 0.0f);  // unknown words embed to zero
  std::stringstream s;
  e->save(s);
  const auto back = LsaEmbedder::load(s);
  const auto w = back->embed({"lift of a wing"});
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(w[i], v[i]);
  EXPECT_EQ(e->count_tokens("the lift, of a wing"), 5u);
}

}  // namespace
}  // namespace sluice::retrieval
