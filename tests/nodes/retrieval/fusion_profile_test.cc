// Fusion profiles (fusion/fusion_profile.h): what `sluice eval --tune --profile` writes reads back
// the same, and each kind of bad file is refused naming the file and field (the tuning that fills
// one is tested in fusion_test.cc); and the evaluation breakdown (eval/eval_breakdown.h): rows per query
// type, the better single path, and per-query differences worst first.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "nodes/retrieval/eval/eval_breakdown.h"
#include "nodes/retrieval/eval/evaluate.h"
#include "nodes/retrieval/fusion/fusion_profile.h"

namespace sluice::retrieval {
namespace {

using ::testing::HasSubstr;

FusionProfile sample_profile() {
  FusionProfile p;
  p.dataset = "cacm";
  p.queries = 52;
  p.natural_language = {FusionMethod::kWeighted, 0.8f, 60.f, 0.7f};
  p.exact_lookup = {FusionMethod::kRrf, 0.7f, 10.f, 0.7f};
  p.natural_language_tuned = true;
  p.exact_lookup_tuned = false;
  p.in_sample_ndcg10 = 0.49;
  p.held_out_ndcg10 = 0.47;
  return p;
}

TEST(FusionProfile, RoundTrips) {
  const FusionProfile back = parse_fusion_profile(fusion_profile_json(sample_profile()), "p.json");
  EXPECT_EQ(back.dataset, "cacm");
  EXPECT_EQ(back.queries, 52u);
  EXPECT_EQ(back.natural_language.method, FusionMethod::kWeighted);
  EXPECT_FLOAT_EQ(back.natural_language.bm25_weight, 0.8f);
  EXPECT_FLOAT_EQ(back.natural_language.final_weight(), 0.7f);
  EXPECT_TRUE(back.natural_language_tuned);
  EXPECT_EQ(back.exact_lookup.method, FusionMethod::kRrf);
  EXPECT_FLOAT_EQ(back.exact_lookup.rrf_k, 10.f);
  EXPECT_FALSE(back.exact_lookup_tuned) << "a type the tuning had no query of keeps the pipeline's settings";
  EXPECT_DOUBLE_EQ(back.held_out_ndcg10, 0.47);
}

// Found by fusion_profile_fuzz: a hand-edited value with more digits than the tuning grid's was
// rounded to 4 places when written, so the profile read back differed. Values are written as the
// shortest decimal of their float: grid values stay tenths, others exact.
TEST(FusionProfile, AnyValueRoundTripsExactlyAndGridValuesStayShort) {
  FusionProfile p = sample_profile();
  p.natural_language.rrf_k = 30.477406f;
  p.exact_lookup.bm25_weight = 0.123456789f;
  const std::string text = fusion_profile_json(p);
  const FusionProfile back = parse_fusion_profile(text, "p.json");
  EXPECT_EQ(back.natural_language.rrf_k, p.natural_language.rrf_k);
  EXPECT_EQ(back.exact_lookup.bm25_weight, p.exact_lookup.bm25_weight);
  EXPECT_THAT(text, HasSubstr("\"bm25_weight\": 0.8,")) << text;
  EXPECT_THAT(text, ::testing::Not(HasSubstr("0.79999"))) << text;
}

std::string error_of(const std::string& text) {
  try {
    parse_fusion_profile(text, "p.json");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(FusionProfile, BadFilesAreRefusedNamingTheField) {
  const std::string good = fusion_profile_json(sample_profile());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  EXPECT_THAT(error_of("{"), HasSubstr("fusion profile p.json: (file): not JSON"));
  EXPECT_THAT(error_of(good + std::string(1, '\0') + "}"), HasSubstr("(file): not JSON: a NUL byte at byte"));
  EXPECT_THAT(error_of("[]"), HasSubstr("(file): not a JSON object"));
  EXPECT_THAT(error_of(with("sluice.fusion_profile.v1", "v2")), HasSubstr("format: not \"sluice.fusion_profile.v1\""));
  EXPECT_THAT(error_of(with("\"bm25_weight\": 0.8", "\"bm25_weight\": 1.5")),
              HasSubstr("natural_language.bm25_weight: 1.5 is outside 0-1"));
  EXPECT_THAT(error_of(with("\"method\": \"weighted\"", "\"method\": \"borda\"")),
              HasSubstr("natural_language.method: 'borda' is not weighted or rrf"));
  EXPECT_THAT(error_of(with("\"rrf_k\": 10.0", "\"rrf_k\": \"ten\"")), HasSubstr("exact_lookup.rrf_k: not a number"));
  EXPECT_THAT(error_of(with("\"exact_lookup\"", "\"exact\"")), HasSubstr("exact_lookup: missing"));
  try {
    read_fusion_profile("/nonexistent/p.json");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("fusion profile /nonexistent/p.json: (file): cannot be read"));
  }
}

TEST(EvalBreakdown, RowsPerTypeAndTheWorstQueriesFirst) {
  BeirDataset ds;
  ds.queries = {{"q1", "How does lift vary with speed?"}, {"q2", "ERR_42 in module_x"}, {"q3", "Why do wings stall?"}};
  for (const char* q : {"q1", "q2", "q3"}) ds.qrels[q]["good"] = 1;
  auto run = [](std::vector<std::pair<std::string, std::string>> tops) -> retrieval::Run {
    retrieval::Run r;
    for (auto& [q, top] : tops) r[q] = {{top, 2.0}, {"x", 1.0}};
    return r;
  };
  EvalReport report;
  // bm25 finds q1 and q2, dense only q3: bm25 is the better single path (2 of 3).
  auto method = [](std::string name, retrieval::Run r) { return MethodResult{std::move(name), nlohmann::json::object(), MetricSet{}, std::move(r)}; };
  report.methods.push_back(method("bm25", run({{"q1", "good"}, {"q2", "good"}, {"q3", "bad"}})));
  report.methods.push_back(method("dense", run({{"q1", "bad"}, {"q2", "bad"}, {"q3", "good"}})));
  report.methods.push_back(method("hybrid", run({{"q1", "bad"}, {"q2", "good"}, {"q3", "good"}})));
  const EvalBreakdown b = eval_breakdown(report, ds);
  EXPECT_EQ(b.best_single_path, "bm25");
  ASSERT_EQ(b.queries.size(), 3u);
  EXPECT_EQ(b.queries[0].id, "q1") << "the hybrid lost q1, which bm25 had";
  EXPECT_LT(b.queries[0].difference, 0);
  EXPECT_EQ(b.queries[2].id, "q3");
  EXPECT_GT(b.queries[2].difference, 0);
  std::size_t exact_rows = 0;
  for (const auto& r : b.rows) {
    if (r.type != "exact_lookup") continue;
    ++exact_rows;
    EXPECT_EQ(r.queries, 1u) << r.method;
  }
  EXPECT_EQ(exact_rows, 3u);  // one per method
  // The two paths share only "x" in each top 10 (1 of 10 places), and BM25's first hit is never
  // in the dense list (rank 101 by convention).
  EXPECT_NEAR(b.top10_overlap, 0.1, 1e-9);
  EXPECT_NEAR(b.bm25_first_in_dense, 101.0, 1e-9);
  const auto j = to_json(b, 1);
  EXPECT_EQ(j["worst_queries"].size(), 1u);
  EXPECT_EQ(j["differences"].size(), 3u);
  EXPECT_EQ(j["wins"], 1);
  EXPECT_EQ(j["losses"], 1);
}

}  // namespace
}  // namespace sluice::retrieval
