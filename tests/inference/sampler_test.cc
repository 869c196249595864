// Sampler: greedy is argmax, a seed reproduces the same draws, and each filter does what its
// name says.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "inference/llama/sampler.h"
#include "kernels/cpu/cpu_backend.h"

namespace sluice::inference {
namespace {

std::vector<float> logits() { return {1.0f, 3.0f, 2.0f, 0.5f, 2.9f, -1.0f}; }

std::vector<int32_t> draws(SamplingParams p, int n) {
  Sampler s(p);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    auto l = logits();
    out.push_back(s.sample(l, {}));
  }
  return out;
}

// A backend samples by the same rule from what prepare() resolved: the same draws, one per step,
// and penalties over the recent tokens; staged parameters are the backend's own copy.
TEST(Sampler, ABackendSamplingPreparedStepsPicksTheSamplersTokens) {
  SamplingParams p;
  p.temperature = 1.2f;
  p.top_k = 4;
  p.top_p = 0.97f;
  p.repetition_penalty = 1.3f;
  p.frequency_penalty = 0.4f;
  p.seed = 11;
  Sampler on_host(p), for_backend(p);
  kernels::CpuBackend backend(1);
  std::vector<int32_t> recent = {1, 4, 1, 2};
  for (int step = 0; step < 40; ++step) {
    auto host_logits = logits();
    const int32_t want = on_host.sample(host_logits, recent);
    kernels::TokenSampling staged = for_backend.prepare(recent);
    backend.stage_sampling(&staged, 1);
    staged.temperature = 0;  // the caller's copy may change once staged
    auto backend_logits = logits();
    int32_t got = -1;
    backend.sample_staged(backend_logits.data(), 1, int64_t(backend_logits.size()), false, &got);
    ASSERT_EQ(got, want) << "step " << step;
    EXPECT_EQ(backend_logits, host_logits) << "the same penalties";
    recent.push_back(want);
  }
}

TEST(Sampler, GreedyIsArgmax) {
  SamplingParams p;
  p.temperature = 0;
  EXPECT_EQ(draws(p, 3), (std::vector<int32_t>{1, 1, 1}));
}

TEST(Sampler, SameSeedSameDrawsDifferentSeedDifferentDraws) {
  SamplingParams p;
  p.temperature = 1.5f;
  p.top_k = 0;
  p.top_p = 1;
  p.min_p = 0;
  p.seed = 7;
  const auto a = draws(p, 50), b = draws(p, 50);
  EXPECT_EQ(a, b);
  p.seed = 8;
  EXPECT_NE(draws(p, 50), a);
}

TEST(Sampler, TopKAndMinPAndTopPRestrictTheCandidates) {
  SamplingParams p;
  p.temperature = 5.0f;  // flat: without filters every token would appear
  p.top_p = 1;
  p.min_p = 0;
  p.top_k = 2;
  for (int32_t t : draws(p, 200)) EXPECT_TRUE(t == 1 || t == 4) << t;
  p.top_k = 0;
  p.min_p = 0.5f;  // keeps tokens with p >= 0.5 * p_max at temperature 1: logits >= 3 - ln 2
  for (int32_t t : draws(p, 200)) EXPECT_TRUE(t == 1 || t == 4) << t;
  p.min_p = 0;
  p.top_p = 0.3f;  // the top token alone has probability > 0.3
  for (int32_t t : draws(p, 200)) EXPECT_EQ(t, 1);
}

TEST(Sampler, TemperatureMatchesSoftmaxFrequencies) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1;
  p.min_p = 0;
  p.seed = 3;
  std::map<int32_t, int> counts;
  const int n = 20000;
  for (int32_t t : draws(p, n)) counts[t]++;
  const auto l = logits();
  double z = 0;
  for (float v : l) z += std::exp(v);
  for (size_t i = 0; i < l.size(); ++i) EXPECT_NEAR(counts[int32_t(i)] / double(n), std::exp(l[i]) / z, 0.015);
}

TEST(Sampler, RepetitionPenaltyDiscouragesRecentTokens) {
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 2.0f;
  Sampler s(p);
  auto l = logits();
  const std::vector<int32_t> recent = {1};
  EXPECT_EQ(s.sample(l, recent), 4);  // 3.0 / 2 = 1.5 < 2.9
  EXPECT_FLOAT_EQ(l[1], 1.5f);
}

}  // namespace
}  // namespace sluice::inference

namespace sluice::inference {
namespace {

TEST(Sampler, PresenceAndFrequencyPenaltiesFollowOpenAi) {
  SamplingParams p;
  p.temperature = 0;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  Sampler s(p);
  auto l = logits();
  const std::vector<int32_t> recent = {4, 4, 2};
  s.sample(l, recent);
  EXPECT_FLOAT_EQ(l[4], 2.9f - 0.5f - 0.5f);
  EXPECT_FLOAT_EQ(l[2], 2.0f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(l[1], 3.0f);
}

}  // namespace
}  // namespace sluice::inference
