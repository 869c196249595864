#include <gtest/gtest.h>

#include "nodes/retrieval/eval/evaluate.h"
#include "nodes/retrieval/fusion/fusion.h"
#include "nodes/retrieval/fusion/query_classifier.h"

namespace sluice::retrieval {
namespace {

TEST(Fusion, RrfByHand) {
  const std::vector<ScoredDoc> bm25 = {{1, 9}, {2, 8}};
  const std::vector<ScoredDoc> dense = {{2, 0.9f}, {3, 0.5f}};
  const auto f = fuse_rrf(bm25, dense, 60, 0.5f);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].doc, 2u);  // 0.5/62 + 0.5/61
  EXPECT_NEAR(f[0].score, 0.5f / 62 + 0.5f / 61, 1e-7);
  EXPECT_EQ(f[1].doc, 1u);  // 0.5/61, ties with doc 3 broken by lower index
  EXPECT_EQ(f[2].doc, 3u);
}

TEST(Fusion, WeightedMinMaxByHand) {
  const std::vector<ScoredDoc> bm25 = {{1, 10}, {2, 5}, {3, 0}};
  const std::vector<ScoredDoc> dense = {{3, 0.8f}, {2, 0.6f}, {4, 0.4f}};
  const auto f = fuse_weighted(bm25, dense, 0.7f);
  // doc1: 0.7*1 = 0.7; doc2: 0.7*0.5 + 0.3*0.5 = 0.5; doc3: 0 + 0.3 = 0.3; doc4: 0
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].doc, 1u);
  EXPECT_NEAR(f[0].score, 0.7f, 1e-6);
  EXPECT_EQ(f[1].doc, 2u);
  EXPECT_NEAR(f[1].score, 0.5f, 1e-6);
  EXPECT_NEAR(f[2].score, 0.3f, 1e-6);
  EXPECT_NEAR(f[3].score, 0.0f, 1e-6);
  // A list of equal scores normalises to 1, not NaN.
  const auto g = fuse_weighted({{7, 2}, {8, 2}}, {}, 1.0f);
  EXPECT_FLOAT_EQ(g[0].score, 1.0f);
}

TEST(Fusion, ParseRejectsUnknownMethod) {
  EXPECT_EQ(parse_fusion_method("rrf"), FusionMethod::kRrf);
  EXPECT_THROW(parse_fusion_method("borda"), std::invalid_argument);
}

TEST(QueryClassifier, ExactLookups) {
  for (const char* q : {"ERR_4012", "\"connection reset\" nginx", "foo::bar", "src/main.cc", "v2.3 changelog",
                        "HNSW", "getUserName", "order 48213", "timeout"}) {
    EXPECT_EQ(classify_query(q), QueryType::kExactLookup) << q;
  }
}

TEST(QueryClassifier, NaturalLanguage) {
  for (const char* q : {"how does the cache invalidate entries?", "what is the effect of heating on flutter",
                        "problems of heat conduction in composite slabs, i.e. solved cases",
                        "don't the weights change after tuning"}) {
    EXPECT_EQ(classify_query(q), QueryType::kNaturalLanguage) << q;
  }
}

// `n` natural-language queries with two chunks each: BM25 ranks the relevant one first, dense
// ranks it second, so every query wants a BM25-leaning fusion.
struct Bm25WinsSet {
  std::vector<TuningQuery> queries;
  Qrels qrels;
  std::vector<std::string> doc_of;
  explicit Bm25WinsSet(int n) {
    for (int i = 0; i < n; ++i) {
      const auto rel = static_cast<DocIndex>(2 * i), other = static_cast<DocIndex>(2 * i + 1);
      doc_of.push_back("rel" + std::to_string(i));
      doc_of.push_back("other" + std::to_string(i));
      queries.push_back({std::to_string(i), QueryType::kNaturalLanguage, {{rel, 5}, {other, 1}}, {{other, 0.9f}, {rel, 0.1f}}, {}});
      qrels[std::to_string(i)]["rel" + std::to_string(i)] = 1;
    }
  }
  static std::vector<ScoredDoc> rank(const TuningQuery& q, const FusionParams& p) { return fuse(q.bm25, q.dense, p); }
};

TEST(Tuning, CrossValidationPicksTheWinningWeightOnTrainingFoldsOnly) {
  // Every training fold should pick a BM25-leaning setting, and each held-out query gets a ranking.
  const Bm25WinsSet set(20);
  const auto r = tune_fusion_cv(set.queries, set.qrels, set.doc_of, 5, 1, 100, RetrieveOptions{}, Bm25WinsSet::rank);
  ASSERT_EQ(r.held_out_run.size(), 20u);
  for (const auto& [qid, docs] : r.held_out_run) EXPECT_EQ(docs[0].doc_id, "rel" + qid);
  ASSERT_EQ(r.folds.size(), 5u);
  for (const auto& f : r.folds) EXPECT_EQ(f["natural_language"]["test_queries"], 4);
}

// The profile (fusion_profile.h): the same choice made on every query of each type.
TEST(Tuning, FillsTheProfileFromEveryQuery) {
  const Bm25WinsSet set(10);
  RetrieveOptions defaults;
  defaults.exact_lookup = {FusionMethod::kRrf, 0.25f, 42.f, 0.25f};
  const auto r = tune_fusion_cv(set.queries, set.qrels, set.doc_of, 5, 1, 100, defaults, Bm25WinsSet::rank);
  EXPECT_TRUE(r.profile.natural_language_tuned);
  EXPECT_GE(r.profile.natural_language.bm25_weight, 0.5f);  // 0.5 ties, and ties go to the lower index: rel
  EXPECT_DOUBLE_EQ(r.profile.in_sample_ndcg10, 1.0);
  EXPECT_FALSE(r.profile.exact_lookup_tuned) << "no exact-lookup query: the pipeline's settings stay";
  EXPECT_FLOAT_EQ(r.profile.exact_lookup.rrf_k, 42.f);
}

}  // namespace
}  // namespace sluice::retrieval
