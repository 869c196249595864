#include "inference/llama/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sluice::inference {

Sampler::Sampler(const SamplingParams& params) : p_(params), rng_(params.seed.value_or(0)) {}

double Sampler::uniform() { return double(rng_() >> 11) * 0x1.0p-53; }

int32_t Sampler::argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[size_t(best)]) best = int32_t(i);
  return best;
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> recent) {
  const bool penalise = p_.repetition_penalty != 1.0f || p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f;
  if (penalise && p_.repeat_last_n > 0) {
    // Each distinct recent token once: repetition divides a positive logit (multiplies a
    // negative one), presence subtracts a constant, frequency subtracts per occurrence.
    const size_t from = recent.size() > size_t(p_.repeat_last_n) ? recent.size() - size_t(p_.repeat_last_n) : 0;
    std::vector<int32_t> seen(recent.begin() + long(from), recent.end());
    std::sort(seen.begin(), seen.end());
    for (size_t i = 0; i < seen.size();) {
      size_t j = i;
      while (j < seen.size() && seen[j] == seen[i]) ++j;
      const int32_t t = seen[i];
      const float count = float(j - i);
      i = j;
      if (t < 0 || size_t(t) >= logits.size()) continue;
      float& l = logits[size_t(t)];
      l = l > 0 ? l / p_.repetition_penalty : l * p_.repetition_penalty;
      l -= p_.presence_penalty + p_.frequency_penalty * count;
    }
  }
  if (p_.temperature <= 0) return argmax(logits);

  cand_.clear();
  cand_.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) cand_.emplace_back(logits[i], int32_t(i));
  auto by_logit = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  size_t keep = cand_.size();
  // Constrained decoding sets excluded tokens to -inf: never a candidate, whatever the filters.
  size_t finite = 0;
  for (const auto& c : cand_) finite += c.first != -std::numeric_limits<float>::infinity();
  if (finite > 0 && finite < keep) {
    std::partition(cand_.begin(), cand_.end(), [](const auto& c) { return c.first != -std::numeric_limits<float>::infinity(); });
    cand_.resize(finite);
    keep = finite;
  }
  if (p_.top_k > 0 && size_t(p_.top_k) < keep) {
    keep = size_t(p_.top_k);
    std::partial_sort(cand_.begin(), cand_.begin() + long(keep), cand_.end(), by_logit);
    cand_.resize(keep);
  } else {
    std::sort(cand_.begin(), cand_.end(), by_logit);
  }
  // Softmax at temperature 1 over the survivors, for top-p and min-p.
  const float mx = cand_[0].first;
  std::vector<double> prob(keep);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += prob[i] = std::exp(double(cand_[i].first - mx));
  if (p_.top_p < 1.0f) {
    double acc = 0;
    size_t n = keep;
    for (size_t i = 0; i < keep; ++i) {
      acc += prob[i] / sum;
      if (acc >= p_.top_p) {
        n = i + 1;
        break;
      }
    }
    keep = n;
  }
  if (p_.min_p > 0) {
    size_t n = 1;  // prob[0] is the max: always kept
    while (n < keep && prob[n] >= p_.min_p * prob[0]) ++n;
    keep = n;
  }
  // Temperature, then draw.
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += prob[i] = std::exp(double(cand_[i].first - mx) / p_.temperature);
  double r = uniform() * total;
  for (size_t i = 0; i < keep; ++i) {
    r -= prob[i];
    if (r < 0) return cand_[i].second;
  }
  return cand_[keep - 1].second;
}

}  // namespace sluice::inference
