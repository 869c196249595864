// The query path over one KbSnapshot: BM25 and dense candidates, fusion by query type,
// optional rerank. Each stage is a separate function so the flow graph can run BM25 and dense
// as parallel branches (broadcast + join) and fuse/rerank as their own nodes; retrieve()
// composes them in sequence for evaluation and tests.
//
// Per-query-type fusion: classify_query() (fusion/query_classifier.h) picks `exact_lookup` or
// `natural_language` parameters. Defaults lean BM25 (0.65) for lookups and dense (0.4 BM25)
// for questions; `sluice eval --tune` fits them on labelled queries.
// Thread-safe: pure functions of const inputs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nodes/retrieval/fusion/fusion.h"
#include "nodes/retrieval/fusion/query_classifier.h"
#include "nodes/retrieval/kb/kb_snapshot.h"
#include "nodes/retrieval/rerank/rerank_scorer.h"

namespace sluice::retrieval {

enum class RetrieveMode { kBm25, kDense, kHybrid };
const char* retrieve_mode_name(RetrieveMode m);
RetrieveMode parse_retrieve_mode(const std::string& name);  // bm25 | dense | hybrid

struct RetrieveOptions {
  RetrieveMode mode = RetrieveMode::kHybrid;
  std::size_t candidates = 100;  // per path; fusion and recall@100 need depth
  std::size_t top_k = 10;        // chunks returned
  // Natural language: BM25 0.4 in the first fusion (dense leads, 0.6), 0 after feedback: the
  // weights every fold of 5-fold cross-validation on Cranfield chose (0.4-0.5 / 0.0).
  FusionParams natural_language{FusionMethod::kWeighted, 0.4f, 60.f, 0.0f};
  // Exact lookups lean BM25 (0.65) in both fusions; Cranfield has too few such queries to tune.
  FusionParams exact_lookup{FusionMethod::kWeighted, 0.65f, 60.f, 0.65f};
  bool classify = true;          // false: natural_language params for every query
  // Hybrid feedback: the fused top `feedback_docs` chunks (BM25 and dense agreeing) are
  // averaged into the query vector, q' = unit(q + feedback_weight * mean), dense search runs
  // again with q', and the fusion is redone. 0 turns it off. Measured on Cranfield: see
  // docs/retrieval.md (it is what lifts hybrid above the dense path alone).
  std::size_t feedback_docs = 3;
  float feedback_weight = 1.0f;
  // Path agreement (kb/path_agreement.h): when the snapshot's figure is below this, its dense
  // model does not fit the corpus and the hybrid is led by BM25: `low_agreement` for every query
  // type and no hybrid feedback. 0 turns the switch off. 0.64 is midway between the two judged
  // collections here (Cranfield 0.71: dense-led hybrid 0.448 nDCG@10 against BM25 alone 0.368;
  // CACM 0.57: 0.351 against 0.475); docs/retrieval.md, "Path agreement".
  float min_path_agreement = 0.64f;
  // BM25 1.0: below the bar the dense path does not rank at all (its scores are still reported).
  // On CACM, weights 0.85-0.95 moved nDCG@10 by -0.002 to +0.002 and lowered Recall@10 by
  // 0.0006-0.003 against BM25 alone: nothing the dense path adds there is measurable.
  FusionParams low_agreement{FusionMethod::kWeighted, 1.0f, 60.f, 1.0f};
  bool rerank = false;           // measured on Cranfield; see docs/retrieval.md
  std::size_t rerank_depth = 20; // how many fused candidates the reranker rescores
  float rerank_weight = 0.3f;    // final = (1 - w) * minmax(fused) + w * rerank score
};

struct RetrievedChunk {
  DocIndex chunk = 0;
  float score = 0;           // final score (fused, then reranked)
  int bm25_rank = 0;         // 1-based; 0 = not among BM25's candidates
  float bm25_score = 0;
  int dense_rank = 0;
  float dense_score = 0;
  float rerank_score = -1;   // -1 when not reranked
};

struct StageNanos {
  long long bm25 = 0, embed = 0, dense = 0, fuse = 0, rerank = 0;
};

struct RetrieveResult {
  QueryType type = QueryType::kNaturalLanguage;
  FusionParams fusion;
  std::vector<RetrievedChunk> hits;
  StageNanos nanos;
};

// Stage: fuse the two candidate lists with the parameters for `type`; keeps every candidate.
std::vector<RetrievedChunk> fuse_candidates(const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& dense,
                                            const FusionParams& params, RetrieveMode mode);
// Stage: rescore the first `depth` hits with `scorer` and blend; hits beyond depth keep order below.
void rerank_hits(std::vector<RetrievedChunk>& hits, std::string_view query, const KbSnapshot& gen,
                 const RerankScorer& scorer, std::size_t depth, float weight);

// Stage: hybrid feedback (see RetrieveOptions::feedback_docs): new dense candidates for the
// query vector moved towards the first `docs` fused hits. Returns `dense` unchanged when off.
std::vector<ScoredDoc> feedback_dense(const KbSnapshot& gen, const float* query_vector,
                                      const std::vector<ScoredDoc>& fused, std::size_t docs, float weight,
                                      std::size_t candidates);
// fuse -> feedback -> fuse, the whole hybrid ranking for one query (all candidates kept); one
// fusion without feedback when feedback is off or lexical_led(options, gen). When the dense
// path does not rank (!dense_ranks), BM25's candidates only, in BM25's order (with their dense
// ranks where `dense` has them; `dense` may be empty and `query_vector` null then).
std::vector<RetrievedChunk> hybrid_rank(const KbSnapshot& gen, const float* query_vector,
                                        const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& dense,
                                        const FusionParams& params, const RetrieveOptions& options);

FusionParams fusion_params_for(const RetrieveOptions& options, QueryType type);
// True when `gen`'s measured path agreement is below options.min_path_agreement (and the switch
// is on): the hybrid then uses options.low_agreement without feedback.
bool lexical_led(const RetrieveOptions& options, const KbSnapshot& gen);
bool lexical_led(const RetrieveOptions& options, const PathAgreement& agreement);
// Whether the dense path ranks anything on `gen`: false when lexical_led at a low_agreement
// BM25 weight of 1 (then nothing reads the query vector or the dense hits: node/dense_demand.h).
bool dense_ranks(const RetrieveOptions& options, const KbSnapshot& gen);
// The parameters a hybrid query of `type` uses on `gen`: low_agreement when lexical_led, else
// fusion_params_for(options, type).
FusionParams fusion_params_for(const RetrieveOptions& options, QueryType type, const KbSnapshot& gen);

// All stages in sequence (BM25, embed, dense, fuse, rerank); hits cut to options.top_k.
RetrieveResult retrieve(const KbSnapshot& gen, std::string_view query, const RetrieveOptions& options);

}  // namespace sluice::retrieval
