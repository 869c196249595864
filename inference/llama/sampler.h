// Sampler: picks the next token from logits. Steps, in llama.cpp's default order:
//   repetition, presence and frequency penalties (over the last `repeat_last_n` tokens)
//   -> greedy when temperature <= 0
//   -> top-k -> top-p -> min-p (both on the softmax at temperature 1) -> temperature -> draw.
// Draws come from a seeded 64-bit Mersenne Twister converted to [0,1) by our own arithmetic, so a
// seed reproduces the same tokens on every platform and library version.
//
// One Sampler per generation; not thread-safe.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace sluice::generation {

struct SamplingParams {
  float temperature = 0.8f;        // <= 0: greedy (argmax)
  int top_k = 40;                  // <= 0: off
  float top_p = 0.95f;             // >= 1: off
  float min_p = 0.05f;             // <= 0: off
  float repetition_penalty = 1.0f; // 1: off; > 1 discourages recent tokens (llama.cpp's rule)
  float presence_penalty = 0.0f;   // OpenAI: subtracted once from each recent token's logit
  float frequency_penalty = 0.0f;  // OpenAI: subtracted per occurrence of a recent token
  int repeat_last_n = 64;          // how many recent tokens the penalties look at
  uint64_t seed = 0;
};

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

}  // namespace sluice::generation
