#include "kernels/token_sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sluice::kernels {

int32_t argmax_token(const float* logits, int64_t vocab) {
  int32_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best]) best = int32_t(i);
  return best;
}

int32_t sample_token(float* logits, int64_t vocab, const TokenSampling& p,
                     std::vector<std::pair<float, int32_t>>& cand) {
  if (p.penalised()) {
    for (int32_t i = 0; i < p.penalty_count; ++i) {
      const TokenPenalty& e = p.penalties[i];
      if (e.token < 0 || e.token >= vocab) continue;
      float& l = logits[e.token];
      l = l > 0 ? l / p.repetition_penalty : l * p.repetition_penalty;
      l -= p.presence_penalty + p.frequency_penalty * float(e.count);
    }
  }
  if (p.temperature <= 0) return argmax_token(logits, vocab);

  cand.clear();
  cand.reserve(size_t(vocab));
  for (int64_t i = 0; i < vocab; ++i) cand.emplace_back(logits[i], int32_t(i));
  auto by_logit = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  size_t keep = cand.size();
  // Constrained decoding sets excluded tokens to -inf: never a candidate, whatever the filters.
  size_t finite = 0;
  for (const auto& c : cand) finite += c.first != -std::numeric_limits<float>::infinity();
  if (finite > 0 && finite < keep) {
    std::stable_partition(cand.begin(), cand.end(),
                          [](const auto& c) { return c.first != -std::numeric_limits<float>::infinity(); });
    cand.resize(finite);
    keep = finite;
  }
  if (p.top_k > 0 && size_t(p.top_k) < keep) {
    keep = size_t(p.top_k);
    std::partial_sort(cand.begin(), cand.begin() + long(keep), cand.end(), by_logit);
    cand.resize(keep);
  } else {
    std::sort(cand.begin(), cand.end(), by_logit);
  }
  // Softmax at temperature 1 over the survivors, for top-p and min-p.
  const float mx = cand[0].first;
  std::vector<double> prob(keep);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += prob[i] = std::exp(double(cand[i].first - mx));
  if (p.top_p < 1.0f) {
    double acc = 0;
    size_t n = keep;
    for (size_t i = 0; i < keep; ++i) {
      acc += prob[i] / sum;
      if (acc >= p.top_p) {
        n = i + 1;
        break;
      }
    }
    keep = n;
  }
  if (p.min_p > 0) {
    size_t n = 1;  // prob[0] is the max: always kept
    while (n < keep && prob[n] >= p.min_p * prob[0]) ++n;
    keep = n;
  }
  // Temperature, then draw.
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += prob[i] = std::exp(double(cand[i].first - mx) / p.temperature);
  double r = p.uniform * total;
  for (size_t i = 0; i < keep; ++i) {
    r -= prob[i];
    if (r < 0) return cand[i].second;
  }
  return cand[keep - 1].second;
}

}  // namespace sluice::kernels
