// Checks shared by the panel layouts' tests (F32 and BF16 row panels): every ISA this CPU runs
// gives the scalar kernel's results bit for bit, and one token's output is bit-identical
// whatever its batch, its place in the batch and the thread count.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "tests/kernels/cpu/kernel_test_util.h"

namespace sluice::kernels::test_util {

// matmul of w on x (n tokens) on every ISA equals `scalar` bit for bit.
inline void expect_every_isa_gives(const MatrixView& w, const std::vector<float>& x, int64_t n,
                                   const std::vector<float>& scalar) {
  for (Isa isa : isas()) {
    std::vector<float> y(scalar.size(), -1.0f);
    matmul(w, x.data(), n, y.data(), isa);
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(scalar[i]))
          << isa_name(isa) << " rows " << w.rows << " cols " << w.cols << " n " << n << " i " << i << ": " << y[i]
          << " vs " << scalar[i];
  }
}

inline void expect_one_tokens_output_independent_of_batch(const MatrixView& w) {
  const int64_t rows = w.rows, cols = w.cols;
  const auto probe = random_vec(size_t(cols), 5);
  for (Isa isa : isas()) {
    std::vector<float> solo(static_cast<size_t>(rows));
    matmul(w, probe.data(), 1, solo.data(), isa);
    for (int threads : {1, 2}) {
      MatmulRunner runner(threads, isa);
      const struct {
        int64_t n, pos;
      } batches[] = {{1, 0}, {3, 2}, {12, 11}, {13, 12}, {25, 7}, {49, 48}, {100, 61}};
      for (const auto& b : batches) {
        auto x = random_vec(size_t(b.n * cols), uint32_t(100 + b.n));
        std::copy(probe.begin(), probe.end(), x.begin() + b.pos * cols);
        std::vector<float> y(size_t(b.n * rows));
        runner.run(w, x.data(), b.n, y.data());
        for (int64_t r = 0; r < rows; ++r)
          ASSERT_EQ(std::bit_cast<uint32_t>(y[size_t(b.pos * rows + r)]), std::bit_cast<uint32_t>(solo[size_t(r)]))
              << isa_name(isa) << " threads " << threads << " n " << b.n << " row " << r;
      }
    }
  }
}

}  // namespace sluice::kernels::test_util
