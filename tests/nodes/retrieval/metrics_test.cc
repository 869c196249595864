#include "nodes/retrieval/eval/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sluice::retrieval {
namespace {

// Judgements: d1 grade 3, d2 grade 1, d3 grade 2 (3 relevant). Run: d2, x, d1, d3, y.
const QueryJudgements kJudged = {{"d1", 3}, {"d2", 1}, {"d3", 2}, {"d9", 0}};
std::vector<RankedDoc> run() { return {{"d2", 5}, {"x", 4}, {"d1", 3}, {"d3", 2}, {"y", 1}}; }

TEST(Metrics, NdcgByHand) {
  // DCG = 1/log2(2) + 3/log2(4) + 2/log2(5); IDCG = 3 + 2/log2(3) + 1/log2(4).
  const double dcg = 1.0 + 3.0 / 2.0 + 2.0 / std::log2(5.0);
  const double idcg = 3.0 + 2.0 / std::log2(3.0) + 0.5;
  EXPECT_NEAR(ndcg_at(kJudged, run(), 10), dcg / idcg, 1e-12);
  // Cut at 2: DCG = 1; IDCG = 3 + 2/log2(3).
  EXPECT_NEAR(ndcg_at(kJudged, run(), 2), 1.0 / (3.0 + 2.0 / std::log2(3.0)), 1e-12);
}

TEST(Metrics, RecallPrecisionMrrMapByHand) {
  EXPECT_NEAR(recall_at(kJudged, run(), 10), 1.0, 1e-12);
  EXPECT_NEAR(recall_at(kJudged, run(), 3), 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(precision_at(kJudged, run(), 10), 0.3, 1e-12);  // always divided by k
  EXPECT_NEAR(precision_at(kJudged, run(), 2), 0.5, 1e-12);
  EXPECT_NEAR(mrr_at(kJudged, run(), 10), 1.0, 1e-12);
  EXPECT_NEAR(mrr_at(kJudged, {{"x", 2}, {"d3", 1}}, 10), 0.5, 1e-12);
  EXPECT_NEAR(mrr_at(kJudged, {{"x", 2}, {"d3", 1}}, 1), 0.0, 1e-12);
  // AP = (1/1 + 2/3 + 3/4) / 3
  EXPECT_NEAR(map_at(kJudged, run(), 100), (1.0 + 2.0 / 3.0 + 0.75) / 3.0, 1e-12);
  EXPECT_NEAR(map_at(kJudged, run(), 3), (1.0 + 2.0 / 3.0) / 3.0, 1e-12);
}

TEST(Metrics, RunOrderIsScoreThenDocIdDescendingLikeTrecEval) {
  std::vector<RankedDoc> r = {{"a", 1}, {"c", 2}, {"b", 2}};
  sort_trec_order(r);
  EXPECT_EQ(r[0].doc_id, "c");
  EXPECT_EQ(r[1].doc_id, "b");
  EXPECT_EQ(r[2].doc_id, "a");
  // query_metrics sorts itself: listing order does not matter.
  const auto m = query_metrics(kJudged, {{"d3", 2}, {"y", 1}, {"d2", 5}, {"d1", 3}, {"x", 4}});
  EXPECT_NEAR(m.ndcg10, ndcg_at(kJudged, run(), 10), 1e-12);
}

TEST(Metrics, UnansweredQueriesCountAsZeroAndUnjudgedAreSkipped) {
  Qrels q = {{"1", kJudged}, {"2", {{"d1", 1}}}, {"3", {{"d1", 0}}}};
  sluice::retrieval::Run r = {{"1", run()}};
  const auto m = evaluate_run(q, r);
  EXPECT_EQ(m.queries, 2u);  // query 3 has no relevant document
  EXPECT_NEAR(m.mean.recall10, 0.5, 1e-12);
}

}  // namespace
}  // namespace sluice::retrieval
