// (Bit-for-bit agreement of the AVX-512 BF16 kernel with the scalar twin was verified on AMD Zen
// 5; the twin follows the instruction's pseudocode in Intel's manual. A CPU whose vdpbf16ps
// rounds otherwise fails EveryIsaMatchesScalarBitForBit... visibly: the twin must then learn it.)
// kBF16x16, F32 weights rounded to bfloat16 in row panels (opt-in, SLUICE_F32_LAYOUT=bf16): the
// rounding is to nearest with ties to even, as the CPU's instruction rounds; the layout keeps
// every rounded weight; the AVX-512 BF16 kernel computes exactly its scalar twin's arithmetic
// (the instruction's), so one token's output is bit-identical whatever its batch or threads;
// and the results stay within bfloat16's error of the F32 products. On a CPU without AVX-512
// BF16 the tests that need it skip and say so.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#include "kernels/cpu/bf16_panels.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_weights.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/weight_memory.h"
#include "tests/kernels/cpu/kernel_test_util.h"
#include "tests/kernels/cpu/panel_layout_checks.h"
#include "tests/support/scoped_env.h"

namespace sluice::kernels {
namespace {

using test_util::random_vec;

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

struct Panels {
  explicit Panels(const MatrixView& w) : memory(size_t(bf16_panel_bytes(w))), view(panel_bf16(w, memory.data())) {}
  WeightMemory memory;
  MatrixView view;
};

TEST(BF16Panels, RoundingIsToNearestTiesToEven) {
  EXPECT_EQ(bf16_round(1.0f), 0x3f80);
  EXPECT_EQ(bf16_round(-2.0f), 0xc000);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even one, 1.
  EXPECT_EQ(bf16_round(1.0f + 0x1p-8f), 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up to the even.
  EXPECT_EQ(bf16_round(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(bf16_round(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);  // past halfway: up
  EXPECT_EQ(bf16_to_f32(bf16_round(3.140625f)), 3.140625f);   // representable: exact
  EXPECT_EQ(bf16_round(std::numeric_limits<float>::max()), 0x7f80);  // rounds up to infinity
  EXPECT_EQ(bf16_round(std::numeric_limits<float>::denorm_min()), 0x0000);  // denormals are zero
  EXPECT_EQ(bf16_round(-std::numeric_limits<float>::denorm_min()), 0x8000);
  EXPECT_TRUE(std::isnan(bf16_to_f32(bf16_round(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(bf16_to_f32(bf16_round(std::numeric_limits<float>::signaling_NaN()))));
  EXPECT_EQ(flush_denormal(std::numeric_limits<float>::denorm_min()), 0.0f);
  EXPECT_TRUE(std::signbit(flush_denormal(-std::numeric_limits<float>::denorm_min())));
  EXPECT_EQ(flush_denormal(std::numeric_limits<float>::min()), std::numeric_limits<float>::min());
}

TEST(BF16Panels, PanelsKeepEveryRoundedWeight) {
  const auto w = random_vec(48 * 40, 1);
  const MatrixView rows{DType::kF32, w.data(), 48, 40};
  ASSERT_TRUE(can_panel_bf16(rows));
  EXPECT_FALSE(can_panel_bf16({DType::kF32, w.data(), 40, 48}));  // 40 rows: not whole panels
  EXPECT_FALSE(can_panel_bf16({DType::kF32, w.data(), 48, 39}));  // odd columns: not whole pairs
  EXPECT_FALSE(can_panel_bf16({DType::kF16, w.data(), 48, 40}));
  const Panels p(rows);
  EXPECT_EQ(p.view.type, DType::kBF16x16);
  CpuBackend backend(1);
  std::vector<float> got(40);
  for (int64_t r = 0; r < 48; ++r) {
    backend.get_row(p.view, r, got.data());
    for (int64_t c = 0; c < 40; ++c)
      ASSERT_EQ(bits(got[size_t(c)]), bits(bf16_to_f32(bf16_round(w[size_t(r * 40 + c)])))) << r << "," << c;
  }
}

// Odd panel counts (the AVX-512 tile takes two), token counts around the tile (12) and past the
// 48-token block, widths from one pair up to the encoder's feed-forward, and activation counts
// that end inside a 32-float conversion.
TEST(BF16Panels, EveryIsaMatchesScalarBitForBitAndF32WithinRounding) {
  struct Case {
    int64_t rows, cols, n;
  };
  for (const Case c : {Case{16, 2, 1}, Case{16, 6, 3}, Case{48, 64, 13}, Case{32, 512, 12}, Case{80, 200, 50},
                       Case{64, 2048, 5}, Case{16, 34, 100}}) {
    const auto w = random_vec(size_t(c.rows * c.cols), uint32_t(c.rows + c.cols));
    const MatrixView rows{DType::kF32, w.data(), c.rows, c.cols};
    const Panels p(rows);
    const auto x = random_vec(size_t(c.n * c.cols), 3);
    std::vector<float> ref(size_t(c.n * c.rows)), f32(ref.size());
    matmul(p.view, x.data(), c.n, ref.data(), Isa::kScalar);
    matmul(rows, x.data(), c.n, f32.data(), Isa::kScalar);
    // Each product is off by at most about 2^-8 of its size (two roundings of 2^-9): bound the
    // sum by that share of the sum of |w||x|, which for normal data is about sqrt(cols) times
    // one product; 2^-7 leaves a factor of 2 for the sums' own rounding.
    for (int64_t t = 0; t < c.n; ++t)
      for (int64_t r = 0; r < c.rows; ++r) {
        double mass = 0;
        for (int64_t k = 0; k < c.cols; ++k)
          mass += std::fabs(double(w[size_t(r * c.cols + k)]) * double(x[size_t(t * c.cols + k)]));
        const size_t i = size_t(t * c.rows + r);
        ASSERT_NEAR(ref[i], f32[i], 0x1p-7 * mass + 1e-6) << "rows " << c.rows << " cols " << c.cols << " i " << i;
      }
    test_util::expect_every_isa_gives(p.view, x, c.n, ref);
  }
}

TEST(BF16Panels, OneTokensOutputIsBitIdenticalWhateverTheBatchAndThreads) {
  const int64_t rows = 80, cols = 96;
  const auto w = random_vec(size_t(rows * cols), 4);
  const Panels p({DType::kF32, w.data(), rows, cols});
  test_util::expect_one_tokens_output_independent_of_batch(p.view);
}

// The AVX-512 kernels run the BF16 kernel and rounding exactly where the CPU has the instruction
// (else the scalar twin); where it has not, say so, since the bit-for-bit tests above then
// compare the twin with itself.
TEST(BF16Panels, TheAvx512KernelsRunTheBf16KernelWhereTheCpuHasIt) {
  if (detected_isa() != Isa::kAvx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  const detail::IsaKernels& k = detail::avx512_kernels();
  if (!cpu_has_avx512_bf16()) {
    EXPECT_EQ(k.bf16x16, &detail::scalar_bf16x16_rows);
    EXPECT_EQ(k.round_bf16, &detail::scalar_round_bf16);
    GTEST_SKIP() << "this CPU has no AVX-512 BF16 (vdpbf16ps): the kernel was not tested";
  }
  EXPECT_EQ(k.bf16x16, &detail::avx512_bf16x16_rows);
  EXPECT_EQ(k.round_bf16, &detail::avx512_round_bf16);
}

TEST(BF16Panels, WeightPreparationLaysOutBf16OnlyWhenAskedAndSupported) {
  const auto w = random_vec(32 * 64, 9), odd = random_vec(32 * 63, 10);
  sluice::testing::ScopedEnv env;
  env.set("SLUICE_F32_LAYOUT", "bf16");
  MatrixView a{DType::kF32, w.data(), 32, 64}, b{DType::kF32, odd.data(), 32, 63};
  MatrixView* views[] = {&a, &b};
  const auto prepared = prepare_cpu_matmul_weights(views, 2);
  if (!bf16_dot_supported()) {
    EXPECT_NE(a.type, DType::kBF16x16);  // F32 panels (or rows), never BF16 without the instruction
    GTEST_SKIP() << "no AVX-512 BF16: SLUICE_F32_LAYOUT=bf16 keeps F32";
  }
  ASSERT_NE(prepared, nullptr);
  EXPECT_EQ(a.type, DType::kBF16x16);
  EXPECT_EQ(b.type, DType::kF32x16);  // odd columns: F32 panels
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % 64, 0u);
}

// A value the variables do not know is said, with what they accept, and the default stays (the
// log is once a process: the check runs in a fresh one, re-executed by gtest).
// Exits 0 when a misspelt SLUICE_F32_LAYOUT left F32 panels (or rows), 1 when it made BF16.
[[noreturn]] void prepare_with_misspelt_layout() {
  setenv("SLUICE_F32_LAYOUT", "bf-16", 1);
  const auto w = random_vec(32 * 64, 11);
  MatrixView a{DType::kF32, w.data(), 32, 64};
  MatrixView* views[] = {&a};
  const auto prepared = prepare_cpu_matmul_weights(views, 1);
  std::exit(a.type == DType::kBF16x16 ? 1 : 0);
}

TEST(BF16Panels, AnUnknownLayoutValueIsReportedAndIgnored) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(prepare_with_misspelt_layout(), ::testing::ExitedWithCode(0),
              "SLUICE_F32_LAYOUT='bf-16' is not rows or bf16: ignored");
}

}  // namespace
}  // namespace sluice::kernels
