// kQ8_0x8 and kQ4_0x8, the 8-row interleaved layouts: interleaving keeps every weight, every
// ISA's kernel computes exactly the scalar interleaved arithmetic, which agrees with the
// row-major kernels within float rounding, and a token's output is bit-identical whatever its
// batch, thread count or launch (one matrix or several on a shared input).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_x8.h"
#include "kernels/cpu/weight_memory.h"
#include "kernels/quant_blocks.h"
#include "tests/kernels/cpu/kernel_test_util.h"

namespace sluice::kernels {
namespace {

using test_util::isas;
using test_util::random_vec;

struct QuantMatrix {
  DType type;
  int64_t rows, cols;
  std::vector<uint8_t> bytes;
  MatrixView view() const { return {type, bytes.data(), rows, cols}; }
};

QuantMatrix quant_matrix(DType type, int64_t rows, int64_t cols, uint32_t seed) {
  const auto w = random_vec(size_t(rows * cols), seed);
  const int64_t rb = dtype_row_bytes(type, cols);
  QuantMatrix m{type, rows, cols, std::vector<uint8_t>(size_t(rows * rb))};
  for (int64_t r = 0; r < rows; ++r) quantize_row(type, w.data() + r * cols, m.bytes.data() + r * rb, cols);
  // Extremes: a -128 Q8_0 quant (never written by the quantiser, legal in a file); for Q4_0 the
  // nibbles 0 and 15 (weights -8 and +7).
  m.bytes[2] = type == DType::kQ8_0 ? 0x80 : 0xf0;
  return m;
}

// An interleaved copy in its own memory, as the model keeps one in WeightMemory.
struct Interleaved {
  explicit Interleaved(const MatrixView& w) : memory(size_t(x8_bytes(w))), packed(interleave_x8(w, memory.data())) {}
  MatrixView view() const { return packed; }
  WeightMemory memory;
  MatrixView packed;
};

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

constexpr DType kTypes[] = {DType::kQ8_0, DType::kQ4_0};

TEST(QuantX8, InterleavingKeepsEveryWeight) {
  for (DType type : kTypes) {
    const QuantMatrix m = quant_matrix(type, 24, 96, 1);
    const Interleaved x8(m.view());
    EXPECT_EQ(x8.view().type, x8_type(type));
    EXPECT_TRUE(is_x8(x8.view().type));
    EXPECT_EQ(size_t(x8_bytes(m.view())), m.bytes.size());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(x8.memory.data()) % (size_t(2) << 20), 0u);  // huge-page aligned
    CpuBackend backend(1);
    std::vector<float> want(96), got(96);
    for (int64_t r = 0; r < m.rows; ++r) {
      dequantize_row(type, m.bytes.data() + r * dtype_row_bytes(type, 96), want.data(), 96);
      backend.get_row(x8.view(), r, got.data());
      ASSERT_EQ(want, got) << dtype_name(type) << " row " << r;
    }
  }
}

TEST(QuantX8, RefusesWhatCannotBeInterleaved) {
  const QuantMatrix m = quant_matrix(DType::kQ8_0, 12, 64, 2);
  EXPECT_FALSE(can_interleave_x8(m.view()));  // 12 rows: not whole groups of 8
  std::vector<uint8_t> out(m.bytes.size());
  EXPECT_THROW(interleave_x8(m.view(), out.data()), std::invalid_argument);
  std::vector<float> f(8 * 64);
  EXPECT_FALSE(can_interleave_x8({DType::kF32, f.data(), 8, 64}));
  EXPECT_TRUE(can_interleave_x8({DType::kQ8_0, m.bytes.data(), 8, 64}));
  EXPECT_TRUE(can_interleave_x8({DType::kQ4_0, m.bytes.data(), 8, 64}));
  std::vector<float> row(64);
  EXPECT_THROW(dequantize_row(DType::kQ8_0x8, m.bytes.data(), row.data(), 64), std::invalid_argument);
  EXPECT_THROW(quantize_row(DType::kQ4_0x8, f.data(), out.data(), 64), std::invalid_argument);
}

// Every ISA runs the scalar interleaved arithmetic exactly, and that agrees with the row-major
// kernels (same integer dots, different float summation) to rounding.
TEST(QuantX8, EveryIsaMatchesScalarBitForBitAndRowMajorToRounding) {
  struct Case {
    int64_t rows, cols, n;
  };
  for (DType type : kTypes)
    for (const Case c : {Case{8, 32, 1}, Case{16, 96, 3}, Case{40, 288, 5}, Case{64, 768, 37}, Case{32, 2048, 4}}) {
      const QuantMatrix m = quant_matrix(type, c.rows, c.cols, uint32_t(c.rows + c.cols));
      const Interleaved x8(m.view());
      const auto x = random_vec(size_t(c.n * c.cols), 3);
      std::vector<float> ref(size_t(c.n * c.rows)), row_major(ref.size());
      matmul(x8.view(), x.data(), c.n, ref.data(), Isa::kScalar);
      matmul(m.view(), x.data(), c.n, row_major.data(), Isa::kScalar);
      for (size_t i = 0; i < ref.size(); ++i)
        ASSERT_NEAR(ref[i], row_major[i], 1e-5f * (1.0f + std::fabs(row_major[i])) * std::sqrt(float(c.cols)))
            << dtype_name(type) << " " << i;
      for (Isa isa : isas()) {
        std::vector<float> y(ref.size(), -1.0f);
        matmul(x8.view(), x.data(), c.n, y.data(), isa);
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_EQ(bits(y[i]), bits(ref[i])) << dtype_name(type) << " " << isa_name(isa) << " rows " << c.rows << " cols "
                                              << c.cols << " n " << c.n << " i " << i << ": " << y[i] << " vs " << ref[i];
      }
    }
}

// The serving engine's batch invariance on these layouts: one token's outputs are the same bits
// alone, at any place in a batch (4-token tiles, 3/2/1 remainders, past the 32-token block)
// and on any number of threads.
TEST(QuantX8, OneTokensOutputIsBitIdenticalWhateverTheBatchAndThreads) {
  const int64_t rows = 48, cols = 288;
  for (DType type : kTypes) {
    const QuantMatrix m = quant_matrix(type, rows, cols, 4);
    const Interleaved x8(m.view());
    const auto probe = random_vec(size_t(cols), 5);
    for (Isa isa : isas()) {
      std::vector<float> solo(static_cast<size_t>(rows));
      matmul(x8.view(), probe.data(), 1, solo.data(), isa);
      for (int threads : {1, 2}) {
        MatmulRunner runner(threads, isa);
        const struct {
          int64_t n, pos;
        } batches[] = {{1, 0}, {3, 2}, {4, 1}, {6, 5}, {7, 4}, {16, 9}, {37, 33}, {38, 37}};
        for (const auto& b : batches) {
          auto x = random_vec(size_t(b.n * cols), uint32_t(100 + b.n));
          std::copy(probe.begin(), probe.end(), x.begin() + b.pos * cols);
          std::vector<float> y(size_t(b.n * rows));
          runner.run(x8.view(), x.data(), b.n, y.data());
          for (int64_t r = 0; r < rows; ++r)
            ASSERT_EQ(bits(y[size_t(b.pos * rows + r)]), bits(solo[size_t(r)]))
                << dtype_name(type) << " " << isa_name(isa) << " threads " << threads << " n " << b.n << " pos " << b.pos
                << " row " << r;
        }
      }
    }
  }
}

// Q, K and V (or gate and up) interleaved, in one launch: each matrix's own bits.
TEST(QuantX8, SharedInputRunMatchesOneRunPerMatrix) {
  const int64_t cols = 256, n = 6;
  for (DType type : kTypes) {
    const QuantMatrix a = quant_matrix(type, 64, cols, 7), b = quant_matrix(type, 24, cols, 8);
    const Interleaved xa(a.view()), xb(b.view());
    const auto x = random_vec(size_t(n * cols), 9);
    for (Isa isa : isas()) {
      MatmulRunner runner(2, isa);
      std::vector<float> ya(size_t(n * 64)), yb(size_t(n * 24)), ra(ya.size()), rb(yb.size());
      runner.run(xa.view(), x.data(), n, ra.data());
      runner.run(xb.view(), x.data(), n, rb.data());
      const MatrixView ws[] = {xa.view(), xb.view()};
      float* ys[] = {ya.data(), yb.data()};
      runner.run_shared_input(ws, 2, x.data(), n, ys);
      EXPECT_EQ(ya, ra) << dtype_name(type) << " " << isa_name(isa);
      EXPECT_EQ(yb, rb) << dtype_name(type) << " " << isa_name(isa);
    }
  }
}

}  // namespace
}  // namespace sluice::kernels
