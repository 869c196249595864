// Generator: usage counts, max tokens, stop strings, cancellation, seeded reproducibility,
// prompted generation semantics, and the quantize / synth tools end to end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>

#include "inference/llama/generator.h"
#include "inference/llama/llama_model.h"
#include "inference/llama/model_tools.h"
#include "kernels/cpu/f32_panels.h"
#include "kernels/cpu/quant_x8.h"
#include "kernels/quant_blocks.h"
#include "tests/support/test_models.h"

namespace sluice::inference {
namespace {

std::unique_ptr<LlamaModel> stories() {
  return LlamaModel::load(testing::shared_model("stories260K.gguf"));
}

TEST(Generator, PromptedGreedyFollowsReferenceSemantics) {
  SLUICE_REQUIRE_SHARED(testing::shared_model("stories260K.gguf"));
  const auto m = stories();
  Generator gen(*m, {});
  GenerationRequest req;
  req.prompt = "Once upon a time";
  req.sampling.temperature = 0;
  req.max_tokens = 20;
  const auto res = gen.generate(req);
  EXPECT_EQ(res.prompt_tokens, int(m->tokenizer().encode("Once upon a time", true).size()));
  EXPECT_EQ(res.completion_tokens, 20);
  EXPECT_EQ(res.finish, FinishReason::kLength);
  // The reference story starts "Once upon a time, there was a little girl named Lily."
  EXPECT_THAT(res.text, ::testing::StartsWith(", there was a little girl"));
}

TEST(Generator, StopStringEndsGenerationAndIsExcluded) {
  SLUICE_REQUIRE_SHARED(testing::shared_model("stories260K.gguf"));
  const auto m = stories();
  Generator gen(*m, {});
  GenerationRequest req;
  req.sampling.temperature = 0;
  req.max_tokens = 200;
  req.stop = {"Lily"};
  std::string streamed;
  req.on_text = [&](std::string_view s) { streamed += s; };
  const auto res = gen.generate(req);
  EXPECT_EQ(res.text, "Once upon a time, there was a little girl named ");
  EXPECT_EQ(streamed, res.text);
  EXPECT_EQ(res.finish, FinishReason::kStop);
}

TEST(Generator, CancellationStopsAtTheNextToken) {
  SLUICE_REQUIRE_SHARED(testing::shared_model("stories260K.gguf"));
  const auto m = stories();
  Generator gen(*m, {});
  std::atomic<bool> cancel{false};
  GenerationRequest req;
  req.sampling.temperature = 0;  // greedy: three whole-word pieces, whatever the sampler's defaults
  req.max_tokens = 200;
  req.should_stop = [&] { return cancel.load(); };
  int events = 0;
  req.on_text = [&](std::string_view) {
    if (++events == 3) cancel = true;  // e.g. the client went away while reading
  };
  const auto res = gen.generate(req);
  EXPECT_EQ(res.finish, FinishReason::kCancelled);
  EXPECT_EQ(res.completion_tokens, 3);
  int polls = 0;  // a condition polled with its own count stops the same way
  GenerationRequest req2;
  req2.max_tokens = 200;
  req2.should_stop = [&] { return ++polls > 5; };
  const auto res2 = gen.generate(req2);
  EXPECT_EQ(res2.finish, FinishReason::kCancelled);
  EXPECT_LE(res2.completion_tokens, 5);
  cancel = true;  // cancelled before start: no work at all
  const auto none = gen.generate(req);
  EXPECT_EQ(none.completion_tokens, 0);
  EXPECT_EQ(none.finish, FinishReason::kCancelled);
}

TEST(Generator, SeededSamplingIsReproducible) {
  SLUICE_REQUIRE_SHARED(testing::shared_model("stories260K.gguf"));
  const auto m = stories();
  Generator gen(*m, {});
  GenerationRequest req;
  req.prompt = "Tom had a dog";
  req.sampling.temperature = 1.0f;
  req.sampling.seed = 1234;
  req.max_tokens = 60;
  const auto a = gen.generate(req), b = gen.generate(req);
  EXPECT_EQ(a.text, b.text);
  req.sampling.seed = 99;
  EXPECT_NE(gen.generate(req).text, a.text);
}

TEST(Generator, PromptLongerThanContextIsRefused) {
  const auto bytes = testing::tiny_llama_writer().serialize();
  const auto m = LlamaModel::from_file(GgufFile::parse("tiny.gguf", bytes.data(), bytes.size()));
  GeneratorOptions o;
  o.context = 8;
  Generator gen(*m, o);
  GenerationRequest req;
  req.prompt = std::string(40, 'a');
  EXPECT_THROW(gen.generate(req), ModelError);
  req.prompt = "a";
  req.max_tokens = 100;
  req.sampling.temperature = 0;
  const auto res = gen.generate(req);  // context-bounded: 8 positions minus the prompt
  EXPECT_LE(res.prompt_tokens + res.completion_tokens, 9);
}

// Prompt processing in one batch, in small chunks and token by token give the same logits.
TEST(Generator, BatchedPromptMatchesTokenByToken) {
  SLUICE_REQUIRE_SHARED(testing::shared_model("stories260K.gguf"));
  const auto m = stories();
  const auto ids = m->tokenizer().encode("Lily and Ben went to the park to play.", true);
  GeneratorOptions big, small;
  small.max_batch = 3;
  Generator a(*m, big), b(*m, small), c(*m, big);
  const auto la = a.forward(ids, 0);
  const auto lb = b.forward(ids, 0);
  std::vector<float> lc;
  for (size_t i = 0; i < ids.size(); ++i) lc = c.forward({ids[i]}, int64_t(i));
  for (size_t i = 0; i < la.size(); ++i) {
    ASSERT_NEAR(la[i], lb[i], 1e-4);
    ASSERT_NEAR(la[i], lc[i], 1e-4);
  }
}

double rel_rms(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0, s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    e += double(a[i] - b[i]) * (a[i] - b[i]);
    s += double(b[i]) * b[i];
  }
  return std::sqrt(e / s);
}

TEST(ModelTools, QuantizedStoriesStaysCloseToF32) {
  SLUICE_REQUIRE_SHARED(testing::shared_model("stories260K.gguf"));
  const auto f32 = stories();
  const std::string dir = ::testing::TempDir();
  const auto ids = f32->tokenizer().encode("Once upon a time", true);
  Generator g(*f32, {});
  const auto ref = g.forward(ids, 0);
  for (auto [type, tol] : {std::pair{kernels::DType::kQ8_0, 0.03}, std::pair{kernels::DType::kQ4_0, 0.3}}) {
    const std::string out = dir + "/stories-" + kernels::dtype_name(type) + ".gguf";
    quantize_model(testing::shared_model("stories260K.gguf"), out, type);
    const auto q = LlamaModel::load(out);
    // Quantised matrices run interleaved where that is the CPU's faster layout (AVX2).
    const bool interleaved = kernels::x8_pays(kernels::default_isa());
    EXPECT_EQ(q->layers[0].wq.type, interleaved ? kernels::x8_type(type) : type);
    // 172-wide rows cannot be quantised in blocks: F32, in row panels where those are faster.
    EXPECT_EQ(q->layers[0].w_down.type,
              kernels::f32_panels_pay(kernels::default_isa()) ? kernels::DType::kF32x16 : kernels::DType::kF32);
    Generator gq(*q, {});
    EXPECT_LT(rel_rms(gq.forward(ids, 0), ref), tol) << kernels::dtype_name(type);
    std::filesystem::remove(out);
  }
  EXPECT_THROW(parse_weight_type("q5_k"), ModelError);
}

TEST(ModelTools, SynthModelLoadsAndRuns) {
  const std::string out = ::testing::TempDir() + "/synth-15m-q4_0.gguf";
  synth_model(synth_preset("15m"), kernels::DType::kQ4_0, out);
  const auto m = LlamaModel::load(out);
  EXPECT_EQ(m->config().dim, 288);
  EXPECT_EQ(m->config().vocab_size, 32000);
  EXPECT_NE(m->output.data, m->token_embd.data);  // separate output matrix, like the anchors'
  Generator g(*m, {});
  const auto& logits = g.forward({1, 500, 7}, 0);
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  std::filesystem::remove(out);
  EXPECT_THROW(synth_preset("7b"), ModelError);
}

}  // namespace
}  // namespace sluice::inference
