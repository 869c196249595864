// The anchors' synthetic vector data (anchors.md): N x D float32 points, each a Gaussian
// cluster centre plus unit Gaussian noise, L2-normalised, so inner product is cosine. Shared by
// the retrieval benchmarks (bench/retrieval/vector_bench.cc, bench/vector/).
#pragma once

#include <tbb/parallel_for.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace sluice::bench {

inline std::vector<float> gaussian_centres(std::size_t count, std::size_t dim, std::uint64_t seed) {
  std::vector<float> centres(count * dim);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g;
  for (auto& c : centres) c = g(rng);
  return centres;
}

inline std::vector<float> clustered_unit_vectors(std::size_t n, std::size_t dim, const std::vector<float>& centres,
                                                 std::uint64_t seed) {
  std::vector<float> out(n * dim);
  const std::size_t nc = centres.size() / dim;
  tbb::parallel_for(std::size_t{0}, n, std::size_t{4096}, [&](std::size_t b) {
    std::mt19937_64 rng(seed * 1'000'003 + b);
    std::normal_distribution<float> g;
    for (std::size_t i = b; i < std::min(n, b + 4096); ++i) {
      const std::size_t c = rng() % nc;
      float* row = out.data() + i * dim;
      double sq = 0;
      for (std::size_t j = 0; j < dim; ++j) {
        row[j] = centres[c * dim + j] + g(rng);
        sq += double(row[j]) * row[j];
      }
      const float inv = sq > 0 ? float(1.0 / std::sqrt(sq)) : 0.f;
      for (std::size_t j = 0; j < dim; ++j) row[j] *= inv;
    }
  });
  return out;
}

}  // namespace sluice::bench
