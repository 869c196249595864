// Path agreement (kb/path_agreement.h) and the hybrid's switch on it (kb/retriever.h): a dense
// model that follows the corpus agrees with BM25 on the corpus's own text, one that does not
// scatters BM25's neighbours, and a knowledge base of the second kind gets a BM25-led hybrid.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "nodes/retrieval/dense/lsa_embedder.h"
#include "nodes/retrieval/kb/kb_snapshot.h"
#include "nodes/retrieval/kb/path_agreement.h"
#include "nodes/retrieval/kb/retriever.h"

namespace sluice::retrieval {
namespace {

// A dense model that knows nothing of the corpus: each text's vector is a hash of its bytes.
class HashEmbedder final : public Embedder {
 public:
  std::size_t dimension() const override { return 16; }
  std::string name() const override { return "hash-16"; }
  std::size_t count_tokens(std::string_view text) const override { return text.size(); }
  void embed(const std::vector<std::string>& texts, float* out) const override {
    for (std::size_t i = 0; i < texts.size(); ++i) {
      std::size_t h = std::hash<std::string>{}(texts[i]);
      for (std::size_t c = 0; c < 16; ++c) {
        h = h * 6364136223846793005ULL + 1442695040888963407ULL;
        out[i * 16 + c] = static_cast<float>(static_cast<double>(h >> 11) / 9007199254740992.0 - 0.5);
      }
    }
    l2_normalize_rows(out, texts.size(), 16);
  }
};

// 120 chunks on 12 topics; each topic's chunks share its words, so a corpus-fitted model and
// BM25 both find a chunk's topic-mates.
std::vector<Chunk> topical_corpus() {
  const std::vector<std::vector<std::string>> topics = {
      {"turbine", "blade", "stall", "compressor", "airflow"}, {"boundary", "layer", "viscous", "laminar", "transition"},
      {"compiler", "parser", "grammar", "syntax", "token"},   {"matrix", "sparse", "eigenvalue", "pivot", "solver"},
      {"queue", "scheduler", "priority", "latency", "shed"},  {"cache", "eviction", "hit", "miss", "capacity"},
      {"kafka", "partition", "offset", "consumer", "broker"}, {"embedding", "vector", "cosine", "encoder", "dense"},
      {"shock", "wave", "supersonic", "mach", "nozzle"},      {"heat", "transfer", "convection", "plate", "flux"},
      {"graph", "vertex", "edge", "path", "tree"},            {"sort", "merge", "heap", "quick", "comparison"}};
  std::vector<Chunk> chunks;
  for (std::size_t t = 0; t < topics.size(); ++t) {
    for (std::size_t i = 0; i < 10; ++i) {
      std::string text;
      for (std::size_t w = 0; w < 12; ++w) text += topics[t][(i + w * (t + 1)) % 5] + " ";
      text += "note" + std::to_string(t * 10 + i);
      const std::string id = "d" + std::to_string(t * 10 + i);
      chunks.push_back(Chunk{id, "", text, 0, static_cast<std::uint32_t>(text.size()), 0});
    }
  }
  return chunks;
}

std::shared_ptr<const KbSnapshot> snapshot_with(std::shared_ptr<const Embedder> embedder, std::vector<Chunk> chunks) {
  std::vector<std::string> texts;
  for (const auto& c : chunks) texts.push_back(index_text(c));
  const auto vectors = embedder->embed(texts);
  return KbSnapshot::build(std::move(chunks), vectors, std::move(embedder), IndexOptions{}, 1);
}

std::shared_ptr<const Embedder> lsa_on(const std::vector<Chunk>& chunks) {
  std::vector<std::string> texts;
  for (const auto& c : chunks) texts.push_back(index_text(c));
  LsaOptions o;
  o.dimensions = 24;
  return LsaEmbedder::fit(texts, o);
}

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
