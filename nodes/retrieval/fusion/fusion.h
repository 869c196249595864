// Fusion of the BM25 and dense candidate lists into one ranking.
//
//   RRF (reciprocal rank fusion): fused(d) = sum over paths p of w_p / (k + rank_p(d)), rank
//     1-based; a document a path did not return contributes nothing for that path. Scale-free,
//     so it needs no normalisation; k (default 60, Cormack et al.) flattens the rank curve.
//   Weighted (min-max): each path's scores are rescaled to [0, 1] over that path's own
//     candidate list, s' = (s - min) / (max - min) (all 1 when max == min); a document missing
//     from a path gets 0 there; fused(d) = w_bm25 * s'_bm25 + w_dense * s'_dense.
// Ties are broken by document index (scored.h), so fusion is deterministic.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "nodes/retrieval/scored.h"

namespace sluice::retrieval {

enum class FusionMethod { kRrf, kWeighted };
const char* fusion_method_name(FusionMethod m);
// Parses "rrf" or "weighted"; throws std::invalid_argument naming the value otherwise.
FusionMethod parse_fusion_method(const std::string& name);

struct FusionParams {
  FusionMethod method = FusionMethod::kWeighted;
  float bm25_weight = 0.5f;   // dense weight is 1 - bm25_weight
  float rrf_k = 60.f;
  // BM25 weight of the second fusion after hybrid feedback (kb/retriever.h); < 0 = bm25_weight.
  // Separate because after feedback the dense list already carries BM25's evidence.
  float final_bm25_weight = -1.f;
  float final_weight() const { return final_bm25_weight < 0 ? bm25_weight : final_bm25_weight; }
};

std::vector<ScoredDoc> fuse_rrf(const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& dense,
                                float k, float bm25_weight = 0.5f);
std::vector<ScoredDoc> fuse_weighted(const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& dense,
                                     float bm25_weight);
std::vector<ScoredDoc> fuse(const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& dense,
                            const FusionParams& params);

}  // namespace sluice::retrieval
