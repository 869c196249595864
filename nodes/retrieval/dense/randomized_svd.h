// Truncated SVD of a sparse matrix by the randomized range finder (Halko, Martinsson & Tropp
// 2011, Algorithms 4.4 + 5.1): sample the range with a Gaussian test matrix, sharpen it with
// power iterations (re-orthonormalised each half step), then solve the small problem exactly.
// Only the right singular vectors and singular values are returned: that is what folding new
// text into the latent space needs. Deterministic for a given seed. Not thread-safe per call
// (uses oneTBB internally for the large products).
#pragma once

#include <cstdint>
#include <vector>

namespace sluice::retrieval {

// Compressed sparse rows: row i holds (col[p], val[p]) for p in [row_ptr[i], row_ptr[i+1]).
struct SparseRows {
  std::size_t rows = 0, cols = 0;
  std::vector<std::size_t> row_ptr{0};
  std::vector<std::uint32_t> col;
  std::vector<double> val;
};

struct SvdOptions {
  std::size_t rank = 256;
  std::size_t oversample = 10;
  std::size_t power_iterations = 5;
  std::uint64_t seed = 42;
};

struct TruncatedSvd {
  std::size_t rank = 0;                 // may be < requested when the matrix is smaller
  std::vector<double> singular_values;  // descending, `rank` of them
  std::vector<double> right_vectors;    // cols x rank, row-major: row j is term j's coordinates
};

TruncatedSvd randomized_svd(const SparseRows& x, const SvdOptions& options);

}  // namespace sluice::retrieval
