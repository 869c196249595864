// DenseDemand (node/dense_demand.h): a pipeline whose fuse node is led by BM25 at weight 1 on a
// snapshot neither embeds its queries nor searches the vectors there, and ranks exactly as it
// did with them; a fuse node that reads the dense path, or none at all, keeps them running.
#include "nodes/retrieval/node/dense_demand.h"

#include <gtest/gtest.h>

#include <cmath>

#include "graph/clock.h"
#include "nodes/retrieval/node/retrieval_nodes.h"
#include "tests/nodes/retrieval/path_agreement_fixtures.h"

namespace sluice::retrieval {
namespace {

class NullSink final : public ResponseSink {
 public:
  void on_token(std::string_view) override {}
  void on_complete(const Request&) override {}
};

// 60 documents on 6 topics (topical_texts): enough chunks for the path agreement to be
// measured (50).
std::shared_ptr<KnowledgeBase> topical_kb() {
  std::vector<SourceDocument> docs;
  for (auto& t : topical_texts(6)) {
    docs.push_back({std::move(t.id), "", std::move(t.text), DocumentKind::kNarrative, CodeLanguage::kNone});
  }
  KnowledgeBaseOptions o;
  o.lsa.dimensions = 8;
  auto kb = std::make_shared<KnowledgeBase>(o);
  kb->upsert(docs);
  return kb;
}

void add_queries(Batch& batch, std::size_t first_id) {
  for (const char* q : {"compressor stall", "sparse eigenvalue solver", "cache eviction capacity"}) {
    RequestInput in;
    in.kind = RequestInput::Kind::kCompletion;
    in.prompt = q;
    batch.requests.push_back(std::make_shared<Request>(first_id + batch.requests.size(), in, std::make_shared<NullSink>()));
  }
}

// Runs embed, bm25, dense and fuse as a pipeline would, the three sharing `demand` (may be null).
void retrieve(Batch& batch, const std::shared_ptr<KnowledgeBase>& kb, const RetrieveOptions& options,
              const std::shared_ptr<DenseDemand>& demand) {
  ManualClock clock;
  FuseNode fuse(kb, options, 0, 1, "fuse", nullptr, demand);
  EmbedNode(kb, demand).process(batch);
  Bm25Node(kb, 100).process(batch);
  DenseNode(kb, 100, &clock, demand).process(batch);
  fuse.process(batch);
}

RetrieveOptions bm25_led(float weight) {
  RetrieveOptions o;
  o.min_path_agreement = 1.01f;  // above any measured figure: led by BM25
  o.low_agreement.bm25_weight = weight;
  return o;
}

TEST(DenseDemand, ABm25LedFuseAtWeightOneSkipsEmbeddingAndSearchAndRanksTheSame) {
  auto kb = topical_kb();
  ASSERT_TRUE(kb->current()->path_agreement().measured());
  const RetrieveOptions options = bm25_led(1.f);

  Batch skipped;
  add_queries(skipped, 1);
  retrieve(skipped, kb, options, dense_demand_for("p/skip", kb.get()));
  Batch full;
  add_queries(full, 11);
  retrieve(full, kb, options, nullptr);  // no demand: both dense nodes run

  for (std::size_t i = 0; i < skipped.requests.size(); ++i) {
    const RequestPtr& r = skipped.requests[i];
    EXPECT_TRUE(r->active()) << r->status().message;
    EXPECT_EQ(r->attachment<std::vector<float>>(kQueryVectorKey), nullptr) << "embedded though no fuse reads it";
    EXPECT_EQ(r->attachment<std::vector<ScoredDoc>>(kDenseKey), nullptr) << "searched though no fuse reads it";
    ASSERT_NE(r->attachment<const KbSnapshot>(kSnapshotKey), nullptr) << "the snapshot is pinned either way";
    ASSERT_NE(full.requests[i]->attachment<std::vector<ScoredDoc>>(kDenseKey), nullptr);
    ASSERT_NE(r->attachment<std::vector<ScoredDoc>>(kBm25Key), nullptr);
    const auto& bm25 = *r->attachment<std::vector<ScoredDoc>>(kBm25Key);
    const auto& a = r->attachment<RetrievalHits>(kHitsKey)->hits;
    const auto& b = full.requests[i]->attachment<RetrievalHits>(kHitsKey)->hits;
    ASSERT_FALSE(bm25.empty()) << r->input().query();
    // BM25's candidates in BM25's order either way: a query BM25 finds fewer than top_k for is
    // not padded with documents only the dense path found (at weight 1 they would score 0).
    ASSERT_EQ(a.size(), std::min<std::size_t>(options.top_k, bm25.size()));
    ASSERT_EQ(b.size(), a.size());
    int dense_ranked = 0;
    for (std::size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k].chunk, bm25[k].doc) << "BM25's own order, rank " << k;
      EXPECT_EQ(a[k].bm25_rank, static_cast<int>(k + 1));
      EXPECT_EQ(a[k].dense_rank, 0) << "no dense rank: the dense path did not run";
      EXPECT_EQ(a[k].chunk, b[k].chunk) << "rank " << k;
      EXPECT_EQ(a[k].score, b[k].score) << "rank " << k;
      dense_ranked += b[k].dense_rank > 0;
    }
    EXPECT_GT(dense_ranked, 0) << "with the dense hits, their ranks are reported";
  }
}

TEST(DenseDemand, AFuseThatReadsTheDensePathKeepsItRunning) {
  auto kb = topical_kb();
  for (const RetrieveOptions& options : {bm25_led(0.85f), RetrieveOptions{}}) {
    auto demand = dense_demand_for("p/reads", kb.get());
    Batch batch;
    add_queries(batch, 1);
    retrieve(batch, kb, options, demand);
    for (const RequestPtr& r : batch.requests) {
      EXPECT_NE(r->attachment<std::vector<float>>(kQueryVectorKey), nullptr);
      EXPECT_NE(r->attachment<std::vector<ScoredDoc>>(kDenseKey), nullptr);
    }
  }
  // Two fuse nodes on one demand: one that reads the dense path is enough to keep it.
  auto demand = dense_demand_for("p/two", kb.get());
  const auto snapshot = kb->current();
  const auto led = demand->add_fuse(bm25_led(1.f));
  EXPECT_FALSE(demand->wanted(*snapshot));
  const auto reads = demand->add_fuse(RetrieveOptions{});
  EXPECT_TRUE(demand->wanted(*snapshot));
  demand->remove_fuse(reads);
  EXPECT_FALSE(demand->wanted(*snapshot));
  demand->remove_fuse(led);
  EXPECT_TRUE(demand->wanted(*snapshot)) << "no fuse node: the dense path is wanted (a dense-only pipeline)";
}

// An ingest that moves the knowledge base across the path-agreement bar starts or stops the
// dense branch with its new snapshot, and a request decides by the snapshot it is pinned to: one
// pinned before the ingest keeps its snapshot's answer while the nodes after it run on the new one.
TEST(DenseDemand, ASnapshotAcrossTheBarDecidesForTheRequestsPinnedToIt) {
  auto kb = topical_kb();
  const auto before = kb->current();
  // Documents that mix every topic's words: BM25 and the dense path agree differently on them.
  std::vector<SourceDocument> mixed;
  const char* words[] = {"turbine", "parser", "pivot", "latency", "eviction", "nozzle", "blade", "grammar", "solver", "shed",
                         "stall",   "token",  "sparse", "queue",  "hit",      "mach",   "airflow", "syntax", "matrix", "miss"};
  for (std::size_t i = 0; i < 120; ++i) {
    std::string text;
    for (std::size_t w = 0; w < 12; ++w) text += std::string(words[(i * 7 + w * w * 3 + i * w) % 20]) + " ";
    mixed.push_back({"m" + std::to_string(i), "", text + "mixed" + std::to_string(i), DocumentKind::kNarrative, CodeLanguage::kNone});
  }
  kb->upsert(mixed);
  const auto after = kb->current();
  const double a = before->path_agreement().overlap, b = after->path_agreement().overlap;
  ASSERT_TRUE(before->path_agreement().measured() && after->path_agreement().measured());
  ASSERT_GT(std::abs(a - b), 0.02) << "the two snapshots should sit on either side of a bar between them: " << a << ", " << b;
  RetrieveOptions options = bm25_led(1.f);
  options.min_path_agreement = static_cast<float>((a + b) / 2);  // the lower one is led by BM25
  const bool before_led = a < b;

  auto demand = dense_demand_for("p/swap", kb.get());
  ManualClock clock;
  FuseNode fuse(kb, options, 0, 1, "fuse", nullptr, demand);
  EmbedNode embed(kb, demand);
  Bm25Node bm25(kb, 100);
  DenseNode dense(kb, 100, &clock, demand);
  ASSERT_EQ(demand->wanted(*before), !before_led);
  ASSERT_EQ(demand->wanted(*after), before_led);

  // Pinned to `before` by the embed node (an old snapshot is kept alive by its requests), the
  // rest of the pass after the knowledge base moved on: every node decides by `before`.
  Batch old_batch;
  add_queries(old_batch, 1);
  for (const RequestPtr& r : old_batch.requests) r->attach<const KbSnapshot>(kSnapshotKey, before);
  embed.process(old_batch);
  bm25.process(old_batch);
  dense.process(old_batch);
  fuse.process(old_batch);
  // A batch that arrives now is pinned to `after`.
  Batch new_batch;
  add_queries(new_batch, 11);
  embed.process(new_batch);
  bm25.process(new_batch);
  dense.process(new_batch);
  fuse.process(new_batch);

  for (const Batch* batch : {&old_batch, &new_batch}) {
    const bool pinned_before = batch == &old_batch;
    const bool skips = pinned_before ? before_led : !before_led;
    for (const RequestPtr& r : batch->requests) {
      EXPECT_TRUE(r->active()) << r->status().message;
      EXPECT_EQ(r->attachment<const KbSnapshot>(kSnapshotKey).get(), (pinned_before ? before : after).get());
      EXPECT_EQ(r->attachment<std::vector<float>>(kQueryVectorKey) == nullptr, skips)
          << (pinned_before ? "pinned before the ingest" : "pinned after it") << ", agreement " << (pinned_before ? a : b);
      EXPECT_EQ(r->attachment<std::vector<ScoredDoc>>(kDenseKey) == nullptr, skips);
      ASSERT_NE(r->attachment<RetrievalHits>(kHitsKey), nullptr);
      EXPECT_FALSE(r->attachment<RetrievalHits>(kHitsKey)->hits.empty()) << r->input().query();
    }
  }
}

TEST(DenseDemand, PipelinesAndKnowledgeBasesHaveTheirOwn) {
  auto kb = topical_kb();
  auto other_kb = topical_kb();
  auto a = dense_demand_for("p/1", kb.get());
  EXPECT_EQ(a, dense_demand_for("p/1", kb.get()));
  EXPECT_NE(a, dense_demand_for("p/2", kb.get()));
  EXPECT_NE(a, dense_demand_for("p/1", other_kb.get()));
  const auto ticket = a->add_fuse(bm25_led(1.f));
  EXPECT_FALSE(a->wanted(*kb->current()));
  EXPECT_TRUE(dense_demand_for("p/2", kb.get())->wanted(*kb->current()));
  a->remove_fuse(ticket);
}

}  // namespace
}  // namespace sluice::retrieval
