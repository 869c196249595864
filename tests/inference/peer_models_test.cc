// Files written by llama.cpp's own quantizer (../shared/models/peer/) load, and their
// dequantised tensors agree with each other within the two formats' quantisation error; their
// forward passes agree too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <vector>

#include "inference/llama/generator.h"
#include "inference/llama/llama_model.h"
#include "kernels/cpu/quant_x8.h"
#include "kernels/quant_blocks.h"
#include "tests/support/test_models.h"

namespace sluice::inference {
namespace {

std::vector<float> dequantize(const GgufTensor& t) {
  std::vector<float> out(size_t(t.elements));
  const int64_t cols = t.dims[0], rows = t.elements / cols, rb = kernels::dtype_row_bytes(t.type, cols);
  for (int64_t r = 0; r < rows; ++r) kernels::dequantize_row(t.type, t.data + r * rb, out.data() + r * cols, cols);
  return out;
}

TEST(PeerModels, Q8AndQ4PureFromLlamaCppAgreeWithinQuantisationError) {
  const std::string q8p = testing::shared_model("peer/rand15M-q8_0.gguf"), q4p = testing::shared_model("peer/rand15M-q4_0-pure.gguf");
  SLUICE_REQUIRE_SHARED(q8p);
  SLUICE_REQUIRE_SHARED(q4p);
  const auto q8 = LlamaModel::load(q8p), q4 = LlamaModel::load(q4p);
  EXPECT_EQ(q8->config().dim, 288);
  EXPECT_EQ(q8->config().n_layers, 6);
  const bool interleaved = kernels::x8_pays(kernels::default_isa());  // the interleaved layouts
  EXPECT_EQ(q8->layers[0].wq.type, interleaved ? kernels::DType::kQ8_0x8 : kernels::DType::kQ8_0);
  EXPECT_EQ(q4->layers[0].wq.type, interleaved ? kernels::DType::kQ4_0x8 : kernels::DType::kQ4_0);
  EXPECT_EQ(q4->output.type, interleaved ? kernels::DType::kQ4_0x8 : kernels::DType::kQ4_0);
  for (const auto& t8 : q8->file().tensors()) {
    const GgufTensor* t4 = q4->file().find_tensor(t8.name);
    ASSERT_NE(t4, nullptr) << t8.name;
    ASSERT_EQ(t4->dims, t8.dims) << t8.name;
    const auto a = dequantize(t8), b = dequantize(*t4);
    // Per block of 32, Q4_0 is off by at most one step (amax/8) of that block; Q8_0 by half of
    // amax/127. Check every element against its block's bound.
    for (size_t blk = 0; blk < a.size() / 32; ++blk) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(a[blk * 32 + j]));
      const float bound = amax / 8.0f * 1.02f + amax / 127.0f + 1e-6f;
      for (int j = 0; j < 32; ++j) ASSERT_LE(std::fabs(a[blk * 32 + j] - b[blk * 32 + j]), bound) << t8.name << " block " << blk;
    }
  }
  // Same weights, two formats: the forward passes agree closely in direction.
  Generator g8(*q8, {}), g4(*q4, {});
  const std::vector<int32_t> ids = {1, 400, 9000, 23};
  const auto l8 = g8.forward(ids, 0);
  const auto l4 = g4.forward(ids, 0);
  double dot = 0, n8 = 0, n4 = 0;
  for (size_t i = 0; i < l8.size(); ++i) {
    dot += double(l8[i]) * l4[i];
    n8 += double(l8[i]) * l8[i];
    n4 += double(l4[i]) * l4[i];
  }
  EXPECT_GT(dot / std::sqrt(n8 * n4), 0.9);
}

}  // namespace
}  // namespace sluice::inference

namespace sluice::inference {
namespace {

// The interleaved layouts (kernels/cpu/quant_x8.h) compute the file's row layout's products
// with another float summation order: the logits agree to rounding. SLUICE_QUANT_LAYOUT=rows
// keeps the file's layout.
TEST(PeerModels, InterleavedLayoutsAgreeWithTheFilesRowLayout) {
  if (!kernels::x8_pays(kernels::default_isa())) GTEST_SKIP() << "this CPU's kernels keep quantised weights row-major";
  for (const char* name : {"peer/rand15M-q8_0.gguf", "peer/rand15M-q4_0-pure.gguf"}) {
    const std::string path = testing::shared_model(name);
    SLUICE_REQUIRE_SHARED(path);
    ::setenv("SLUICE_QUANT_LAYOUT", "rows", 1);
    const auto rows = LlamaModel::load(path);
    ::unsetenv("SLUICE_QUANT_LAYOUT");
    const auto interleaved = LlamaModel::load(path);
    EXPECT_EQ(rows->prepared_matrices(), 0u) << name;
    EXPECT_FALSE(kernels::is_x8(rows->layers[0].wq.type)) << name;
    EXPECT_EQ(interleaved->prepared_matrices(), 6u * 7u + 1u) << name;  // every layer matrix and the output
    EXPECT_TRUE(kernels::is_x8(interleaved->output.type)) << name;
    size_t want = size_t(kernels::x8_bytes(rows->output));  // the copies are the matrices' bytes, reordered
    for (const LlamaLayer& L : rows->layers)
      for (const auto& v : {L.wq, L.wk, L.wv, L.wo, L.w_gate, L.w_up, L.w_down}) want += size_t(kernels::x8_bytes(v));
    EXPECT_EQ(interleaved->prepared_bytes(), want) << name;
    Generator a(*rows, {}), b(*interleaved, {});
    const std::vector<int32_t> ids = {1, 400, 9000, 23, 5, 77};
    const auto la = a.forward(ids, 0);
    const auto lb = b.forward(ids, 0);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < la.size(); ++i) {
      diff += double(la[i] - lb[i]) * (la[i] - lb[i]);
      norm += double(la[i]) * la[i];
    }
    EXPECT_LT(std::sqrt(diff / norm), 1e-4) << name;
  }
}

}  // namespace
}  // namespace sluice::inference
