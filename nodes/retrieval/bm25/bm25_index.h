// Bm25Index: an immutable in-memory inverted index scored with Okapi BM25.
//
// score(d, q) = sum over query terms t (with repeats) of
//     idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avglen))
// idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))   (Lucene's form: never negative)
// Each posting stores its precomputed impact (the summand above), so a query is additions only;
// changing k1 or b means rebuilding from the Builder (cheap: no re-analysis).
//
// Top-k: two strategies that return identical lists (tests check it).
//   kExhaustive: term-at-a-time into a dense accumulator, then heap selection. Fastest when the
//                index is small (a few hundred thousand postings touched at most).
//   kMaxScore:   document-at-a-time with per-term upper bounds (Turtle & Flood's MaxScore):
//                terms whose bounds cannot lift a document into the top k are only probed, never
//                scanned. Wins on large indexes and short k.
//   kAuto:       exhaustive below `kMaxScoreMinDocs` documents, MaxScore above.
// Thread-safety: const methods are safe from any number of threads. search_batch spreads queries
// over oneTBB worker threads.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <unordered_map>
#include <vector>

#include "nodes/retrieval/scored.h"

namespace sluice::retrieval {

struct Bm25Params {
  float k1 = 1.2f;   // term-frequency saturation; 1.2 is the standard and the anchors' setting
  float b = 0.75f;   // length normalisation strength, 0 = none, 1 = full
};

class Bm25Index {
 public:
  enum class Strategy { kAuto, kExhaustive, kMaxScore };
  static constexpr std::size_t kMaxScoreMinDocs = 200'000;

  // Collects analysed documents; build() produces the index. Not thread-safe.
  class Builder {
   public:
    DocIndex add(const std::vector<std::string>& terms);
    Bm25Index build(Bm25Params params) const;
    std::size_t size() const { return doc_len_.size(); }

   private:
    std::unordered_map<std::string, std::uint32_t> vocab_;
    std::vector<std::vector<std::pair<DocIndex, std::uint32_t>>> postings_;  // per term: (doc, tf)
    std::vector<std::uint32_t> doc_len_;
  };

  Bm25Index() = default;

  std::vector<ScoredDoc> search(const std::vector<std::string>& query_terms, std::size_t k,
                                Strategy strategy = Strategy::kAuto) const;
  std::vector<std::vector<ScoredDoc>> search_batch(
      const std::vector<std::vector<std::string>>& queries, std::size_t k,
      Strategy strategy = Strategy::kAuto) const;

  std::size_t num_docs() const { return doc_len_.size(); }
  std::size_t num_terms() const { return term_offset_.empty() ? 0 : term_offset_.size() - 1; }
  std::size_t num_postings() const { return posting_doc_.size(); }
  const Bm25Params& params() const { return params_; }
  // Document frequency of an analysed term (0 when unknown).
  std::uint32_t doc_freq(const std::string& term) const;

  // Binary serialisation (little-endian host layout); load throws std::runtime_error on a
  // truncated or inconsistent stream.
  void save(std::ostream& out) const;
  static Bm25Index load(std::istream& in);

 private:
  struct QueryTerm {
    std::uint32_t id;
    float weight;       // query term frequency
    float max_impact;   // weight * per-term upper bound
  };
  std::vector<QueryTerm> resolve(const std::vector<std::string>& query_terms) const;
  std::vector<ScoredDoc> search_exhaustive(const std::vector<QueryTerm>& q, std::size_t k) const;
  std::vector<ScoredDoc> search_maxscore(std::vector<QueryTerm> q, std::size_t k) const;

  Bm25Params params_;
  std::unordered_map<std::string, std::uint32_t> vocab_;
  std::vector<std::uint64_t> term_offset_;  // CSR: postings of term t in [off[t], off[t+1])
  std::vector<DocIndex> posting_doc_;       // ascending within a term
  std::vector<float> posting_impact_;
  std::vector<float> term_max_impact_;
  std::vector<std::uint32_t> doc_len_;
};

}  // namespace sluice::retrieval
