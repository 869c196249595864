// The exact index on the GPU against its CPU twin (ExactIndex): the same ids in the same order
// with bit-identical scores, for every kernel shape (queries per block at dimensions 256, 768,
// 1,500 and 3,000), depths from 1 to the device limit and past it (served by the host copy),
// ties (duplicated vectors), sets smaller than k, growth over several add() calls, batches over
// one launch's bound and concurrent callers. Without a CUDA device these skip by name; with
// SLUICE_REQUIRE_GPU=1 (scripts/gpu-check) they fail instead.
//
// The identity rests on the CPU kernels computing each score as one fused multiply-add chain
// over the dimensions; ExactScoresAreOneFmaChain checks that here, on every machine.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/quant_blocks.h"
#include "nodes/retrieval/dense/exact_index.h"
#include "nodes/retrieval/dense/vector_device.h"
#include "tests/support/unit_rows.h"

namespace sluice::retrieval {
namespace {

using testing::unit_rows;

void expect_identical(const std::vector<std::vector<ScoredDoc>>& cpu, const std::vector<std::vector<ScoredDoc>>& gpu,
                      const std::string& what) {
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  for (std::size_t q = 0; q < cpu.size(); ++q) {
    ASSERT_EQ(cpu[q].size(), gpu[q].size()) << what << ", query " << q;
    for (std::size_t r = 0; r < cpu[q].size(); ++r) {
      ASSERT_EQ(cpu[q][r].doc, gpu[q][r].doc) << what << ", query " << q << ", rank " << r;
      ASSERT_EQ(0, std::memcmp(&cpu[q][r].score, &gpu[q][r].score, sizeof(float)))
          << what << ", query " << q << ", rank " << r << ": " << cpu[q][r].score << " vs " << gpu[q][r].score;
    }
  }
}

TEST(ExactScores, ExactScoresAreOneFmaChain) {
  if (std::string(ExactIndex::kernel_name()) == "generic") GTEST_SKIP() << "the portable kernel has no FMA";
  constexpr std::size_t kDim = 200, kN = 77;
  const auto data = unit_rows(kN, kDim, 5);
  const auto queries = unit_rows(3, kDim, 6);
  ExactIndex index(kDim);
  index.add(data.data(), kN);
  const auto got = index.search(queries.data(), 3, kN);
  for (std::size_t q = 0; q < 3; ++q) {
    ASSERT_EQ(got[q].size(), kN);
    for (const ScoredDoc& d : got[q]) {
      float chain = 0.0f;
      for (std::size_t j = 0; j < kDim; ++j) chain = std::fma(queries[q * kDim + j], data[d.doc * kDim + j], chain);
      EXPECT_EQ(0, std::memcmp(&chain, &d.score, sizeof(float))) << "vector " << d.doc;
    }
  }
}

TEST(VectorDevice, NamesResolveOrAreRefusedWithTheReason) {
  EXPECT_EQ(resolve_vector_device("cpu"), "cpu");
  const std::string automatic = resolve_vector_device("auto");
  EXPECT_TRUE(automatic == "cpu" || automatic == "cuda");
  if (automatic == "cpu") {
    try {
      resolve_vector_device("cuda");
      FAIL() << "cuda resolved where auto did not find it";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("no CUDA device") != std::string::npos || what.find("has no CUDA") != std::string::npos) << what;
    }
  }
  EXPECT_THROW(resolve_vector_device("tpu"), std::invalid_argument);
  if (automatic == "cpu") {
    EXPECT_THROW(resolve_vector_device("cuda-f16"), std::invalid_argument);
  }
  EXPECT_TRUE(is_cuda_vector_device("cuda") && is_cuda_vector_device("cuda-f16") && !is_cuda_vector_device("cpu"));
}

class CudaIndex : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      resolve_vector_device("cuda");
    } catch (const std::invalid_argument& e) {
      if (std::getenv("SLUICE_REQUIRE_GPU")) FAIL() << "SLUICE_REQUIRE_GPU is set but " << e.what();
      GTEST_SKIP() << e.what() << ": the GPU index is compiled, not run";
    }
  }
};

TEST_F(CudaIndex, EqualsTheCpuIndexForEveryKernelShapeAndDepth) {
  for (std::size_t dim : {256u, 768u, 1500u, 3000u}) {
    const std::size_t n = dim >= 1500 ? 3000 : 20000;  // more than one tile of 2,048
    auto data = unit_rows(n, dim, dim);
    // Ties: vectors 100..109 repeat vector 7, so equal scores must come out by id.
    for (std::size_t i = 100; i < 110; ++i) std::memcpy(&data[i * dim], &data[7 * dim], dim * sizeof(float));
    auto queries = unit_rows(70, dim, dim + 1);
    std::memcpy(queries.data(), &data[7 * dim], dim * sizeof(float));  // query 0 hits the ties
    ExactIndex cpu(dim);
    cpu.add(data.data(), n);
    auto gpu = make_cuda_exact_index(dim, CoalescerOptions(0, 64));
    gpu->add(data.data(), n / 3);  // several adds: the device panels grow and continue
    gpu->add(data.data() + (n / 3) * dim, n - n / 3);
    ASSERT_EQ(gpu->size(), n);
    for (std::size_t k : {1u, 10u, 100u, 2048u, 3000u}) {
      for (std::size_t nq : {1u, 7u, 70u}) {
        expect_identical(cpu.search(queries.data(), nq, k), gpu->search(queries.data(), nq, k),
                         "dim " + std::to_string(dim) + ", k " + std::to_string(k) + ", nq " + std::to_string(nq));
      }
    }
    std::vector<float> row(dim), back(dim);
    gpu->vector(n - 1, back.data());
    cpu.vector(n - 1, row.data());
    EXPECT_EQ(row, back);
  }
}

TEST_F(CudaIndex, SmallSetsBigBatchesAndConcurrentCallersEqualTheCpuIndex) {
  constexpr std::size_t kDim = 384;
  for (std::size_t n : {1u, 31u, 33u, 2049u}) {
    const auto data = unit_rows(n, kDim, n);
    const auto queries = unit_rows(300, kDim, 99);
    ExactIndex cpu(kDim);
    cpu.add(data.data(), n);
    auto gpu = make_cuda_exact_index(kDim, CoalescerOptions(200 * kNanosPerMicro, 64));
    gpu->add(data.data(), n);
    // 300 queries: over one launch's 256 and the coalescer's 64, so in several calls.
    expect_identical(cpu.search(queries.data(), 300, 50), gpu->search(queries.data(), 300, 50), "n " + std::to_string(n));
    std::vector<std::vector<std::vector<ScoredDoc>>> got(8);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] { got[t] = gpu->search(queries.data() + t * 5 * kDim, 5, 10); });
    }
    for (auto& t : threads) t.join();
    for (std::size_t t = 0; t < 8; ++t) {
      expect_identical(cpu.search(queries.data() + t * 5 * kDim, 5, 10), got[t], "concurrent caller " + std::to_string(t));
    }
  }
}

// F16 device vectors (device: cuda-f16): the GPU answers what a CPU exact index of the vectors
// rounded to half answers, bit for bit; the host copy keeps the F32 vectors.
TEST_F(CudaIndex, HalfVectorsAnswerAsTheCpuIndexOfTheRoundedVectors) {
  constexpr std::size_t kDim = 384, kN = 10000;
  const auto data = unit_rows(kN, kDim, 17);
  auto rounded = data;
  for (float& v : rounded) v = kernels::fp16_to_fp32(kernels::fp32_to_fp16(v));
  const auto queries = unit_rows(40, kDim, 18);
  ExactIndex cpu(kDim);
  cpu.add(rounded.data(), kN);
  auto gpu = make_cuda_exact_index(kDim, CoalescerOptions(0, 64), /*half_vectors=*/true);
  gpu->add(data.data(), kN);
  for (std::size_t k : {1u, 10u, 100u})
    expect_identical(cpu.search(queries.data(), 40, k), gpu->search(queries.data(), 40, k), "k " + std::to_string(k));
  std::vector<float> back(kDim);
  gpu->vector(5, back.data());
  EXPECT_EQ(0, std::memcmp(back.data(), &data[5 * kDim], kDim * sizeof(float))) << "the host copy is F32";
}

}  // namespace
}  // namespace sluice::retrieval
