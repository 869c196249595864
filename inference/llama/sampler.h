// Sampler: one generation's token choices. It resolves the request's parameters for one step
// (prepare: the penalties over the last `repeat_last_n` tokens, and the draw) into a
// kernels::TokenSampling, whose rule (kernels/token_sampling.h: penalties -> greedy or top-k ->
// top-p -> min-p -> temperature -> draw) runs on the host (sample) or on a backend's device
// (KernelBackend::sample_rows) with the same result.
// Draws come from a seeded 64-bit Mersenne Twister converted to [0,1) by our own arithmetic, so a
// seed reproduces the same tokens on every platform and library version; one draw per step that
// samples (temperature > 0), none for greedy steps.
//
// The parameters are graph/sampling_params.h's, the one struct a request carries from the HTTP
// body to here. One Sampler per generation; not thread-safe.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "graph/sampling_params.h"
#include "kernels/token_sampling.h"

namespace sluice::inference {

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // `logits` is modified (penalties). `recent` are the tokens so far (prompt and output).
  int32_t sample(std::span<float> logits, std::span<const int32_t> recent);

  // This step's parameters for a backend to sample with; draws once when temperature > 0. The
  // result's penalties point into this Sampler and stay valid until the next prepare().
  kernels::TokenSampling prepare(std::span<const int32_t> recent);

  static int32_t argmax(std::span<const float> logits);

 private:
  double uniform();  // [0, 1)

  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<kernels::TokenPenalty> penalties_;
  std::vector<int32_t> seen_;
  std::vector<std::pair<float, int32_t>> cand_;
};

}  // namespace sluice::inference
