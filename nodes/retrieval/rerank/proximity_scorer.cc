#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "nodes/retrieval/rerank/rerank_scorer.h"

namespace sluice::retrieval {

std::vector<float> ProximityScorer::score(std::string_view query, const std::vector<const Chunk*>& chunks) const {
  // Distinct query terms in query order, with idf weights.
  std::vector<std::string> terms;
  for (auto& t : analyzer_.terms(query)) {
    if (std::find(terms.begin(), terms.end(), t) == terms.end()) terms.push_back(std::move(t));
  }
  const double n = static_cast<double>(std::max<std::size_t>(1, bm25_.num_docs()));
  std::vector<double> idf(terms.size());
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const double df = bm25_.doc_freq(terms[i]);
    idf[i] = std::log(1.0 + (n - df + 0.5) / (df + 0.5));
  }
  std::vector<float> out(chunks.size(), 0.f);
  if (terms.empty()) return out;
  double idf_sum = 0;
  for (double w : idf) idf_sum += w;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    std::unordered_map<std::string, std::vector<std::uint32_t>> positions;
    for (const auto& tok : analyzer_.tokens(index_text(*chunks[c]))) positions[tok.term].push_back(tok.position);
    std::vector<const std::vector<std::uint32_t>*> where(terms.size(), nullptr);
    double covered = 0;
    for (std::size_t i = 0; i < terms.size(); ++i) {
      auto it = positions.find(terms[i]);
      if (it != positions.end()) {
        where[i] = &it->second;
        covered += idf[i];
      }
    }
    double prox = 0, pair_weight = 0;
    for (std::size_t i = 0; i + 1 < terms.size(); ++i) {
      const double w = idf[i] + idf[i + 1];
      pair_weight += w;
      if (where[i] == nullptr || where[i + 1] == nullptr) continue;
      std::uint32_t best = UINT32_MAX;
      for (std::uint32_t a : *where[i]) {
        auto b = std::upper_bound(where[i + 1]->begin(), where[i + 1]->end(), a);
        if (b != where[i + 1]->end()) best = std::min(best, *b - a);
      }
      if (best != UINT32_MAX) prox += w / best;
    }
    const double coverage = idf_sum > 0 ? covered / idf_sum : 0;
    const double proximity = pair_weight > 0 ? prox / pair_weight : coverage;
    out[c] = static_cast<float>((coverage + proximity) / 2);
  }
  return out;
}

}  // namespace sluice::retrieval
