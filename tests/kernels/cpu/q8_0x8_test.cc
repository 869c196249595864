// kQ8_0x8, the interleaved Q8_0 layout: the interleaving keeps every weight, every ISA's kernel
// computes exactly the scalar kQ8_0x8 arithmetic, the result agrees with row-major Q8_0 within
// float rounding, and a token's output is bit-identical whatever its batch and thread count.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/q8_0x8.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu/weight_memory.h"

namespace sluice::kernels {
namespace {

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

struct Q8Matrix {
  int64_t rows, cols;
  std::vector<uint8_t> bytes;
  MatrixView view() const { return {DType::kQ8_0, bytes.data(), rows, cols}; }
};

// An interleaved copy in its own memory, as the model keeps one in WeightMemory.
struct Interleaved {
  explicit Interleaved(const MatrixView& w) : memory(size_t(q8_0x8_bytes(w))), packed(interleave_q8_0x8(w, memory.data())) {}
  MatrixView view() const { return packed; }
  WeightMemory memory;
  MatrixView packed;
};

Q8Matrix q8_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  const auto w = random_vec(size_t(rows * cols), seed);
  Q8Matrix m{rows, cols, std::vector<uint8_t>(size_t(rows * dtype_row_bytes(DType::kQ8_0, cols)))};
  for (int64_t r = 0; r < rows; ++r)
    quantize_row(DType::kQ8_0, w.data() + r * cols, m.bytes.data() + r * dtype_row_bytes(DType::kQ8_0, cols), cols);
  // Extremes: a -128 quant (never written by the quantiser, legal in a file) and full-scale rows.
  m.bytes[2] = 0x80;
  return m;
}

std::vector<Isa> isas() {
  std::vector<Isa> out = {Isa::kScalar};
  if (int(detected_isa()) >= int(Isa::kAvx2)) out.push_back(Isa::kAvx2);
  if (detected_isa() == Isa::kAvx512) out.push_back(Isa::kAvx512);
  return out;
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

TEST(Q8_0x8, InterleavingKeepsEveryWeight) {
  const Q8Matrix m = q8_matrix(24, 96, 1);
  const Interleaved x8(m.view());
  EXPECT_EQ(x8.view().type, DType::kQ8_0x8);
  EXPECT_EQ(size_t(q8_0x8_bytes(m.view())), m.bytes.size());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(x8.memory.data()) % (size_t(2) << 20), 0u);  // huge-page aligned
  CpuBackend backend(1);
  std::vector<float> want(96), got(96);
  for (int64_t r = 0; r < m.rows; ++r) {
    dequantize_row(DType::kQ8_0, m.bytes.data() + r * dtype_row_bytes(DType::kQ8_0, 96), want.data(), 96);
    backend.get_row(x8.view(), r, got.data());
    ASSERT_EQ(want, got) << "row " << r;
  }
}

TEST(Q8_0x8, RefusesWhatCannotBeInterleaved) {
  const Q8Matrix m = q8_matrix(12, 64, 2);
  EXPECT_FALSE(can_interleave_q8_0x8(m.view()));  // 12 rows: not whole groups of 8
  std::vector<uint8_t> out(m.bytes.size());
  EXPECT_THROW(interleave_q8_0x8(m.view(), out.data()), std::invalid_argument);
  std::vector<float> f(8 * 64);
  EXPECT_FALSE(can_interleave_q8_0x8({DType::kF32, f.data(), 8, 64}));
  EXPECT_TRUE(can_interleave_q8_0x8({DType::kQ8_0, m.bytes.data(), 8, 64}));
  std::vector<float> row(64);
  EXPECT_THROW(dequantize_row(DType::kQ8_0x8, m.bytes.data(), row.data(), 64), std::invalid_argument);
}

// Every ISA runs the scalar kQ8_0x8 arithmetic exactly, and that agrees with the row-major Q8_0
// kernels (same integer dots, different float summation) to rounding.
TEST(Q8_0x8, EveryIsaMatchesScalarBitForBitAndRowMajorToRounding) {
  struct Case {
    int64_t rows, cols, n;
  };
  for (const Case c : {Case{8, 32, 1}, Case{16, 96, 3}, Case{40, 288, 5}, Case{64, 768, 37}, Case{32, 2048, 4}}) {
    const Q8Matrix m = q8_matrix(c.rows, c.cols, uint32_t(c.rows + c.cols));
    const Interleaved x8(m.view());
    const auto x = random_vec(size_t(c.n * c.cols), 3);
    std::vector<float> ref(size_t(c.n * c.rows)), row_major(ref.size());
    matmul(x8.view(), x.data(), c.n, ref.data(), Isa::kScalar);
    matmul(m.view(), x.data(), c.n, row_major.data(), Isa::kScalar);
    for (size_t i = 0; i < ref.size(); ++i)
      ASSERT_NEAR(ref[i], row_major[i], 1e-5f * (1.0f + std::fabs(row_major[i])) * std::sqrt(float(c.cols))) << i;
    for (Isa isa : isas()) {
      std::vector<float> y(ref.size(), -1.0f);
      matmul(x8.view(), x.data(), c.n, y.data(), isa);
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_EQ(bits(y[i]), bits(ref[i])) << isa_name(isa) << " rows " << c.rows << " cols " << c.cols << " n " << c.n
                                            << " i " << i << ": " << y[i] << " vs " << ref[i];
    }
  }
}

// The serving engine's batch invariance on this layout: one token's outputs are the same bits
// alone, at any place in a batch (4-token tiles, 3/2/1 remainders, past the 32-token block)
// and on any number of threads.
TEST(Q8_0x8, OneTokensOutputIsBitIdenticalWhateverTheBatchAndThreads) {
  const int64_t rows = 48, cols = 288;
  const Q8Matrix m = q8_matrix(rows, cols, 4);
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
              << isa_name(isa) << " threads " << threads << " n " << b.n << " pos " << b.pos << " row " << r;
      }
    }
  }
}

// Q, K and V (or gate and up) interleaved, in one launch: each matrix's own bits.
TEST(Q8_0x8, SharedInputRunMatchesOneRunPerMatrix) {
  const int64_t cols = 256, n = 6;
  const Q8Matrix a = q8_matrix(64, cols, 7), b = q8_matrix(24, cols, 8);
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
    EXPECT_EQ(ya, ra) << isa_name(isa);
    EXPECT_EQ(yb, rb) << isa_name(isa);
  }
}

}  // namespace
}  // namespace sluice::kernels
