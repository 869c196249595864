// A fusion profile: the fusion settings `sluice eval --tune --profile FILE` chose on one
// collection's judged queries, as a JSON file a `fuse` node loads (`profile:`), so a user with
// their own judgements gets weights for their corpus without editing the pipeline.
//
//   {"format": "sluice.fusion_profile.v1",
//    "dataset": "...", "queries": 52,
//    "natural_language": {"method": "weighted", "bm25_weight": 0.8, "final_bm25_weight": 0.7, "rrf_k": 60},
//    "exact_lookup":     {"method": "rrf", "bm25_weight": 0.7, "final_bm25_weight": 0.7, "rrf_k": 10},
//    "ndcg@10": {"in_sample": 0.49, "held_out": 0.47}}
//
// Per query type the parameters are those that score best on all of that type's queries (the
// in-sample figure); the held-out figure is the same procedure's k-fold cross-validation, the one
// to expect on new queries. A type with no judged query keeps the pipeline's settings ("from":
// "pipeline" in the file). Reading checks the format, every field's type and range (weights
// 0-1, rrf_k 1-10000), and names the file and field in its error.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "nodes/retrieval/fusion/fusion.h"

namespace sluice::retrieval {

struct FusionProfile {
  std::string dataset;
  std::size_t queries = 0;
  FusionParams natural_language, exact_lookup;
  bool natural_language_tuned = false, exact_lookup_tuned = false;  // false: the pipeline's, kept
  double in_sample_ndcg10 = 0, held_out_ndcg10 = 0;
};

std::string fusion_profile_json(const FusionProfile& profile);
// Throws std::invalid_argument: "fusion profile FILE: FIELD: problem".
FusionProfile read_fusion_profile(const std::string& path);
// The same from the text of one (`where` names it in errors).
FusionProfile parse_fusion_profile(const std::string& text, const std::string& where);

}  // namespace sluice::retrieval
