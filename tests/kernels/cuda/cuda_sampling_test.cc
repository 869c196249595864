// Sampling on the GPU (CudaBackend::stage_sampling / sample_staged) against the host rule
// (kernels/token_sampling.h), and the GPU's decode-step recording (a CUDA graph) against the
// same operations run one by one. Seeded random logits with ties, -inf masks and penalties,
// under every filter; the draws are the same numbers on both sides, so the tokens must be the
// same (a draw within double rounding of a boundary could differ; that is unlikely with 53-bit
// draws over these rows, and the test would name the row). Not yet run on a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/token_sampling.h"
#include "tests/kernels/cuda/cuda_twin.h"

namespace sluice::kernels {
namespace {

struct Case {
  const char* name;
  TokenSampling params;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  TokenSampling greedy;
  greedy.temperature = 0;
  out.push_back({"greedy", greedy});
  TokenSampling plain;
  plain.temperature = 1.0f;
  out.push_back({"temperature 1", plain});
  TokenSampling hot = plain;
  hot.temperature = 1.7f;
  hot.top_k = 50;
  out.push_back({"top-k 50 at 1.7", hot});
  TokenSampling nucleus = plain;
  nucleus.temperature = 0.7f;
  nucleus.top_p = 0.9f;
  out.push_back({"top-p 0.9 at 0.7", nucleus});
  TokenSampling min_p = plain;
  min_p.min_p = 0.05f;
  out.push_back({"min-p 0.05", min_p});
  TokenSampling all = plain;
  all.temperature = 0.8f;
  all.top_k = 200;
  all.top_p = 0.95f;
  all.min_p = 0.01f;
  out.push_back({"every filter", all});
  return out;
}

TEST_F(CudaTwin, SamplingPicksTheHostRulesTokens) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<std::pair<float, int32_t>> scratch;
  const std::vector<TokenPenalty> penalties = {{3, 1}, {17, 4}, {100, 2}, {511, 1}, {-5, 1}, {1 << 30, 1}};
  for (const int64_t vocab : {512, 32000}) {
    for (const Case& c : cases()) {
      constexpr int64_t kRows = 24;
      std::vector<float> logits(size_t(kRows * vocab));
      for (float& l : logits) l = std::round(normal(rng) * 4) / 4;  // quarter steps: many ties
      std::vector<TokenSampling> params(kRows, c.params);
      for (int64_t r = 0; r < kRows; ++r) {
        TokenSampling& p = params[size_t(r)];
        p.uniform = uniform(rng);
        if (r % 3 == 1) {  // penalties on a third of the rows
          p.repetition_penalty = 1.3f;
          p.presence_penalty = 0.5f;
          p.frequency_penalty = 0.25f;
          p.penalties = penalties.data();
          p.penalty_count = int32_t(penalties.size());
        }
        if (r % 4 == 2)  // a constrained row: most tokens masked
          for (int64_t v = 0; v < vocab; ++v)
            if (v % 7 != 0) logits[size_t(r * vocab + v)] = -std::numeric_limits<float>::infinity();
        if (r == 5)  // every token masked
          for (int64_t v = 0; v < vocab; ++v) logits[size_t(r * vocab + v)] = -std::numeric_limits<float>::infinity();
      }
      float* device_logits = to_device(logits);
      std::vector<int32_t> want(kRows);
      for (int64_t r = 0; r < kRows; ++r)
        want[size_t(r)] = sample_token(logits.data() + r * vocab, vocab, params[size_t(r)], scratch);
      bool greedy_only = c.params.temperature <= 0;
      gpu_->stage_sampling(params.data(), kRows);
      BackendBuffer ids(*gpu_, kRows * sizeof(int32_t));
      gpu_->sample_staged(device_logits, kRows, vocab, greedy_only, static_cast<int32_t*>(ids.data()));
      std::vector<int32_t> got(kRows);
      gpu_->copy_to_host(got.data(), ids.data(), got.size() * sizeof(int32_t));
      for (int64_t r = 0; r < kRows; ++r)
        EXPECT_EQ(got[size_t(r)], want[size_t(r)]) << c.name << ", vocab " << vocab << ", row " << r;
      // The penalised logits are the host's too (they were applied in place on both sides).
      const std::vector<float> after = to_host(device_logits, logits.size());
      for (size_t i = 0; i < after.size(); ++i)
        ASSERT_EQ(after[i], logits[i]) << c.name << " penalties at " << i;
    }
  }
}

TEST_F(CudaTwin, ARecordedStepReplaysWithTheInputsStagedBeforeEachReplay) {
  // The step: row lookups by staged ids, then greedy sampling of those rows; recorded once,
  // replayed with new ids and new staged parameters.
  const int64_t vocab = 1000, rows = 8;
  std::vector<float> table(size_t(vocab * vocab));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (float& v : table) v = normal(rng);
  const MatrixView w{DType::kF32, to_device(table), vocab, vocab};
  int32_t* ids = static_cast<int32_t*>(to_device(std::vector<int32_t>(rows, 0).data(), rows * sizeof(int32_t)));
  float* picked = device_floats(size_t(rows * vocab));
  BackendBuffer tokens(*gpu_, rows * sizeof(int32_t));
  std::vector<TokenSampling> params(rows);
  for (auto& p : params) p.temperature = 0;
  gpu_->stage_sampling(params.data(), rows);
  auto step = [&] {
    gpu_->get_rows_at(w, ids, rows, picked);
    gpu_->sample_staged(picked, rows, vocab, true, static_cast<int32_t*>(tokens.data()));
  };
  step();  // grows the scratch before recording
  auto recording = gpu_->record(step);
  ASSERT_NE(recording, nullptr);
  const uint64_t epoch = gpu_->scratch_epoch();
  for (int round = 0; round < 3; ++round) {
    std::vector<int32_t> host_ids(rows);
    for (auto& id : host_ids) id = int32_t(rng() % vocab);
    gpu_->copy_to_backend(ids, host_ids.data(), rows * sizeof(int32_t));
    gpu_->stage_sampling(params.data(), rows);
    ASSERT_EQ(gpu_->scratch_epoch(), epoch);
    recording->replay();
    std::vector<int32_t> got(rows);
    gpu_->copy_to_host(got.data(), tokens.data(), rows * sizeof(int32_t));
    for (int64_t r = 0; r < rows; ++r)
      EXPECT_EQ(got[size_t(r)], argmax_token(table.data() + int64_t(host_ids[size_t(r)]) * vocab, vocab))
          << "round " << round << ", row " << r;
  }
}

}  // namespace
}  // namespace sluice::kernels
