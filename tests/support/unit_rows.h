// unit_rows: n seeded Gaussian rows of `dim` floats, each scaled to unit length (double sums),
// the vectors the vector-index tests search.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace sluice::testing {

inline std::vector<float> unit_rows(std::size_t n, std::size_t dim, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g;
  std::vector<float> v(n * dim);
  for (std::size_t i = 0; i < n; ++i) {
    float* row = v.data() + i * dim;
    double sq = 0;
    for (std::size_t j = 0; j < dim; ++j) {
      row[j] = g(rng);
      sq += double(row[j]) * row[j];
    }
    for (std::size_t j = 0; j < dim; ++j) row[j] = float(row[j] / std::sqrt(sq));
  }
  return v;
}

}  // namespace sluice::testing
