#include "nodes/retrieval/dense/randomized_svd.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "graph/visible_parallel_for.h"

namespace sluice::retrieval {
namespace {

// Dense row-major matrix of doubles.
struct Dense {
  std::size_t rows = 0, cols = 0;
  std::vector<double> a;
  Dense(std::size_t r, std::size_t c) : rows(r), cols(c), a(r * c, 0.0) {}
  double* row(std::size_t i) { return a.data() + i * cols; }
  const double* row(std::size_t i) const { return a.data() + i * cols; }
};

// y = X * m  (x.rows x m.cols)
Dense times(const SparseRows& x, const Dense& m) {
  Dense y(x.rows, m.cols);
  visible_parallel_for(std::size_t{0}, x.rows, [&](std::size_t i) {
    double* out = y.row(i);
    for (std::size_t p = x.row_ptr[i]; p < x.row_ptr[i + 1]; ++p) {
      const double v = x.val[p];
      const double* in = m.row(x.col[p]);
      for (std::size_t c = 0; c < m.cols; ++c) out[c] += v * in[c];
    }
  });
  return y;
}

// y = X^T * m  (x.cols x m.cols); scattered writes, so serial over rows of X.
Dense transpose_times(const SparseRows& x, const Dense& m) {
  Dense y(x.cols, m.cols);
  for (std::size_t i = 0; i < x.rows; ++i) {
    const double* in = m.row(i);
    for (std::size_t p = x.row_ptr[i]; p < x.row_ptr[i + 1]; ++p) {
      const double v = x.val[p];
      double* out = y.row(x.col[p]);
      for (std::size_t c = 0; c < m.cols; ++c) out[c] += v * in[c];
    }
  }
  return y;
}

// Orthonormalises the columns of m in place (modified Gram-Schmidt, two passes for stability).
// Works on a column-major copy so each column is contiguous. Columns that vanish stay zero.
void orthonormalize_columns(Dense& m) {
  const std::size_t n = m.rows, l = m.cols;
  std::vector<double> c(n * l);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < l; ++j) c[j * n + i] = m.a[i * l + j];
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t j = 0; j < l; ++j) {
      double* cj = c.data() + j * n;
      // Project out earlier columns; the dot products are independent, so compute them in
      // parallel, then subtract (classical GS within a pass, repeated: CGS2).
      std::vector<double> dots(j);
      visible_parallel_for(std::size_t{0}, j, [&](std::size_t p) {
        const double* cp = c.data() + p * n;
        double d = 0;
        for (std::size_t i = 0; i < n; ++i) d += cp[i] * cj[i];
        dots[p] = d;
      });
      for (std::size_t p = 0; p < j; ++p) {
        const double* cp = c.data() + p * n;
        const double d = dots[p];
        for (std::size_t i = 0; i < n; ++i) cj[i] -= d * cp[i];
      }
      double norm = 0;
      for (std::size_t i = 0; i < n; ++i) norm += cj[i] * cj[i];
      norm = std::sqrt(norm);
      const double inv = norm > 1e-12 ? 1.0 / norm : 0.0;
      for (std::size_t i = 0; i < n; ++i) cj[i] *= inv;
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < l; ++j) m.a[i * l + j] = c[j * n + i];
}

// Eigen-decomposition of a symmetric l x l matrix by cyclic Jacobi rotations.
// On return `s` is diagonal (eigenvalues) and `v` holds eigenvectors as columns.
void jacobi_eigen(std::vector<double>& s, std::vector<double>& v, std::size_t l) {
  v.assign(l * l, 0.0);
  for (std::size_t i = 0; i < l; ++i) v[i * l + i] = 1.0;
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0, diag = 0;
    for (std::size_t i = 0; i < l; ++i) {
      diag += s[i * l + i] * s[i * l + i];
      for (std::size_t j = i + 1; j < l; ++j) off += s[i * l + j] * s[i * l + j];
    }
    if (off <= 1e-22 * diag) break;
    for (std::size_t p = 0; p < l; ++p) {
      for (std::size_t q = p + 1; q < l; ++q) {
        const double apq = s[p * l + q];
        if (std::abs(apq) < 1e-300) continue;
        const double app = s[p * l + p], aqq = s[q * l + q];
        const double theta = (aqq - app) / (2 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double cs = 1 / std::sqrt(t * t + 1), sn = t * cs;
        for (std::size_t k = 0; k < l; ++k) {  // rows p, q
          const double skp = s[k * l + p], skq = s[k * l + q];
          s[k * l + p] = cs * skp - sn * skq;
          s[k * l + q] = sn * skp + cs * skq;
        }
        for (std::size_t k = 0; k < l; ++k) {  // columns p, q
          const double spk = s[p * l + k], sqk = s[q * l + k];
          s[p * l + k] = cs * spk - sn * sqk;
          s[q * l + k] = sn * spk + cs * sqk;
        }
        for (std::size_t k = 0; k < l; ++k) {
          const double vkp = v[k * l + p], vkq = v[k * l + q];
          v[k * l + p] = cs * vkp - sn * vkq;
          v[k * l + q] = sn * vkp + cs * vkq;
        }
      }
    }
  }
}

}  // namespace

TruncatedSvd randomized_svd(const SparseRows& x, const SvdOptions& options) {
  TruncatedSvd out;
  const std::size_t max_rank = std::min(x.rows, x.cols);
  const std::size_t rank = std::min(options.rank, max_rank);
  const std::size_t l = std::min(rank + options.oversample, max_rank);
  if (rank == 0) return out;
  Dense omega(x.cols, l);
  std::mt19937_64 rng(options.seed);
  std::normal_distribution<double> gauss;
  for (double& w : omega.a) w = gauss(rng);
  Dense q = times(x, omega);  // rows x l
  orthonormalize_columns(q);
  for (std::size_t it = 0; it < options.power_iterations; ++it) {
    Dense z = transpose_times(x, q);  // cols x l
    orthonormalize_columns(z);
    q = times(x, z);
    orthonormalize_columns(q);
  }
  // B = Q^T X (l x cols); keep Bt = X^T Q (cols x l). B B^T = Bt^T Bt.
  const Dense bt = transpose_times(x, q);
  std::vector<double> gram(l * l, 0.0);
  visible_parallel_for(std::size_t{0}, l, [&](std::size_t i) {
    for (std::size_t j = i; j < l; ++j) {
      double d = 0;
      for (std::size_t r = 0; r < bt.rows; ++r) d += bt.a[r * l + i] * bt.a[r * l + j];
      gram[i * l + j] = d;
      gram[j * l + i] = d;
    }
  });
  std::vector<double> w;
  jacobi_eigen(gram, w, l);
  std::vector<std::size_t> order(l);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return gram[a * l + a] > gram[b * l + b]; });
  out.rank = rank;
  out.singular_values.resize(rank);
  out.right_vectors.assign(x.cols * rank, 0.0);
  for (std::size_t r = 0; r < rank; ++r) {
    const std::size_t e = order[r];
    const double sigma = std::sqrt(std::max(0.0, gram[e * l + e]));
    out.singular_values[r] = sigma;
    if (sigma <= 0) continue;
    // v_r = Bt * w_e / sigma
    for (std::size_t j = 0; j < x.cols; ++j) {
      double d = 0;
      const double* bj = bt.row(j);
      for (std::size_t c = 0; c < l; ++c) d += bj[c] * w[c * l + e];
      out.right_vectors[j * rank + r] = d / sigma;
    }
  }
  return out;
}

}  // namespace sluice::retrieval
