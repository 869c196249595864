// RerankScorer: rescoring of a short candidate list with the full query and chunk text. The
// interface a cross-encoder will implement later; ProximityScorer is the built-in one that needs
// no model weights.
//
// ProximityScorer: for the query's distinct analysed terms (stopwords removed, stemmed, the same
// analysis as BM25), rewards chunks where they occur close together and in query order:
//   coverage  = idf-weighted fraction of query terms present in the chunk
//   proximity = over consecutive query-term pairs (a, b) both present, idf-weighted mean of
//               1 / d(a, b), d the smallest word distance between an a and a later b
//               (d = 1 is the exact phrase "a b"; stopwords keep their positions)
//   score     = (coverage + proximity) / 2, in [0, 1].
// Thread-safe: const, no shared mutable state.
#pragma once

#include <string_view>
#include <vector>

#include "nodes/retrieval/bm25/bm25_index.h"
#include "nodes/retrieval/chunk/chunk.h"
#include "nodes/retrieval/text/analyzer.h"

namespace sluice::retrieval {

class RerankScorer {
 public:
  virtual ~RerankScorer() = default;
  // One score per chunk, higher is more relevant; comparable within one call only.
  virtual std::vector<float> score(std::string_view query, const std::vector<const Chunk*>& chunks) const = 0;
};

class ProximityScorer final : public RerankScorer {
 public:
  // `analyzer` and `bm25` (for idf) must outlive the scorer; typically the snapshot's own.
  ProximityScorer(const Analyzer& analyzer, const Bm25Index& bm25) : analyzer_(analyzer), bm25_(bm25) {}
  std::vector<float> score(std::string_view query, const std::vector<const Chunk*>& chunks) const override;

 private:
  const Analyzer& analyzer_;
  const Bm25Index& bm25_;
};

}  // namespace sluice::retrieval
