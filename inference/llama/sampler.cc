#include "inference/llama/sampler.h"

#include <algorithm>

namespace sluice::inference {

Sampler::Sampler(const SamplingParams& params) : p_(params), rng_(params.seed.value_or(0)) {}

double Sampler::uniform() { return double(rng_() >> 11) * 0x1.0p-53; }

int32_t Sampler::argmax(std::span<const float> logits) {
  return kernels::argmax_token(logits.data(), int64_t(logits.size()));
}

kernels::TokenSampling Sampler::prepare(std::span<const int32_t> recent) {
  kernels::TokenSampling s;
  s.temperature = p_.temperature;
  s.top_k = p_.top_k;
  s.top_p = p_.top_p;
  s.min_p = p_.min_p;
  s.repetition_penalty = p_.repetition_penalty;
  s.presence_penalty = p_.presence_penalty;
  s.frequency_penalty = p_.frequency_penalty;
  penalties_.clear();
  const bool penalise = p_.repetition_penalty != 1.0f || p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f;
  if (penalise && p_.repeat_last_n > 0) {
    // Each distinct recent token once, with its count.
    const size_t from = recent.size() > size_t(p_.repeat_last_n) ? recent.size() - size_t(p_.repeat_last_n) : 0;
    seen_.assign(recent.begin() + long(from), recent.end());
    std::sort(seen_.begin(), seen_.end());
    for (size_t i = 0; i < seen_.size();) {
      size_t j = i;
      while (j < seen_.size() && seen_[j] == seen_[i]) ++j;
      penalties_.push_back({seen_[i], int32_t(j - i)});
      i = j;
    }
  }
  s.penalties = penalties_.data();
  s.penalty_count = int32_t(penalties_.size());
  if (p_.temperature > 0) s.uniform = uniform();
  return s;
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> recent) {
  const kernels::TokenSampling s = prepare(recent);
  return kernels::sample_token(logits.data(), int64_t(logits.size()), s, cand_);
}

}  // namespace sluice::inference
