// End-to-end quality on the shared Cranfield collection: the figures docs/benchmarks.md quotes.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "nodes/retrieval/eval/evaluate.h"

namespace sluice::retrieval {
namespace {

const std::string kDir = std::string(SLUICE_SHARED_DIR) + "/datasets/cranfield";

TEST(Cranfield, QualityTargets) {
  if (!std::filesystem::exists(kDir + "/corpus.jsonl")) GTEST_SKIP() << "no Cranfield at " << kDir;
  EvalOptions o;
  o.tune = true;
  const auto r = evaluate_dataset_dir(kDir, o);
  EXPECT_EQ(r.documents, 1400u);
  EXPECT_EQ(r.queries, 225u);
  auto get = [&](const std::string& name) {
    for (const auto& m : r.methods)
      if (m.name == name) return m.metrics;
    ADD_FAILURE() << "no method " << name;
    return MetricSet{};
  };
  const auto bm25 = get("bm25"), dense = get("dense"), tuned = get("tuned (held-out folds)");
  EXPECT_GE(bm25.ndcg10, 0.368);
  EXPECT_GE(dense.ndcg10, 0.41);
  EXPECT_GE(tuned.ndcg10, 0.42);
  EXPECT_GT(tuned.ndcg10, std::max(bm25.ndcg10, get("dense+feedback").ndcg10));
  EXPECT_GE(tuned.recall10, 1.10 * bm25.recall10);
  // The TREC run file has one line per (query, document).
  std::ostringstream trec;
  write_trec_run(trec, r.methods[0].run, "t");
  std::size_t lines = 0;
  for (char c : trec.str()) lines += c == '\n';
  std::size_t expected = 0;
  for (const auto& [q, docs] : r.methods[0].run) expected += docs.size();
  EXPECT_EQ(lines, expected);
  EXPECT_TRUE(r.to_json().contains("latency_us"));
}

}  // namespace
}  // namespace sluice::retrieval
