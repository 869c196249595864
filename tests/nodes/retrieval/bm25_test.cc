#include "nodes/retrieval/bm25/bm25_index.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

namespace sluice::retrieval {
namespace {

Bm25Index tiny(Bm25Params p = {}) {
  Bm25Index::Builder b;
  b.add({"a", "b", "c"});
  b.add({"a", "a", "d"});
  b.add({"e"});
  return b.build(p);
}

TEST(Bm25, ScoresMatchTheFormulaByHand) {
  const Bm25Index idx = tiny();
  // N=3, avglen = 7/3. term d: df 1, idf = ln(1 + 2.5/1.5); doc 1 len 3, tf 1.
  const double idf = std::log(1 + (3 - 1 + 0.5) / 1.5);
  const double norm = 1.2 * (1 - 0.75 + 0.75 * 3 / (7.0 / 3));
  const double expected = idf * 1 * 2.2 / (1 + norm);
  const auto hits = idx.search({"d"}, 10);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].doc, 1u);
  EXPECT_NEAR(hits[0].score, expected, 1e-5);
}

TEST(Bm25, RepeatedQueryTermsCountTwice) {
  const Bm25Index idx = tiny();
  const float once = idx.search({"d"}, 1)[0].score;
  EXPECT_NEAR(idx.search({"d", "d"}, 1)[0].score, 2 * once, 1e-5);
}

TEST(Bm25, UnknownTermsAndZeroKGiveNothing) {
  const Bm25Index idx = tiny();
  EXPECT_TRUE(idx.search({"zzz"}, 5).empty());
  EXPECT_TRUE(idx.search({"a"}, 0).empty());
}

TEST(Bm25, KAndBChangeTheRanking) {
  // b = 0: no length normalisation, so the doc with tf 2 wins regardless of length.
  Bm25Index::Builder b;
  b.add({"x", "x", "y", "y", "y", "y", "y", "y", "y", "y"});
  b.add({"x", "z"});
  EXPECT_EQ(b.build({1.2f, 0.0f}).search({"x"}, 1)[0].doc, 0u);
  EXPECT_EQ(b.build({1.2f, 1.0f}).search({"x"}, 1)[0].doc, 1u);
}

TEST(Bm25, MaxScoreReturnsExactlyTheExhaustiveTopK) {
  std::mt19937 rng(1);
  std::geometric_distribution<int> term(0.08);
  Bm25Index::Builder b;
  for (int d = 0; d < 3000; ++d) {
    std::vector<std::string> doc;
    const int len = 5 + static_cast<int>(rng() % 60);
    for (int i = 0; i < len; ++i) doc.push_back("t" + std::to_string(term(rng)));
    b.add(doc);
  }
  const Bm25Index idx = b.build({});
  for (int q = 0; q < 200; ++q) {
    std::vector<std::string> query;
    for (int i = 0; i < 1 + q % 6; ++i) query.push_back("t" + std::to_string(term(rng)));
    for (std::size_t k : {1u, 10u, 100u}) {
      const auto a = idx.search(query, k, Bm25Index::Strategy::kExhaustive);
      const auto m = idx.search(query, k, Bm25Index::Strategy::kMaxScore);
      ASSERT_EQ(a.size(), m.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        // Summation order differs, so scores may differ in the last bit; ranks must agree
        // except between near-equal scores.
        EXPECT_NEAR(a[i].score, m[i].score, 1e-4) << "query " << q << " k " << k << " rank " << i;
      }
    }
  }
}

TEST(Bm25, BatchEqualsOneByOne) {
  const Bm25Index idx = tiny();
  const std::vector<std::vector<std::string>> qs = {{"a"}, {"d", "e"}, {"zz"}, {"c", "a"}};
  const auto batch = idx.search_batch(qs, 3);
  for (std::size_t i = 0; i < qs.size(); ++i) {
    const auto one = idx.search(qs[i], 3);
    ASSERT_EQ(batch[i].size(), one.size());
    for (std::size_t j = 0; j < one.size(); ++j) EXPECT_EQ(batch[i][j].doc, one[j].doc);
  }
}

TEST(Bm25, SaveLoadRoundTripsAndTruncationFailsCleanly) {
  const Bm25Index idx = tiny({1.5f, 0.5f});
  std::stringstream s;
  idx.save(s);
  const std::string bytes = s.str();
  std::stringstream in(bytes);
  const Bm25Index back = Bm25Index::load(in);
  EXPECT_EQ(back.num_docs(), 3u);
  EXPECT_FLOAT_EQ(back.params().k1, 1.5f);
  EXPECT_FLOAT_EQ(back.search({"a"}, 1)[0].score, idx.search({"a"}, 1)[0].score);
  std::stringstream torn(bytes.substr(0, bytes.size() / 2));
  EXPECT_THROW(Bm25Index::load(torn), std::runtime_error);
}

}  // namespace
}  // namespace sluice::retrieval
