// IR metrics exactly as trec_eval / pytrec_eval (and so BEIR) compute them.
//
// Ranking order: a run's documents are sorted by score descending, ties broken by document id
// in *descending* string order (trec_eval's rule), whatever order the run lists them in.
// Relevance: a judged grade >= 1 is relevant (trec_eval's default relevance level).
//   nDCG@k    gain = grade (linear, trec_eval's ndcg_cut), discount 1/log2(rank + 1); ideal DCG
//             from all judged grades of the query, best first, cut at k.
//   Recall@k  relevant in the top k / all relevant judged for the query.
//   P@k       relevant in the top k / k (always k, even when fewer were retrieved).
//   MRR@k     1 / rank of the first relevant document within the top k, else 0 (BEIR's mrr).
//   MAP@k     sum of P@rank over relevant documents in the top k / all relevant (map_cut).
// Averages (evaluate_run) are over every query that has at least one relevant judgement; a
// query the run does not answer scores 0 (pytrec_eval would silently drop it, inflating means).
// Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace sluice::retrieval {

using QueryJudgements = std::unordered_map<std::string, int>;  // doc id -> grade
using Qrels = std::map<std::string, QueryJudgements>;          // query id -> judgements

struct RankedDoc {
  std::string doc_id;
  double score = 0;
};
using Run = std::map<std::string, std::vector<RankedDoc>>;  // query id -> ranked documents

// Sorts in trec_eval order (score desc, doc id desc).
void sort_trec_order(std::vector<RankedDoc>& ranked);

// Per-query metrics; `ranked` must already be in trec_eval order.
double ndcg_at(const QueryJudgements& judged, const std::vector<RankedDoc>& ranked, std::size_t k);
double recall_at(const QueryJudgements& judged, const std::vector<RankedDoc>& ranked, std::size_t k);
double precision_at(const QueryJudgements& judged, const std::vector<RankedDoc>& ranked, std::size_t k);
double mrr_at(const QueryJudgements& judged, const std::vector<RankedDoc>& ranked, std::size_t k);
double map_at(const QueryJudgements& judged, const std::vector<RankedDoc>& ranked, std::size_t k);

struct MetricSet {
  double ndcg10 = 0, recall10 = 0, recall100 = 0, mrr10 = 0, p10 = 0, map100 = 0;
};
MetricSet query_metrics(const QueryJudgements& judged, std::vector<RankedDoc> ranked);

struct RunMetrics {
  MetricSet mean;
  std::map<std::string, MetricSet> per_query;
  std::size_t queries = 0;
};
RunMetrics evaluate_run(const Qrels& qrels, const Run& run);

}  // namespace sluice::retrieval
