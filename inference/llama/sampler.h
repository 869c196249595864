// Sampler: picks the next token from logits. Steps, in llama.cpp's default order:
//   repetition, presence and frequency penalties (over the last `repeat_last_n` tokens)
//   -> greedy when temperature <= 0
//   -> top-k -> top-p -> min-p (both on the softmax at temperature 1) -> temperature -> draw.
// Draws come from a seeded 64-bit Mersenne Twister converted to [0,1) by our own arithmetic, so a
// seed reproduces the same tokens on every platform and library version.
//
// The parameters are graph/sampling_params.h's, the one struct a request carries from the HTTP
// body to here. One Sampler per generation; not thread-safe.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "graph/sampling_params.h"

namespace sluice::inference {

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // `logits` is modified (penalties). `recent` are the tokens so far (prompt and output).
  int32_t sample(std::span<float> logits, std::span<const int32_t> recent);

  static int32_t argmax(std::span<const float> logits);

 private:
  double uniform();  // [0, 1)

  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> cand_;
};

}  // namespace sluice::inference
