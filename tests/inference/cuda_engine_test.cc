// The serving engine on the CUDA twin (issue 21, part 2): continuous batching, paged KV in
// device memory, preemption when the KV budget runs out and verified prefix reuse run
// unchanged above the backend, so every greedy sequence of a crowded GPU batch gets the tokens
// the CPU engine gives it alone. stories260K is F32, which the GPU reproduces byte for byte
// (cuda_generation_test.cc), so the comparison is exact. Skips by name without a GPU; fails
// instead under SLUICE_REQUIRE_GPU=1 (scripts/gpu-check).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "inference/engine/engine_scheduler.h"
#include "inference/llama/kv_cache.h"
#include "inference/llama/llama_model.h"
#include "kernels/backend_factory.h"
#include "tests/support/test_models.h"

namespace sluice::inference {
namespace {

using Steady = std::chrono::steady_clock;

// A shared opening of more than one 16-token block, so the second wave reuses it.
const std::string kOpening = "Once upon a time, there was a little girl named Lily. She loved to play outside. ";
const std::vector<std::string> kEndings = {"One day", "The cat sat", "Tom had a big red ball", "She was happy",
                                           "Lily and Ben went to the park", ""};

struct Out {
  GenerationResult result;
  bool finished = false;
};

GenerationRequest greedy_request(const std::string& prompt, int max_tokens, Out* out) {
  GenerationRequest r;
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.on_finish = [out](const GenerationResult& res) {
    out->finished = true;
    out->result = res;
  };
  return r;
}

// stories260K loaded for the CPU and for the GPU; skips by name without a GPU (fails instead
// under SLUICE_REQUIRE_GPU=1) or without ../shared.
class CudaEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!kernels::backend_kind_available(kernels::BackendKind::kCuda, &why)) {
      if (std::getenv("SLUICE_REQUIRE_GPU")) FAIL() << "SLUICE_REQUIRE_GPU is set but " << why;
      GTEST_SKIP() << why << ": the engine is not run on the CUDA twin here";
    }
    const std::string path = testing::shared_model("stories260K.gguf");
    SLUICE_REQUIRE_SHARED(path);
    cpu_model = LlamaModel::load(path);
    gpu_model = LlamaModel::load(path, kernels::BackendKind::kCuda);
  }
  std::unique_ptr<LlamaModel> cpu_model, gpu_model;
};

void run_until_idle(EngineScheduler& s) {
  for (int i = 0; i < 100000 && !s.idle(); ++i) s.step();
  ASSERT_TRUE(s.idle());
}

TEST_F(CudaEngine, CrowdedPreemptedAndPrefixReusedSequencesGetTheCpusTokens) {
  constexpr int kTokens = 120;

  // What each prompt generates alone, on the CPU engine.
  std::vector<std::string> alone;
  for (const std::string& ending : kEndings) {
    EngineOptions o;
    o.context = 256;
    EngineScheduler s(*cpu_model, o);
    Out out;
    s.add(greedy_request(kOpening + ending, kTokens, &out), Steady::now());
    run_until_idle(s);
    ASSERT_TRUE(out.finished);
    alone.push_back(out.result.text);
  }

  EngineOptions o;
  o.backend = kernels::BackendKind::kCuda;
  o.context = 256;
  o.block_size = 16;
  const auto& c = gpu_model->config();
  // 24 blocks for six sequences of up to about 10 blocks each: they cannot all fit, so the
  // engine preempts and resumes.
  o.kv_budget_bytes = 24 * kv_block_bytes(c.n_layers, c.n_kv_heads * c.head_dim, 16, o.kv_type);
  EngineScheduler s(*gpu_model, o);
  for (int wave = 0; wave < 2; ++wave) {
    SCOPED_TRACE(wave == 0 ? "first wave" : "second wave (the opening's blocks cached)");
    std::vector<Out> outs(kEndings.size());
    for (size_t i = 0; i < kEndings.size(); ++i) s.add(greedy_request(kOpening + kEndings[i], kTokens, &outs[i]), Steady::now());
    run_until_idle(s);
    int preempted = 0, reused = 0;
    for (size_t i = 0; i < kEndings.size(); ++i) {
      ASSERT_TRUE(outs[i].finished) << i;
      EXPECT_EQ(outs[i].result.text, alone[i]) << "prompt " << i << " (" << kEndings[i] << ")";
      preempted += outs[i].result.preemptions;
      reused += outs[i].result.reused_tokens;
    }
    if (wave == 0) {
      EXPECT_GT(preempted, 0) << "the budget was meant to force preemption";
    } else {
      EXPECT_GT(reused, 0) << "the second wave was meant to reuse the opening";
    }
  }
  EXPECT_EQ(s.kv_stats().in_use, 0);
  EXPECT_GT(s.replayed_decode_steps(), 0) << "decode steps were meant to run as CUDA graphs";
}

// Sampling on the device with each request's seed: the GPU engine (graphs, device sampling)
// picks the CPU engine's tokens. stories260K's F32 logits agree to float rounding, so a draw
// would have to land within that of a boundary to differ.
TEST_F(CudaEngine, SeededSamplingOnTheDeviceGivesTheCpusTexts) {
  auto texts = [&](const LlamaModel& model, kernels::BackendKind kind, int64_t* replayed) {
    EngineOptions o;
    o.backend = kind;
    o.context = 256;
    EngineScheduler s(model, o);
    std::vector<Out> outs(kEndings.size());
    for (size_t i = 0; i < kEndings.size(); ++i) {
      GenerationRequest r = greedy_request(kOpening + kEndings[i], 80, &outs[i]);
      r.sampling.temperature = 0.8f;
      r.sampling.top_k = 40;
      r.sampling.top_p = 0.95f;
      r.sampling.repetition_penalty = 1.1f;
      r.sampling.seed = 42 + i;
      s.add(std::move(r), Steady::now());
    }
    run_until_idle(s);
    if (replayed) *replayed = s.replayed_decode_steps();
    std::vector<std::string> out;
    for (const Out& o2 : outs) out.push_back(o2.result.text);
    return out;
  };
  int64_t replayed = 0;
  const auto want = texts(*cpu_model, kernels::BackendKind::kCpu, nullptr);
  const auto got = texts(*gpu_model, kernels::BackendKind::kCuda, &replayed);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "prompt " << i;
  EXPECT_GT(replayed, 0);
}

}  // namespace
}  // namespace sluice::inference
