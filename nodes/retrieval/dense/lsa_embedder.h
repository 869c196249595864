// LsaEmbedder: latent semantic analysis fitted on the knowledge base's own text; needs no
// downloaded weights.
//
// fit(): analyse every text (text/analyzer.h), weight terms by sublinear TF-IDF
//   w(t, d) = (1 + ln tf) * idf(t),  idf(t) = ln((1 + N) / (1 + df)) + 1   (scikit-learn's smooth idf)
// L2-normalise each document row, then a truncated randomized SVD (dense/randomized_svd.h) gives
// the term coordinates V (terms x dims).
// embed(): the same weighting on the new text, projected as x V, then L2-normalised, so inner
// product is cosine. Terms unseen at fit time are ignored; a text of only unknown terms embeds to
// the zero vector (it matches nothing rather than everything).
//
// Thread-safety: immutable after fit()/load(); embed() is safe from many threads.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "nodes/retrieval/dense/embedder.h"
#include "nodes/retrieval/dense/randomized_svd.h"
#include "nodes/retrieval/text/analyzer.h"

namespace sluice::retrieval {

struct LsaOptions {
  std::size_t dimensions = 256;     // 256 scored best on Cranfield (anchors: 128 0.403, 256 0.410, 384 0.401)
  std::size_t min_doc_freq = 1;     // terms in fewer documents are dropped from the vocabulary
  std::size_t power_iterations = 5; // randomized SVD accuracy vs fit time
  std::size_t oversample = 10;
  std::uint64_t seed = 42;
  AnalyzerOptions analyzer;
};

class LsaEmbedder final : public Embedder {
 public:
  // Fits on `texts` (typically every chunk of the knowledge base). Throws std::invalid_argument
  // when the options are out of range.
  static std::unique_ptr<LsaEmbedder> fit(const std::vector<std::string>& texts, const LsaOptions& options);

  std::size_t dimension() const override { return dims_; }
  std::string name() const override { return "lsa-" + std::to_string(dims_); }
  void embed(const std::vector<std::string>& texts, float* out) const override;
  using Embedder::embed;
  std::size_t count_tokens(std::string_view text) const override;

  std::size_t vocabulary_size() const { return idf_.size(); }
  const LsaOptions& options() const { return options_; }

  void save(std::ostream& out) const;
  static std::unique_ptr<LsaEmbedder> load(std::istream& in);

 private:
  LsaEmbedder(LsaOptions options) : options_(std::move(options)), analyzer_(options_.analyzer) {}
  void embed_one(const std::string& text, float* out) const;

  LsaOptions options_;
  Analyzer analyzer_;
  std::size_t dims_ = 0;
  std::unordered_map<std::string, std::uint32_t> vocab_;
  std::vector<float> idf_;
  std::vector<float> term_vectors_;  // vocab x dims_, row-major
};

}  // namespace sluice::retrieval
