#include "nodes/retrieval/node/retrieval_nodes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "graph/clock.h"
#include "nodes/retrieval/fusion/fusion_profile.h"

namespace sluice::retrieval {
namespace {

class RecordingSink final : public ResponseSink {
 public:
  void on_token(std::string_view piece) override { text += piece; }
  void on_event(std::string_view type, std::string_view json) override { events.emplace_back(type, json); }
  void on_complete(const Request&) override { ++completed; }
  std::string text;
  std::vector<std::pair<std::string, std::string>> events;
  int completed = 0;
};

std::shared_ptr<KnowledgeBase> docs_kb() {
  KnowledgeBaseOptions o;
  o.lsa.dimensions = 8;
  auto kb = std::make_shared<KnowledgeBase>(o);
  kb->upsert({{"cache.md", "Caching", "The semantic cache is invalidated when the knowledge base version changes.",
               DocumentKind::kNarrative, CodeLanguage::kNone},
              {"ingest.md", "Ingest", "Ingest re-embeds only changed documents and swaps the index atomically.",
               DocumentKind::kNarrative, CodeLanguage::kNone},
              {"http.md", "HTTP", "The server streams answers with server-sent events.", DocumentKind::kNarrative,
               CodeLanguage::kNone}});
  return kb;
}

TEST(RetrievalNodes, EmbedBranchesFuseAnswerStreamsACitedAnswer) {
  auto kb = docs_kb();
  ManualClock clock;
  EmbedNode embed(kb);
  DenseNode dense(kb, 100, &clock);
  Bm25Node bm25(kb, 100);
  FuseNode fuse(kb, RetrieveOptions{});
  RerankNode rerank(kb, 20, 0.3f);
  AnswerNode answer(kb, AnswerOptions{}, &clock);
  Batch batch;
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (const char* q : {"when is the cache invalidated", "how does ingest swap the index"}) {
    RequestInput in;
    in.kind = RequestInput::Kind::kCompletion;
    in.prompt = q;
    sinks.push_back(std::make_shared<RecordingSink>());
    batch.requests.push_back(std::make_shared<Request>(batch.requests.size() + 1, in, sinks.back()));
  }
  embed.process(batch);
  bm25.process(batch);
  dense.process(batch);
  fuse.process(batch);
  rerank.process(batch);
  answer.process(batch);
  EXPECT_EQ(sinks[0]->completed, 1);
  EXPECT_NE(sinks[0]->text.find("invalidated when the knowledge base version changes. [1]"), std::string::npos)
      << sinks[0]->text;
  // citations: field (the default): the sources are the "sources" event, not text.
  EXPECT_EQ(sinks[0]->text.find("Sources:"), std::string::npos) << sinks[0]->text;
  ASSERT_FALSE(sinks[0]->events.empty());
  EXPECT_EQ(sinks[0]->events[0].first, "sources");
  EXPECT_NE(sinks[0]->events[0].second.find("\"doc_id\":\"cache.md\""), std::string::npos) << sinks[0]->events[0].second;
  ASSERT_FALSE(sinks[1]->events.empty());
  EXPECT_NE(sinks[1]->events[0].second.find("ingest.md"), std::string::npos) << sinks[1]->events[0].second;
  // Usage in estimated tokens (4 bytes each, rounded up), not a count of sentences.
  const Usage& u = batch.requests[0]->usage;
  EXPECT_EQ(u.prompt_tokens, 8);  // "when is the cache invalidated": 29 bytes
  EXPECT_EQ(u.completion_tokens, static_cast<int>((sinks[0]->text.size() + 3) / 4)) << sinks[0]->text;
  EXPECT_GT(u.completion_tokens, 5);
}

// A latency budget's shrink (graph/stage_budget.h) reaches fuse and rerank through the
// request's trace at their stage index: fuse keeps top_k times the factor; the other request of
// the same batch keeps its full top_k.
TEST(RetrievalNodes, ShrunkRequestsGetFewerFusedPassages) {
  auto kb = docs_kb();
  ManualClock clock;
  constexpr std::uint16_t kFuseStage = 3;
  Batch batch;
  for (int i = 0; i < 2; ++i) {
    RequestInput in;
    in.kind = RequestInput::Kind::kCompletion;
    in.prompt = "the index and the cache";
    batch.requests.push_back(std::make_shared<Request>(i + 1, in, std::make_shared<RecordingSink>()));
  }
  batch.requests[0]->trace().start(kFuseStage, 0, 0);
  batch.requests[0]->trace().degrade(kFuseStage, Degradation::kShrink);
  EmbedNode(kb).process(batch);
  Bm25Node(kb, 10).process(batch);
  DenseNode(kb, 10, &clock).process(batch);
  RetrieveOptions o;
  o.top_k = 3;
  FuseNode(kb, o, kFuseStage, 0.34).process(batch);
  EXPECT_EQ(batch.requests[0]->attachment<RetrievalHits>(kHitsKey)->hits.size(), 1u);
  EXPECT_EQ(batch.requests[1]->attachment<RetrievalHits>(kHitsKey)->hits.size(), 3u);
}

TEST(RetrievalNodes, RetrieveRequestsGetRankedChunksWithPathScores) {
  auto kb = docs_kb();
  ManualClock clock;
  RequestInput in;
  in.kind = RequestInput::Kind::kRetrieve;
  in.prompt = "server-sent events";
  auto sink = std::make_shared<RecordingSink>();
  Batch batch;
  batch.requests.push_back(std::make_shared<Request>(1, in, sink));
  EmbedNode(kb).process(batch);
  Bm25Node(kb, 10).process(batch);
  DenseNode(kb, 10, &clock).process(batch);
  FuseNode(kb, RetrieveOptions{}).process(batch);
  AnswerNode(kb, AnswerOptions{}, &clock).process(batch);
  ASSERT_EQ(sink->events.size(), 1u);
  EXPECT_EQ(sink->events[0].first, "retrieval");
  const auto j = nlohmann::json::parse(sink->events[0].second);
  EXPECT_EQ(j["chunks"][0]["doc_id"], "http.md");
  EXPECT_EQ(j["chunks"][0]["bm25_rank"], 1);
  EXPECT_EQ(j["version"], 1);
}

TEST(RetrievalNodes, OneRequestReadsOneGenerationAcrossASwap) {
  auto kb = docs_kb();
  RequestInput in;
  in.prompt = "cache";
  Batch batch;
  batch.requests.push_back(std::make_shared<Request>(1, in, std::make_shared<RecordingSink>()));
  EmbedNode(kb).process(batch);
  kb->upsert({{"new.md", "New", "A new cache document.", DocumentKind::kNarrative, CodeLanguage::kNone}});
  Bm25Node(kb, 10).process(batch);
  const auto gen = batch.requests[0]->attachment<const KbSnapshot>(kSnapshotKey);
  EXPECT_EQ(gen->version(), 1u);
  EXPECT_EQ(kb->version(), 2u);
  for (const auto& h : *batch.requests[0]->attachment<std::vector<ScoredDoc>>(kBm25Key)) {
    EXPECT_NE(gen->chunks()[h.doc].doc_id, "new.md");
  }
}

// A batch's queries are searched together (one index pass per snapshot), and each request gets
// the hits it gets alone; requests pinned to different snapshots each search their own.
TEST(RetrievalNodes, DenseSearchesABatchTogetherAndEachRequestGetsItsOwnHits) {
  auto kb = docs_kb();
  ManualClock clock;
  const std::vector<std::string> queries = {"cache invalidated", "swap the index", "server-sent events",
                                            "re-embeds changed documents", "knowledge base version"};
  auto request_for = [](const std::string& q, std::size_t id) {
    RequestInput in;
    in.prompt = q;
    return std::make_shared<Request>(id, in, std::make_shared<RecordingSink>());
  };
  auto hits_of = [](const RequestPtr& r) { return *r->attachment<std::vector<ScoredDoc>>(kDenseKey); };
  Batch together;
  for (std::size_t i = 0; i < queries.size(); ++i) together.requests.push_back(request_for(queries[i], i + 1));
  EmbedNode(kb).process(together);
  // One of them pinned to a later snapshot: a document added between its embedding and the others'.
  Batch late;
  kb->upsert({{"new.md", "New", "A new cache document about events.", DocumentKind::kNarrative, CodeLanguage::kNone}});
  late.requests.push_back(request_for("cache events", 99));
  EmbedNode(kb).process(late);
  together.requests.push_back(late.requests[0]);
  DenseNode(kb, 10, &clock).process(together);  // every chunk: the lists show which snapshot was read
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const auto gen = together.requests[i]->attachment<const KbSnapshot>(kSnapshotKey);
    EXPECT_EQ(gen->version(), 1u);
    const float* qv = together.requests[i]->attachment<std::vector<float>>(kQueryVectorKey)->data();
    const auto alone = gen->search_dense(qv, 1, 10)[0];
    const auto batched = hits_of(together.requests[i]);
    ASSERT_EQ(batched.size(), gen->chunks().size()) << queries[i];
    ASSERT_EQ(batched.size(), alone.size()) << queries[i];
    for (std::size_t j = 0; j < alone.size(); ++j) {
      EXPECT_EQ(batched[j].doc, alone[j].doc) << queries[i];
      EXPECT_EQ(batched[j].score, alone[j].score) << queries[i];
    }
  }
  const auto late_gen = late.requests[0]->attachment<const KbSnapshot>(kSnapshotKey);
  EXPECT_EQ(late_gen->version(), 2u);
  const auto late_hits = hits_of(late.requests[0]);
  EXPECT_EQ(late_hits.size(), late_gen->chunks().size());
  bool found_new = false;
  for (const auto& h : late_hits) found_new |= late_gen->chunks()[h.doc].doc_id == "new.md";
  EXPECT_TRUE(found_new) << "the later request searched its own snapshot";
}

TEST(RetrievalNodes, DenseWithoutEmbedFailsTheRequestClearly) {
  auto kb = docs_kb();
  ManualClock clock;
  RequestInput in;
  in.prompt = "cache";
  Batch batch;
  auto sink = std::make_shared<RecordingSink>();
  batch.requests.push_back(std::make_shared<Request>(1, in, sink));
  DenseNode(kb, 10, &clock).process(batch);
  EXPECT_TRUE(batch.requests[0]->done());
  EXPECT_EQ(batch.requests[0]->status().code, StatusCode::kInternal);
  EXPECT_NE(batch.requests[0]->status().message.find("embed"), std::string::npos);
}

}  // namespace
}  // namespace sluice::retrieval

namespace sluice::retrieval {
namespace {

TEST(RetrievalNodes, FuseConfigMapsOntoEngineOptions) {
  FuseConfig c;
  c.set_method("rrf");
  c.set_natural_language_bm25_weight(0.3f);
  c.set_natural_language_final_bm25_weight(0.1f);
  c.set_exact_lookup_bm25_weight(0.7f);
  c.set_rrf_k(20);
  c.set_feedback_docs(0);
  c.set_top_k(5);
  c.set_min_path_agreement(0.5f);
  c.set_low_agreement_bm25_weight(0.8f);
  const RetrieveOptions o = retrieve_options_from(c);
  EXPECT_FLOAT_EQ(o.min_path_agreement, 0.5f);
  EXPECT_EQ(o.low_agreement.method, FusionMethod::kWeighted);
  EXPECT_FLOAT_EQ(o.low_agreement.bm25_weight, 0.8f);
  EXPECT_EQ(o.natural_language.method, FusionMethod::kRrf);
  EXPECT_FLOAT_EQ(o.natural_language.final_weight(), 0.1f);
  EXPECT_FLOAT_EQ(o.exact_lookup.bm25_weight, 0.7f);
  EXPECT_FLOAT_EQ(o.exact_lookup.rrf_k, 20.f);
  EXPECT_EQ(o.feedback_docs, 0u);
  EXPECT_EQ(o.top_k, 5u);
  c.set_method("borda");
  EXPECT_THROW(retrieve_options_from(c), std::invalid_argument);
}

// A fusion profile replaces the weights of the types it tuned, found beside the pipeline file.
TEST(RetrievalNodes, FuseConfigLoadsAFusionProfile) {
  const std::string dir = ::testing::TempDir() + "profile-test";
  std::filesystem::create_directories(dir);
  FusionProfile p;
  p.natural_language = {FusionMethod::kWeighted, 0.9f, 60.f, 0.7f};
  p.natural_language_tuned = true;
  p.exact_lookup = {FusionMethod::kRrf, 0.1f, 5.f, 0.1f};
  p.exact_lookup_tuned = false;
  std::ofstream(dir + "/cacm.profile.json") << fusion_profile_json(p);
  FuseConfig c;
  c.set_method("weighted");
  c.set_natural_language_bm25_weight(0.4f);
  c.set_exact_lookup_bm25_weight(0.65f);
  c.set_rrf_k(60);
  c.set_profile("cacm.profile.json");
  c.set_min_path_agreement(0.64f);
  const RetrieveOptions o = retrieve_options_from(c, dir);
  EXPECT_EQ(o.min_path_agreement, 0.f) << "a profile replaces the path-agreement switch";
  EXPECT_FLOAT_EQ(o.natural_language.bm25_weight, 0.9f);
  EXPECT_FLOAT_EQ(o.natural_language.final_weight(), 0.7f);
  EXPECT_EQ(o.exact_lookup.method, FusionMethod::kWeighted) << "not tuned in the profile: the pipeline's";
  EXPECT_FLOAT_EQ(o.exact_lookup.bm25_weight, 0.65f);
  c.set_profile("missing.json");
  try {
    retrieve_options_from(c, dir);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("missing.json: (file): cannot be read"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sluice::retrieval
