// Path agreement (kb/path_agreement.h) and the hybrid's switch on it (kb/retriever.h): a dense
// model that follows the corpus agrees with BM25 on the corpus's own text, one that does not
// scatters BM25's neighbours, and a knowledge base of the second kind gets a BM25-led hybrid.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nodes/retrieval/kb/path_agreement.h"
#include "nodes/retrieval/kb/retriever.h"
#include "tests/nodes/retrieval/path_agreement_fixtures.h"

namespace sluice::retrieval {
namespace {

TEST(PathAgreement, AFittedModelAgreesWithBm25AndAnUnrelatedOneDoesNot) {
  const auto chunks = topical_corpus();
  const auto fitted = snapshot_with(lsa_on(chunks), chunks);
  const auto unrelated = snapshot_with(std::make_shared<HashEmbedder>(), chunks);
  ASSERT_TRUE(fitted->path_agreement().measured());
  ASSERT_TRUE(unrelated->path_agreement().measured());
  EXPECT_EQ(fitted->path_agreement().samples, 120u) << "every chunk, when there are fewer than `samples`";
  EXPECT_GT(fitted->path_agreement().overlap, 0.8);
  EXPECT_LT(unrelated->path_agreement().overlap, 0.3);
}

TEST(PathAgreement, IsTheSameFigureForTheSameCorpusAndSeed) {
  const auto chunks = topical_corpus();
  const auto a = snapshot_with(std::make_shared<HashEmbedder>(), chunks);
  const auto b = snapshot_with(std::make_shared<HashEmbedder>(), chunks);
  EXPECT_EQ(a->path_agreement().overlap, b->path_agreement().overlap);
  PathAgreementOptions few;
  few.samples = 20;
  const PathAgreement first = measure_path_agreement(*a, few);
  EXPECT_EQ(first.samples, 20u);
  EXPECT_EQ(first.overlap, measure_path_agreement(*b, few).overlap);
}

TEST(PathAgreement, IsNotMeasuredOnASmallKnowledgeBase) {
  auto chunks = topical_corpus();
  chunks.resize(49);
  const auto small = snapshot_with(std::make_shared<HashEmbedder>(), chunks);
  EXPECT_FALSE(small->path_agreement().measured());
  RetrieveOptions o;
  EXPECT_FALSE(lexical_led(o, *small)) << "an unmeasured figure keeps the configured weights";
}

TEST(PathAgreement, BoilerplateOpeningsCountOnceAndTooFewDistinctOnesGiveNoFigure) {
  // Every chunk opens with the same licence header: one distinct pseudo-query, no figure.
  auto chunks = topical_corpus();
  const std::string header =
      "Copyright 2026 the authors licensed under the Apache License version 2.0 you may not use this file except in "
      "compliance with the License you may obtain a copy of the License at the address below ";
  for (auto& c : chunks) c.text = header + c.text;
  const auto boilerplate = snapshot_with(std::make_shared<HashEmbedder>(), chunks);
  EXPECT_FALSE(boilerplate->path_agreement().measured());
  // Distinct openings are all used.
  const auto plain = snapshot_with(std::make_shared<HashEmbedder>(), topical_corpus());
  EXPECT_EQ(plain->path_agreement().samples, 120u);
}

TEST(PathAgreement, LowAgreementLeadsTheHybridWithBm25WithoutFeedback) {
  const auto chunks = topical_corpus();
  const auto unrelated = snapshot_with(std::make_shared<HashEmbedder>(), chunks);
  const auto fitted = snapshot_with(lsa_on(chunks), chunks);
  RetrieveOptions o;
  ASSERT_GT(o.min_path_agreement, 0.f);
  EXPECT_TRUE(lexical_led(o, *unrelated));
  EXPECT_FALSE(lexical_led(o, *fitted));
  const std::string query = "compressor blade stall";
  const RetrieveResult led = retrieve(*unrelated, query, o);
  EXPECT_EQ(led.fusion.method, FusionMethod::kWeighted);
  EXPECT_FLOAT_EQ(led.fusion.bm25_weight, o.low_agreement.bm25_weight);
  // Without feedback the ranking is one fusion of the two lists.
  const auto bm25 = unrelated->search_bm25(query, o.candidates);
  const auto qv = unrelated->embedder().embed(std::vector<std::string>{query});
  const auto dense = unrelated->search_dense(qv.data(), 1, o.candidates)[0];
  const auto once = fuse_candidates(bm25, dense, o.low_agreement, RetrieveMode::kHybrid);
  ASSERT_EQ(led.hits.size(), std::min(o.top_k, once.size()));
  for (std::size_t i = 0; i < led.hits.size(); ++i) EXPECT_EQ(led.hits[i].chunk, once[i].chunk) << i;
  // The top hits are the topic's chunks, which BM25 finds and the hash model does not.
  for (std::size_t i = 0; i < 5; ++i) EXPECT_LT(led.hits[i].chunk, 10u) << i;
  // Switched off, the configured weights apply.
  o.min_path_agreement = 0;
  EXPECT_FALSE(lexical_led(o, *unrelated));
  EXPECT_FLOAT_EQ(retrieve(*unrelated, query, o).fusion.bm25_weight, o.natural_language.bm25_weight);
}

}  // namespace
}  // namespace sluice::retrieval
