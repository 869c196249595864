// CudaBackend against its CPU twin, operation by operation, on seeded random data: the same
// inputs through both backends, the outputs compared within each operation's stated tolerance
// (exact where the arithmetic is the same, e.g. KV writes and row lookups). Without a CUDA
// device these tests skip by name; with SLUICE_REQUIRE_GPU=1 (scripts/gpu-check) they fail
// instead, so a GPU machine that cannot run them is never read as a pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/backend_buffer.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/quant_blocks.h"
#include "tests/kernels/cpu/kernel_test_util.h"
#include "tests/kernels/cuda/cuda_twin.h"

namespace sluice::kernels {
namespace {

using test_util::random_vec;

TEST(CudaAvailability, ABackendIsMadeOnlyWhereADeviceIs) {
  if (cuda_device_count() == 0) {
    EXPECT_FALSE(cuda_unavailable_reason().empty());
    try {
      CudaBackend backend;
      FAIL() << "a CUDA backend was made without a device";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("no usable CUDA device"), std::string::npos) << e.what();
    }
    return;
  }
  EXPECT_TRUE(cuda_unavailable_reason().empty());
  CudaBackend backend;
  EXPECT_THROW(CudaBackend(cuda_device_count()).device(), std::runtime_error);  // one past the last
}

// Weights of `type`, rows x cols, from seeded normal values (quantised by the reference
// quantizers for Q8_0 and Q4_0).
std::vector<uint8_t> make_weights(DType type, int64_t rows, int64_t cols, uint32_t seed) {
  const auto f = random_vec(size_t(rows * cols), seed);
  std::vector<uint8_t> bytes(size_t(rows * dtype_row_bytes(type, cols)));
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* dst = bytes.data() + r * dtype_row_bytes(type, cols);
    if (type == DType::kF32) {
      std::memcpy(dst, f.data() + r * cols, size_t(cols) * 4);
    } else if (type == DType::kF16) {
      for (int64_t c = 0; c < cols; ++c) {
        const uint16_t h = fp32_to_fp16(f[size_t(r * cols + c)]);
        std::memcpy(dst + c * 2, &h, 2);
      }
    } else {
      quantize_row(type, f.data() + r * cols, dst, cols);
    }
  }
  return bytes;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tolerance, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tolerance * (1.0 + std::fabs(want[i]))) << what << " at " << i;
}

TEST_F(CudaTwin, MatmulOfEveryWeightTypeMatchesTheCpu) {
  // 67 rows: not a multiple of the 4 rows a thread block takes; token counts around the tile
  // of 8; 288 columns: nine quantisation blocks, more than a warp's 32 lanes take in one pass.
  const int64_t rows = 67;
  for (const int64_t cols : {96, 288, 1056}) {
    for (const DType type : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_0}) {
      const auto w = make_weights(type, rows, cols, uint32_t(cols));
      const MatrixView host_w{type, w.data(), rows, cols};
      const MatrixView dev_w{type, to_device(w.data(), w.size()), rows, cols};
      for (const int64_t n : {1, 3, 8, 17}) {
        const auto x = random_vec(size_t(n * cols), 7);
        std::vector<float> want(size_t(n * rows));
        cpu_.matmul(host_w, x.data(), n, want.data());
        float* y = device_floats(want.size());
        gpu_->matmul(dev_w, to_device(x), n, y);
        SCOPED_TRACE(std::string(dtype_name(type)) + " cols " + std::to_string(cols) + " n " + std::to_string(n));
        // Same products (exact integer block dots for the quantised types), summed in another order.
        expect_close(to_host(y, want.size()), want, 1e-4, "matmul");
      }
    }
  }
}

TEST_F(CudaTwin, SharedInputQuantisesOnceForMixedTypes) {
  const int64_t cols = 128;
  const auto wq = make_weights(DType::kQ4_0, 40, cols, 1), wf = make_weights(DType::kF16, 24, cols, 2);
  const MatrixView host[2] = {{DType::kQ4_0, wq.data(), 40, cols}, {DType::kF16, wf.data(), 24, cols}};
  const MatrixView dev[2] = {{DType::kQ4_0, to_device(wq.data(), wq.size()), 40, cols},
                             {DType::kF16, to_device(wf.data(), wf.size()), 24, cols}};
  const int64_t n = 5;
  const auto x = random_vec(size_t(n * cols), 3);
  std::vector<float> want0(size_t(n * 40)), want1(size_t(n * 24));
  cpu_.matmul(host[0], x.data(), n, want0.data());
  cpu_.matmul(host[1], x.data(), n, want1.data());
  float* ys[2] = {device_floats(want0.size()), device_floats(want1.size())};
  gpu_->matmul_shared_input(dev, 2, to_device(x), n, ys);
  expect_close(to_host(ys[0], want0.size()), want0, 1e-4, "Q4_0");
  expect_close(to_host(ys[1], want1.size()), want1, 1e-4, "F16");
}

// F16 weights with 16 or more tokens run on the tensor cores with the activations rounded to
// half: within that rounding of the CPU (relative 2^-11 per product; sums of 256 products),
// including a partial last tile of tokens and a batch shared with a quantised matrix.
TEST_F(CudaTwin, F16OnTheTensorCoresIsWithinHalfRoundingOfTheCpu) {
  const int64_t rows = 48, cols = 256;
  const auto wf = make_weights(DType::kF16, rows, cols, 21);
  const auto wq = make_weights(DType::kQ8_0, rows, cols, 22);
  const MatrixView host_f{DType::kF16, wf.data(), rows, cols}, host_q{DType::kQ8_0, wq.data(), rows, cols};
  const MatrixView dev[2] = {{DType::kF16, to_device(wf.data(), wf.size()), rows, cols},
                             {DType::kQ8_0, to_device(wq.data(), wq.size()), rows, cols}};
  for (const int64_t n : {16, 17, 40, 64}) {
    const auto x = random_vec(size_t(n * cols), uint32_t(n));
    std::vector<float> want_f(size_t(n * rows)), want_q(size_t(n * rows));
    cpu_.matmul(host_f, x.data(), n, want_f.data());
    cpu_.matmul(host_q, x.data(), n, want_q.data());
    float* ys[2] = {device_floats(want_f.size()), device_floats(want_q.size())};
    gpu_->matmul_shared_input(dev, 2, to_device(x), n, ys);
    expect_close(to_host(ys[0], want_f.size()), want_f, 2e-3, ("F16 tensor cores, n " + std::to_string(n)).c_str());
    expect_close(to_host(ys[1], want_q.size()), want_q, 1e-4, "Q8_0 beside them");
  }
}

TEST_F(CudaTwin, CpuLayoutsAreRefused) {
  const MatrixView x8{DType::kQ8_0x8, nullptr, 8, 32};
  EXPECT_THROW(gpu_->matmul(x8, nullptr, 1, nullptr), std::invalid_argument);
}

TEST_F(CudaTwin, GetRowsDequantiseExactly) {
  const int64_t rows = 5, cols = 96;
  const std::vector<int32_t> ids = {3, 0, 4, 3};
  for (const DType type : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_0}) {
    const auto w = make_weights(type, rows, cols, 11);
    const MatrixView host{type, w.data(), rows, cols}, dev{type, to_device(w.data(), w.size()), rows, cols};
    std::vector<float> want(ids.size() * size_t(cols));
    cpu_.get_rows(host, ids.data(), int64_t(ids.size()), want.data());
    float* out = device_floats(want.size());
    gpu_->get_rows(dev, ids.data(), int64_t(ids.size()), out);
    EXPECT_EQ(to_host(out, want.size()), want) << dtype_name(type);
    float* one = device_floats(size_t(cols));
    gpu_->get_row(dev, 4, one);
    EXPECT_EQ(to_host(one, size_t(cols)), std::vector<float>(want.begin() + 2 * cols, want.begin() + 3 * cols));
  }
  const int32_t bad = int32_t(rows);
  EXPECT_THROW(gpu_->get_rows({DType::kF32, nullptr, rows, cols}, &bad, 1, nullptr), std::out_of_range);
}

TEST_F(CudaTwin, ElementwiseOpsMatchTheCpu) {
  const int64_t n = 3, dim = 200;
  const auto x = random_vec(size_t(n * dim), 1), w = random_vec(size_t(dim), 2);
  std::vector<float> want(x.size());
  cpu_.rms_norm(x.data(), w.data(), n, dim, 1e-5f, want.data());
  float* out = device_floats(x.size());
  gpu_->rms_norm(to_device(x), to_device(w), n, dim, 1e-5f, out);
  expect_close(to_host(out, x.size()), want, 1e-6, "rms_norm");

  // Rotary: 4 heads of 50, the first 40 features rotated, positions 1000.. (large angles).
  auto r = random_vec(size_t(n * 200), 4);
  float* rd = to_device(r);
  cpu_.rope(r.data(), n, 4, 50, 40, 1000, 10000.0f);
  gpu_->rope(rd, n, 4, 50, 40, 1000, 10000.0f);
  expect_close(to_host(rd, r.size()), r, 1e-4, "rope");

  auto g = random_vec(1000, 5);
  const auto up = random_vec(1000, 6);
  float* gd = to_device(g);
  cpu_.swiglu(g.data(), up.data(), 1000);
  gpu_->swiglu(gd, to_device(up), 1000);
  expect_close(to_host(gd, g.size()), g, 1e-5, "swiglu");

  auto a = random_vec(777, 7);
  const auto b = random_vec(777, 8);
  float* ad = to_device(a);
  cpu_.add(a.data(), b.data(), 777);
  gpu_->add(ad, to_device(b), 777);
  EXPECT_EQ(to_host(ad, a.size()), a);
}

// A pool of `blocks` blocks, a shuffled block table, and keys/values written for `positions`
// positions through both backends.
struct PagedKv {
  int block_size = 16, kv_dim = 0;
  DType type = DType::kF32;
  std::vector<int32_t> table;
  std::vector<uint8_t> host_k, host_v;
  void *dev_k = nullptr, *dev_v = nullptr;
  int32_t* dev_table = nullptr;
  KvLayerView host_view() { return {host_k.data(), host_v.data(), block_size, kv_dim, type}; }
  KvLayerView dev_view() const { return {dev_k, dev_v, block_size, kv_dim, type}; }
};

TEST_F(CudaTwin, KvStoreWritesTheCpuBytesAndAttentionMatches) {
  const AttentionShape shape{4, 2, 48};  // grouped-query: two query heads per KV head
  for (const DType type : {DType::kF32, DType::kF16}) {
    SCOPED_TRACE(dtype_name(type));
    PagedKv kv;
    kv.type = type;
    kv.kv_dim = shape.n_kv_heads * shape.head_dim;
    // Three sequences: 1,100 positions (past one 1,024-position chunk of the GPU kernel), 45, 7.
    const int64_t lengths[3] = {1100, 45, 7};
    int64_t blocks = 0;
    for (int64_t len : lengths) blocks += (len + kv.block_size - 1) / kv.block_size;
    kv.table.resize(size_t(blocks));
    std::iota(kv.table.begin(), kv.table.end(), 0);
    std::shuffle(kv.table.begin(), kv.table.end(), std::mt19937(5));
    const size_t elem = type == DType::kF16 ? 2 : 4;
    const size_t pool_bytes = size_t(blocks * kv.block_size * kv.kv_dim) * elem;
    kv.host_k.assign(pool_bytes, 0);
    kv.host_v.assign(pool_bytes, 0);
    kv.dev_k = to_device(kv.host_k.data(), pool_bytes);
    kv.dev_v = to_device(kv.host_v.data(), pool_bytes);
    kv.dev_table = to_device(kv.table);

    const int64_t q_width = int64_t(shape.n_heads) * shape.head_dim;
    std::vector<AttentionSegment> host_segments, dev_segments;
    std::vector<std::vector<float>> host_q, host_out;
    std::vector<float*> dev_out;
    int64_t first_block = 0;
    for (int s = 0; s < 3; ++s) {
      const int64_t len = lengths[s];
      const int32_t* host_table = kv.table.data() + first_block;
      const int32_t* dev_table = kv.dev_table + first_block;
      first_block += (len + kv.block_size - 1) / kv.block_size;
      const auto k = random_vec(size_t(len * kv.kv_dim), uint32_t(10 + s));
      const auto v = random_vec(size_t(len * kv.kv_dim), uint32_t(20 + s));
      cpu_.kv_store(kv.host_view(), host_table, 0, len, k.data(), v.data());
      gpu_->kv_store(kv.dev_view(), dev_table, 0, len, to_device(k), to_device(v));
      // Queries: the last 1, 5 and 7 positions (a decode token and prefill chunks).
      const int64_t nq = s == 0 ? 1 : (s == 1 ? 5 : 7);
      host_q.push_back(random_vec(size_t(nq * q_width), uint32_t(30 + s)));
      host_out.emplace_back(size_t(nq * q_width));
      dev_out.push_back(device_floats(size_t(nq * q_width)));
      host_segments.push_back({host_q.back().data(), host_table, len - nq, nq, host_out.back().data()});
      dev_segments.push_back({to_device(host_q.back()), dev_table, len - nq, nq, dev_out.back()});
    }
    std::vector<uint8_t> dev_k(pool_bytes), dev_v(pool_bytes);
    gpu_->copy_to_host(dev_k.data(), kv.dev_k, pool_bytes);
    gpu_->copy_to_host(dev_v.data(), kv.dev_v, pool_bytes);
    EXPECT_EQ(dev_k, kv.host_k) << "keys";
    EXPECT_EQ(dev_v, kv.host_v) << "values";

    cpu_.attention_batch(kv.host_view(), host_segments.data(), host_segments.size(), shape);
    gpu_->attention_batch(kv.dev_view(), dev_segments.data(), dev_segments.size(), shape);
    for (int s = 0; s < 3; ++s)
      expect_close(to_host(dev_out[size_t(s)], host_out[size_t(s)].size()), host_out[size_t(s)], 1e-4, "attention");
  }
}

}  // namespace
}  // namespace sluice::kernels
