#include "nodes/retrieval/kb/path_agreement.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "nodes/retrieval/kb/kb_snapshot.h"

namespace sluice::retrieval {
namespace {

// The first `words` whitespace-separated words of `text`.
std::string opening_words(const std::string& text, std::size_t words) {
  std::size_t seen = 0, i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i == text.size()) break;
    if (seen == words) return text.substr(0, i);
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    ++seen;
  }
  return text;
}

}  // namespace

PathAgreement measure_path_agreement(const KbSnapshot& snapshot, const PathAgreementOptions& options) {
  PathAgreement out;
  const std::size_t n = snapshot.chunks().size();
  if (n < options.min_chunks || options.samples == 0 || options.top == 0) return out;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937_64 rng(options.seed);
  const std::size_t m = std::min(options.samples, n);
  for (std::size_t i = 0; i < m; ++i) {  // partial Fisher-Yates: the first m are the sample
    std::uniform_int_distribution<std::size_t> pick(i, n - 1);
    std::swap(order[i], order[pick(rng)]);
  }
  std::vector<std::string> queries;
  std::unordered_set<std::string> taken;
  queries.reserve(m);
  for (std::size_t i = 0; i < m; ++i) {
    std::string q = opening_words(index_text(snapshot.chunks()[order[i]]), options.words);
    if (snapshot.analyzer().terms(q).empty() || !taken.insert(q).second) continue;
    queries.push_back(std::move(q));
  }
  if (queries.empty() || queries.size() < options.min_samples) return out;
  const std::vector<float> vectors = snapshot.embedder().embed(queries);
  const auto dense = snapshot.search_dense(vectors.data(), queries.size(), options.top);
  double sum = 0;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const auto bm25 = snapshot.search_bm25(queries[i], options.top);
    std::unordered_set<DocIndex> lexical;
    for (const auto& h : bm25) lexical.insert(h.doc);
    std::size_t shared = 0;
    for (const auto& h : dense[i]) shared += lexical.count(h.doc);
    sum += static_cast<double>(shared) / static_cast<double>(options.top);
  }
  out.samples = queries.size();
  out.overlap = sum / static_cast<double>(out.samples);
  return out;
}

}  // namespace sluice::retrieval
