// Token sampling: how one row of logits becomes the next token, the rule every backend's
// sample_staged() (kernels/backend.h) and the host sampler (inference/llama/sampler.h) share.
//
// Steps, in llama.cpp's default order:
//   penalties (each listed token once: repetition divides a positive logit and multiplies a
//   negative one, presence subtracts a constant, frequency subtracts per occurrence)
//   -> greedy (the first largest logit) when temperature <= 0
//   -> drop -inf logits (constrained decoding's excluded tokens) unless every logit is -inf
//   -> order by logit, ties by lower id -> top-k -> top-p -> min-p (both on the softmax at
//   temperature 1, sums in double) -> weights at `temperature` -> the first token whose
//   running weight exceeds uniform * total.
// The draw is an input (`uniform`, in [0, 1)), so the caller's seeded generator decides it and a
// device reproduces the host's choice; a device sums in another order, so a draw within double
// rounding of the boundary between two tokens may pick the neighbour.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace sluice::kernels {

// One distinct recent token and how often it occurred (the penalties' input).
struct TokenPenalty {
  int32_t token = 0;
  int32_t count = 0;
};

// One row's parameters (graph/sampling_params.h's fields, resolved for one step).
struct TokenSampling {
  float temperature = 1.0f;  // <= 0: greedy
  int32_t top_k = 0;         // <= 0: off
  float top_p = 1.0f;        // >= 1: off
  float min_p = 0.0f;        // <= 0: off
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  const TokenPenalty* penalties = nullptr;  // host memory; tokens outside the vocabulary are skipped
  int32_t penalty_count = 0;
  double uniform = 0.0;  // the draw, used when temperature > 0

  bool penalised() const {
    return penalty_count > 0 && (repetition_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f);
  }
};

// The rule above on host memory; `logits` is modified (penalties). `scratch` is reused between
// calls to spare allocations.
int32_t sample_token(float* logits, int64_t vocab, const TokenSampling& s,
                     std::vector<std::pair<float, int32_t>>& scratch);

// The first largest of logits[0, vocab).
int32_t argmax_token(const float* logits, int64_t vocab);

}  // namespace sluice::kernels
