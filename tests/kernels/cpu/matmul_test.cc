// Matmul kernels: every ISA against the scalar reference (same quantised activations, so only
// float summation order differs), and the quantised types against an F32 product within
// their quantisation error.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <oneapi/tbb/task_arena.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul.h"
#include "kernels/quant_blocks.h"
#include "tests/kernels/cpu/kernel_test_util.h"

namespace sluice::kernels {
namespace {

using test_util::isas;
using test_util::random_vec;

struct Case {
  int64_t rows, cols, n;
};

std::vector<uint8_t> encode(const std::vector<float>& w, int64_t rows, int64_t cols, DType t) {
  std::vector<uint8_t> out(size_t(rows * dtype_row_bytes(t, cols)));
  for (int64_t r = 0; r < rows; ++r) quantize_row(t, w.data() + r * cols, out.data() + r * dtype_row_bytes(t, cols), cols);
  return out;
}

std::vector<float> reference_f32(const std::vector<float>& w, const std::vector<float>& x, const Case& c) {
  std::vector<float> y(size_t(c.n * c.rows));
  for (int64_t t = 0; t < c.n; ++t)
    for (int64_t r = 0; r < c.rows; ++r) {
      double s = 0;
      for (int64_t k = 0; k < c.cols; ++k) s += double(w[size_t(r * c.cols + k)]) * x[size_t(t * c.cols + k)];
      y[size_t(t * c.rows + r)] = float(s);
    }
  return y;
}

// Shapes cover: tails of 16-float vectors (172, 40 columns), odd block counts (288 = 9 blocks),
// row counts that are not multiples of 4, token counts that are not multiples of 4, and the
// 32-token block boundary.
const Case kCases[] = {{7, 64, 1}, {21, 96, 1}, {13, 288, 3}, {32, 172, 5}, {9, 40, 2}, {64, 768, 37}, {5, 96, 4}};

TEST(Matmul, EveryIsaMatchesScalarReferenceForEveryType) {
  for (DType t : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_0}) {
    for (const Case& c : kCases) {
      if ((t == DType::kQ8_0 || t == DType::kQ4_0) && c.cols % 32 != 0) continue;
      const auto w = random_vec(size_t(c.rows * c.cols), 1);
      const auto x = random_vec(size_t(c.n * c.cols), 2);
      const auto wb = encode(w, c.rows, c.cols, t);
      const MatrixView m{t, wb.data(), c.rows, c.cols};
      std::vector<float> ref(size_t(c.n * c.rows));
      matmul(m, x.data(), c.n, ref.data(), Isa::kScalar);
      for (Isa isa : isas()) {
        std::vector<float> y(ref.size(), -1.0f);
        matmul(m, x.data(), c.n, y.data(), isa);
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_NEAR(y[i], ref[i], 1e-4f * (1.0f + std::fabs(ref[i])) * std::sqrt(float(c.cols)))
              << dtype_name(t) << " " << isa_name(isa) << " rows " << c.rows << " cols " << c.cols << " n " << c.n << " i " << i;
      }
    }
  }
}

// Quantisation error bounds, relative to the RMS of the exact outputs: F16 ~1e-3, Q8_0 (weights
// and activations at 8 bits) ~1e-2, Q4_0 ~1e-1. The bounds are 2-3x the errors observed.
TEST(Matmul, QuantisedTypesAgreeWithF32WithinTheirError) {
  const Case c{64, 768, 8};
  const auto w = random_vec(size_t(c.rows * c.cols), 3);
  const auto x = random_vec(size_t(c.n * c.cols), 4);
  const auto exact = reference_f32(w, x, c);
  double rms = 0;
  for (float v : exact) rms += double(v) * v;
  rms = std::sqrt(rms / double(exact.size()));
  const struct {
    DType t;
    double tol;
  } bounds[] = {{DType::kF32, 1e-5}, {DType::kF16, 2e-3}, {DType::kQ8_0, 2e-2}, {DType::kQ4_0, 2e-1}};
  for (const auto& b : bounds) {
    const auto wb = encode(w, c.rows, c.cols, b.t);
    std::vector<float> y(exact.size());
    matmul({b.t, wb.data(), c.rows, c.cols}, x.data(), c.n, y.data(), default_isa());
    double err = 0;
    for (size_t i = 0; i < y.size(); ++i) err += double(y[i] - exact[i]) * (y[i] - exact[i]);
    err = std::sqrt(err / double(y.size()));
    EXPECT_LT(err / rms, b.tol) << dtype_name(b.t);
  }
}

// At decoding sizes (static chunks) and from MatmulRunner::kDynamicSplitTokens tokens (chunks
// handed out as threads come free).
TEST(Matmul, ThreadedRunnerMatchesSingleThread) {
  for (const Case c : {Case{100, 256, 6}, Case{100, 256, MatmulRunner::kDynamicSplitTokens + 36}}) {
    const auto w = random_vec(size_t(c.rows * c.cols), 5);
    const auto x = random_vec(size_t(c.n * c.cols), 6);
    for (DType t : {DType::kF32, DType::kQ8_0, DType::kQ4_0}) {
      const auto wb = encode(w, c.rows, c.cols, t);
      const MatrixView m{t, wb.data(), c.rows, c.cols};
      std::vector<float> one(size_t(c.n * c.rows)), two(one.size());
      MatmulRunner r1(1, default_isa()), r2(2, default_isa());
      r1.run(m, x.data(), c.n, one.data());
      r2.run(m, x.data(), c.n, two.data());
      EXPECT_EQ(one, two) << dtype_name(t) << ", " << c.n << " tokens";  // same kernels, same row order: bit-identical
    }
  }
}

// execute() runs its function on the caller inside the runner's arena (its own oneTBB loops get
// the runner's threads, a single-threaded runner's get one), and a run started there gives the
// same bits as one started outside.
TEST(Matmul, ExecuteRunsInTheRunnersArenaAndRunsInsideItAgree) {
  const Case c{100, 256, 40};
  const auto w = random_vec(size_t(c.rows * c.cols), 5);
  const auto x = random_vec(size_t(c.n * c.cols), 6);
  const MatrixView m{DType::kF32, w.data(), c.rows, c.cols};
  for (int threads : {1, 2}) {
    MatmulRunner runner(threads, default_isa());
    std::vector<float> outside(size_t(c.n * c.rows)), inside(outside.size());
    runner.run(m, x.data(), c.n, outside.data());
    int concurrency = 0;
    const auto caller = std::this_thread::get_id();
    std::thread::id ran_on;
    runner.execute([&] {
      ran_on = std::this_thread::get_id();
      concurrency = oneapi::tbb::this_task_arena::max_concurrency();
      runner.run(m, x.data(), c.n, inside.data());
    });
    EXPECT_EQ(ran_on, caller) << threads << " threads";
    EXPECT_EQ(concurrency, threads);
    EXPECT_EQ(inside, outside) << threads << " threads";
  }
}

// Several matrices on one input (Q, K and V; gate and up) in one launch give each matrix's own
// run() bits, with row counts that end mid-chunk; mixed types or widths are refused.
TEST(Matmul, SharedInputRunMatchesOneRunPerMatrix) {
  const int64_t cols = 256, n = 5;
  const auto x = random_vec(size_t(n * cols), 21);
  for (DType t : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_0}) {
    const int64_t rows[] = {64, 24, 40};
    std::vector<std::vector<uint8_t>> bytes;
    std::vector<MatrixView> ws;
    for (int i = 0; i < 3; ++i) {
      bytes.push_back(encode(random_vec(size_t(rows[i] * cols), uint32_t(30 + i)), rows[i], cols, t));
      ws.push_back({t, bytes.back().data(), rows[i], cols});
    }
    for (Isa isa : isas()) {
      MatmulRunner runner(2, isa);
      std::vector<std::vector<float>> shared, single;
      std::vector<float*> out;
      for (int i = 0; i < 3; ++i) {
        shared.emplace_back(size_t(n * rows[i]), -1.0f);
        single.emplace_back(size_t(n * rows[i]), -2.0f);
        runner.run(ws[size_t(i)], x.data(), n, single.back().data());
      }
      for (auto& v : shared) out.push_back(v.data());
      runner.run_shared_input(ws.data(), ws.size(), x.data(), n, out.data());
      for (int i = 0; i < 3; ++i) EXPECT_EQ(shared[size_t(i)], single[size_t(i)]) << dtype_name(t) << " " << isa_name(isa) << " matrix " << i;
    }
  }
  std::vector<float> f(size_t(8 * cols)), g(size_t(8 * 128)), y(size_t(n * 8));
  const MatrixView mixed[] = {{DType::kF32, f.data(), 8, cols}, {DType::kF32, g.data(), 8, 128}};
  float* ys[] = {y.data(), y.data()};
  MatmulRunner runner(1, Isa::kScalar);
  EXPECT_THROW(runner.run_shared_input(mixed, 2, x.data(), n, ys), std::invalid_argument);
}

// Batch invariance, which the serving engine relies on: one token's output row must be
// bit-identical whatever n is and wherever the token sits in the batch, i.e. whichever tile
// shape (rows x tokens, remainder tiles included) computed it. 13 rows exercise the decoding
// (n == 1) row tiles, the batch row tiles and the 1-row remainder; 3 to 38 tokens the full 4-token tiles, the 3-, 2- and
// 1-token remainders, and tokens past the 32-token block.
TEST(Matmul, OneTokensOutputIsBitIdenticalWhateverTheBatch) {
  const int64_t rows = 13;
  for (DType t : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_0}) {
    for (int64_t cols : {int64_t(288), int64_t(172)}) {
      if ((t == DType::kQ8_0 || t == DType::kQ4_0) && cols % 32 != 0) continue;
      const auto w = random_vec(size_t(rows * cols), 11);
      const auto wb = encode(w, rows, cols, t);
      const MatrixView m{t, wb.data(), rows, cols};
      const auto probe = random_vec(size_t(cols), 12);
      for (Isa isa : isas()) {
        std::vector<float> solo(static_cast<size_t>(rows));
        matmul(m, probe.data(), 1, solo.data(), isa);
        const struct {
          int64_t n, pos;
        } batches[] = {{3, 0}, {3, 2}, {4, 1}, {4, 3}, {6, 5}, {7, 4}, {7, 6}, {37, 33}, {37, 36}, {38, 37}};
        for (const auto& b : batches) {
          auto x = random_vec(size_t(b.n * cols), uint32_t(100 + b.n));
          std::copy(probe.begin(), probe.end(), x.begin() + b.pos * cols);
          std::vector<float> y(size_t(b.n * rows));
          matmul(m, x.data(), b.n, y.data(), isa);
          for (int64_t r = 0; r < rows; ++r)
            ASSERT_EQ(std::bit_cast<uint32_t>(y[size_t(b.pos * rows + r)]), std::bit_cast<uint32_t>(solo[size_t(r)]))
                << dtype_name(t) << " " << isa_name(isa) << " cols " << cols << " n " << b.n << " pos " << b.pos
                << " row " << r << ": " << y[size_t(b.pos * rows + r)] << " vs solo " << solo[size_t(r)];
        }
      }
    }
  }
}

// Every ISA's activation quantiser matches the scalar one exactly (the Q8_0 kernels are
// compared against the scalar reference on the same quantised activations), ties and an
// all-zero block included.
TEST(Matmul, EveryIsaQuantisesActivationsLikeScalar) {
  const int64_t cols = 128, n = 3;
  auto x = random_vec(size_t(n * cols), 13, 3.0f);
  // Block 1: amax 127 makes the scale 1, so the halves are exact ties (rounded to even).
  for (int j = 0; j < 32; ++j) x[size_t(32 + j)] = float(j - 16) + 0.5f;
  x[32] = 127.0f;
  for (int j = 0; j < 32; ++j) x[size_t(64 + j)] = 0.0f;
  Q8Activations ref;
  ref.quantize(x.data(), n, cols, Isa::kScalar);
  for (Isa isa : isas()) {
    Q8Activations q;
    q.quantize(x.data(), n, cols, isa);
    const size_t nq = size_t(n * cols), nb = size_t(n * cols / 32);
    EXPECT_TRUE(std::equal(ref.qs.begin(), ref.qs.begin() + long(nq), q.qs.begin())) << isa_name(isa);
    EXPECT_TRUE(std::equal(ref.d.begin(), ref.d.begin() + long(nb), q.d.begin())) << isa_name(isa);
    EXPECT_TRUE(std::equal(ref.neg8sum.begin(), ref.neg8sum.begin() + long(nb), q.neg8sum.begin())) << isa_name(isa);
  }
}

TEST(QuantBlocks, Fp16RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(uint16_t(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp32_to_fp16(f), h) << h;
  }
  EXPECT_EQ(fp32_to_fp16(1e9f), 0x7c00);
  EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
}

TEST(QuantBlocks, DequantiseInvertsQuantiseWithinAStep) {
  const auto x = random_vec(64, 7);
  for (DType t : {DType::kQ8_0, DType::kQ4_0}) {
    std::vector<uint8_t> b(size_t(dtype_row_bytes(t, 64)));
    quantize_row(t, x.data(), b.data(), 64);
    std::vector<float> y(64);
    dequantize_row(t, b.data(), y.data(), 64);
    for (int blk = 0; blk < 2; ++blk) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[size_t(blk * 32 + j)]));
      // Q8_0: half a step. Q4_0 maps the signed maximum to -8, so values of the other sign
      // clamp at +7 steps: up to one whole step off.
      const float step = amax / (t == DType::kQ8_0 ? 127.0f : 8.0f);
      const float bound = (t == DType::kQ8_0 ? 0.51f : 1.01f) * step + 1e-3f * amax;
      for (int j = 0; j < 32; ++j) EXPECT_LE(std::fabs(y[size_t(blk * 32 + j)] - x[size_t(blk * 32 + j)]), bound);
    }
  }
}

}  // namespace
}  // namespace sluice::kernels
