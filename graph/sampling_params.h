// SamplingParams: how the next token is picked, as a client asks for it (OpenAI's fields plus
// vLLM's top_k and min_p) and as the sampler (inference/llama/sampler.h) applies it. One struct
// from the HTTP body to the sampler, and one set of defaults: these, the neutral values of the
// OpenAI API (temperature 1, every filter and penalty off), so a field a client leaves out
// changes nothing. docs/generation.md lists them with their reasons.
#pragma once

#include <cstdint>
#include <optional>

namespace sluice {

struct SamplingParams {
  float temperature = 1.0f;         // <= 0: greedy (argmax)
  int top_k = 0;                    // <= 0: off
  float top_p = 1.0f;               // >= 1: off
  float min_p = 0.0f;               // <= 0: off
  float repetition_penalty = 1.0f;  // 1: off; > 1 discourages recent tokens (llama.cpp's rule)
  float presence_penalty = 0.0f;    // OpenAI: subtracted once from each recent token's logit
  float frequency_penalty = 0.0f;   // OpenAI: subtracted per occurrence of a recent token
  int repeat_last_n = 64;           // how many recent tokens the penalties look at
  // Unset: the generate node seeds with the request id (distinct draws per request, each
  // reproducible from its id); a Generator or engine used directly draws with seed 0.
  std::optional<std::uint64_t> seed;
};

}  // namespace sluice
