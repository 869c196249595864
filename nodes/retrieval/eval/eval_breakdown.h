// Where a ranking method wins and where it fails, from an evaluation's runs (evaluate.h):
//  - per query type (fusion/query_classifier.h) and method: how many queries, mean nDCG@10 and
//    Recall@10, so a fusion that helps questions and hurts identifier lookups shows it;
//  - per query: the hybrid's nDCG@10 minus the better single path's (the one of bm25 and dense
//    with the higher mean on this collection), sorted worst first, with both paths' figures and
//    the query's text, so the queries where fusion loses most can be read;
//  - how much the two paths agree over the collection: the mean share of BM25's top 10 that the
//    dense path's top 10 also holds, and the mean rank in the dense list of BM25's first hit
//    (101 when absent from its 100). No judgement is used: a low agreement says one path is
//    unreliable here, not which (docs/retrieval.md, "Where fusion fails").
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nodes/retrieval/eval/beir_dataset.h"
#include "nodes/retrieval/eval/evaluate.h"

namespace sluice::retrieval {

struct TypeRow {
  std::string method, type;
  std::size_t queries = 0;
  double ndcg10 = 0, recall10 = 0;
};

struct QueryDifference {
  std::string id, text, type;
  double bm25 = 0, dense = 0, hybrid = 0;
  double difference = 0;  // hybrid - the better single path's
};

struct EvalBreakdown {
  std::string hybrid_method, best_single_path;  // e.g. "hybrid", "bm25"
  double top10_overlap = 0;                     // mean over queries, 0-1
  double bm25_first_in_dense = 0;               // mean rank, 1-101
  std::vector<TypeRow> rows;                    // method order of the report, then type
  std::vector<QueryDifference> queries;         // every judged query, worst difference first
  std::size_t wins = 0, losses = 0;             // queries the hybrid does better / worse on
};

// `hybrid_method`: the report's method compared with the single paths (its default pipeline
// ranking, "hybrid"). Methods the report lacks are skipped.
EvalBreakdown eval_breakdown(const EvalReport& report, const BeirDataset& dataset, const std::string& hybrid_method = "hybrid");
// `worst`: how many of the per-query differences the JSON lists (all of them are in "differences"
// as numbers, for a plot).
nlohmann::json to_json(const EvalBreakdown& breakdown, std::size_t worst);

}  // namespace sluice::retrieval
