// kF32x16, F32 weights in row panels of 16: the layout keeps every weight, every ISA's kernel
// computes exactly the scalar panel arithmetic (the fused multiply-add chain over the columns),
// which agrees with the row-major kernels to rounding, one token's output is bit-identical
// whatever its batch, thread count or launch, and the CPU backend's weight preparation lays F32
// matrices out in panels where kernels for them exist (SLUICE_F32_LAYOUT=rows keeps the rows).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_weights.h"
#include "kernels/cpu/f32_panels.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/weight_memory.h"
#include "tests/kernels/cpu/kernel_test_util.h"
#include "tests/kernels/cpu/panel_layout_checks.h"
#include "tests/support/scoped_env.h"

namespace sluice::kernels {
namespace {

using test_util::isas;
using test_util::random_vec;

struct Panels {
  explicit Panels(const MatrixView& w) : memory(size_t(f32_panel_bytes(w))), view(panel_f32(w, memory.data())) {}
  WeightMemory memory;
  MatrixView view;
};

TEST(F32Panels, PanelsKeepEveryWeight) {
  const auto w = random_vec(48 * 40, 1);
  const MatrixView rows{DType::kF32, w.data(), 48, 40};
  ASSERT_TRUE(can_panel_f32(rows));
  EXPECT_FALSE(can_panel_f32({DType::kF32, w.data(), 40, 48}));  // 40 rows: not whole panels
  EXPECT_FALSE(can_panel_f32({DType::kF16, w.data(), 48, 40}));
  const Panels p(rows);
  EXPECT_EQ(p.view.type, DType::kF32x16);
  CpuBackend backend(1);
  std::vector<float> got(40);
  for (int64_t r = 0; r < 48; ++r) {
    backend.get_row(p.view, r, got.data());
    ASSERT_EQ(std::vector<float>(w.begin() + r * 40, w.begin() + (r + 1) * 40), got) << "row " << r;
  }
}

// Odd panel counts (the AVX-512 tile takes two), token counts around the tiles (12 and 6) and
// past the 48-token block, widths of one column up to the encoder's feed-forward.
TEST(F32Panels, EveryIsaMatchesScalarBitForBitAndRowMajorToRounding) {
  struct Case {
    int64_t rows, cols, n;
  };
  for (const Case c : {Case{16, 1, 1}, Case{16, 7, 3}, Case{48, 64, 13}, Case{32, 512, 12}, Case{80, 200, 50},
                       Case{64, 2048, 5}, Case{16, 33, 100}}) {
    const auto w = random_vec(size_t(c.rows * c.cols), uint32_t(c.rows + c.cols));
    const MatrixView rows{DType::kF32, w.data(), c.rows, c.cols};
    const Panels p(rows);
    const auto x = random_vec(size_t(c.n * c.cols), 3);
    std::vector<float> ref(size_t(c.n * c.rows)), row_major(ref.size());
    matmul(p.view, x.data(), c.n, ref.data(), Isa::kScalar);
    matmul(rows, x.data(), c.n, row_major.data(), Isa::kScalar);
    for (size_t i = 0; i < ref.size(); ++i)
      ASSERT_NEAR(ref[i], row_major[i], 1e-5f * (1.0f + std::fabs(row_major[i])) * std::sqrt(float(c.cols))) << i;
    test_util::expect_every_isa_gives(p.view, x, c.n, ref);
  }
}

TEST(F32Panels, OneTokensOutputIsBitIdenticalWhateverTheBatchAndThreads) {
  const int64_t rows = 80, cols = 96;
  const auto w = random_vec(size_t(rows * cols), 4);
  const Panels p({DType::kF32, w.data(), rows, cols});
  test_util::expect_one_tokens_output_independent_of_batch(p.view);
}

// A shared-input launch of matrices in different layouts (one in panels, one not) gives each
// the results of its own launch.
TEST(F32Panels, ASharedInputLaunchMayMixLayouts) {
  const int64_t cols = 64, n = 5;
  const auto a = random_vec(size_t(32 * cols), 6), b = random_vec(size_t(24 * cols), 7);
  const Panels pa({DType::kF32, a.data(), 32, cols});
  const MatrixView vb{DType::kF32, b.data(), 24, cols};
  const auto x = random_vec(size_t(n * cols), 8);
  for (Isa isa : isas()) {
    MatmulRunner runner(2, isa);
    std::vector<float> ya(size_t(n * 32)), yb(size_t(n * 24)), wa(ya.size()), wb(yb.size());
    const MatrixView ws[] = {pa.view, vb};
    float* ys[] = {ya.data(), yb.data()};
    runner.run_shared_input(ws, 2, x.data(), n, ys);
    runner.run(pa.view, x.data(), n, wa.data());
    runner.run(vb, x.data(), n, wb.data());
    EXPECT_EQ(ya, wa) << isa_name(isa);
    EXPECT_EQ(yb, wb) << isa_name(isa);
  }
}

TEST(F32Panels, WeightPreparationLaysOutF32WherePanelsPay) {
  const auto w = random_vec(32 * 64, 9), odd = random_vec(24 * 64, 10);
  MatrixView a{DType::kF32, w.data(), 32, 64}, b{DType::kF32, odd.data(), 24, 64};
  {
    MatrixView* views[] = {&a, &b};
    const auto prepared = prepare_cpu_matmul_weights(views, 2);
    if (!f32_panels_pay(default_isa())) {
      EXPECT_EQ(prepared, nullptr);
      GTEST_SKIP() << "no SIMD panel kernels on " << isa_name(default_isa());
    }
    ASSERT_NE(prepared, nullptr);
    EXPECT_EQ(prepared->matrices(), 1u);
    EXPECT_EQ(a.type, DType::kF32x16);
    EXPECT_EQ(b.type, DType::kF32);  // 24 rows: not whole panels
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % 64, 0u);
  }
  sluice::testing::ScopedEnv env;
  env.set("SLUICE_F32_LAYOUT", "rows");
  MatrixView c{DType::kF32, w.data(), 32, 64};
  MatrixView* views[] = {&c};
  EXPECT_EQ(prepare_cpu_matmul_weights(views, 1), nullptr);
  EXPECT_EQ(c.type, DType::kF32);
}

}  // namespace
}  // namespace sluice::kernels
