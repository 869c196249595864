// Evaluation of the retrieval paths on a BEIR-format dataset: what `sluice eval FILE --dataset DIR`
// runs. Builds one index snapshot over the corpus (each document one chunk unless chunking is
// asked for; chunk hits map back to their documents, best chunk first), runs every query through
// each method, and scores the runs with eval/metrics.h.
//
// Methods: bm25, dense, dense+feedback (pseudo-relevance feedback from the dense path's own top
// hits, for an honest single-path comparison), rrf (k 60, equal weights, no feedback), weighted
// (configured per-type parameters, no feedback), hybrid (configured parameters with hybrid
// feedback: the default query path), hybrid+rerank, and, with `tune`, "tuned": k-fold
// cross-validation that picks fusion method / weight / k per query type on the training folds
// by mean nDCG@10 and reports only the held-out folds' runs (so the figure is not fitted to the
// queries it is measured on). Per-stage latency is the mean and median over queries, one thread.
// Not thread-safe (uses all oneTBB workers for the build).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "nodes/retrieval/chunk/chunker.h"
#include "nodes/retrieval/dense/lsa_embedder.h"
#include "nodes/retrieval/eval/beir_dataset.h"
#include "nodes/retrieval/eval/metrics.h"
#include "nodes/retrieval/fusion/fusion_profile.h"
#include "nodes/retrieval/kb/retriever.h"

namespace sluice::retrieval {

struct EvalOptions {
  IndexOptions index;
  LsaOptions lsa;
  // The dense path's embedder; null: LSA fitted on the corpus with `lsa`.
  std::shared_ptr<const Embedder> embedder;
  RetrieveOptions retrieve;      // top_k is raised to `depth` for evaluation
  std::size_t depth = 100;       // documents per query in runs (R@100, MAP@100 need 100)
  bool chunk_documents = false;  // false: one chunk per document (BEIR practice)
  ChunkingOptions chunking;
  bool tune = false;
  std::size_t folds = 5;
  std::uint64_t seed = 7;        // fold assignment
};

struct StageLatency {
  double mean_us = 0, p50_us = 0;
};

struct MethodResult {
  std::string name;
  nlohmann::json params;
  MetricSet metrics;
  Run run;
};

struct EvalReport {
  std::string dataset;
  std::size_t documents = 0, chunks = 0, queries = 0;
  double build_seconds = 0;
  PathAgreement path_agreement;  // the snapshot's, measured at build (kb/path_agreement.h)
  std::vector<MethodResult> methods;
  std::vector<std::pair<std::string, StageLatency>> stages;  // bm25, embed, dense, fuse, rerank
  nlohmann::json folds = nlohmann::json::array();            // chosen parameters per fold
  FusionProfile profile;  // with tune: the parameters chosen on every query (fusion_profile.h)
  std::vector<LoadProblem> problems;
  nlohmann::json to_json() const;  // everything except the runs
};

EvalReport evaluate_dataset(const BeirDataset& dataset, const EvalOptions& options, const std::string& name = "");
// Loads DIR (corpus.jsonl, queries.jsonl, qrels/test.tsv) then evaluates.
EvalReport evaluate_dataset_dir(const std::string& dir, const EvalOptions& options);

// Several dense models on one dataset: evaluate_dataset once per embedder (null: LSA), in one
// report. The first embedder's rows keep their names; every further one's are named
// "<method>:<embedder name>" (e.g. "hybrid:use-lite"); then "rrf3" fuses BM25 and every
// embedder's dense run by reciprocal rank (k 60, equal weights, no feedback): the three-path
// hybrid. Latency stages are the first embedder's, then "embed:<name>" for each further one.
EvalReport evaluate_embedders(const BeirDataset& dataset, const EvalOptions& options,
                              const std::vector<std::shared_ptr<const Embedder>>& embedders, const std::string& name = "");

// Reciprocal-rank fusion of whole runs: score(d) = sum over runs of 1 / (k + rank), the top
// `depth` per query.
Run fuse_runs_rrf(const std::vector<const Run*>& runs, double k, std::size_t depth);

// TREC run format: "qid Q0 docid rank score tag", queries in id order, ranks from 1.
void write_trec_run(std::ostream& out, const Run& run, const std::string& tag);

// k-fold cross-validated fusion tuning over precomputed candidate lists; exposed for tests.
struct TuningQuery {
  std::string id;
  QueryType type = QueryType::kNaturalLanguage;
  std::vector<ScoredDoc> bm25, dense;
  std::vector<float> vector;  // the query's embedding (for hybrid feedback)
};
// How a query is ranked under given fusion parameters (eval passes hybrid_rank).
using FusionRanker = std::function<std::vector<ScoredDoc>(const TuningQuery&, const FusionParams&)>;
struct TuningResult {
  Run held_out_run;      // every query scored by parameters fitted without it
  nlohmann::json folds;  // per fold and type: chosen parameters, training nDCG@10
  // The same choice made on every query of each type (what a profile file carries); a type
  // with no query keeps `defaults`' parameters (tuned false). in_sample_ndcg10: their mean.
  FusionProfile profile;
};
TuningResult tune_fusion_cv(const std::vector<TuningQuery>& queries, const Qrels& qrels,
                            const std::vector<std::string>& doc_ids_of_chunks, std::size_t folds,
                            std::uint64_t seed, std::size_t depth, const RetrieveOptions& defaults,
                            const FusionRanker& rank);
// The grid tune_fusion_cv searches: weighted with the BM25 weight 0-1 and the final (after
// feedback) weight 0-0.4, both in steps of 0.1; RRF with k 10/30/60/100 and BM25 weight
// 0.3/0.5/0.7/0.9. Weights up to 1 so that a collection where the dense path is weak (CACM)
// can be tuned to lean on BM25. (Final weights up to 1 were tried: CACM's held-out nDCG@10
// fell from 0.458 to 0.439, more choices fitted to 37 training queries' noise.)
std::vector<FusionParams> fusion_grid();

}  // namespace sluice::retrieval
