// Graph node adapters over the retrieval engine: thin, they move data between requests'
// attachments and the engine (kb/retriever.h). Attachments (keys in kRetrievalKeys):
//   retrieval.snapshot  shared_ptr<const KbSnapshot>  pinned once per request (embed, or
//                         bm25 when there is no embed), so every branch reads one snapshot
//   retrieval.query_vector shared_ptr<std::vector<float>>    embed
//   retrieval.bm25 / retrieval.dense  shared_ptr<std::vector<ScoredDoc>>  the two branches
//   retrieval.hits        shared_ptr<RetrievalHits>          fuse, rerank
// Facts (graph/node_registry.h): embed adds "query.vector"; dense needs it and adds
// "hits.dense"; bm25 adds "hits.bm25"; fuse needs both and adds "hits"; rerank needs "hits";
// answer needs "hits" and adds "answer".
// Whole batches go to the engine at once where that pays: embed embeds every active query of a
// batch in one embedder call, dense searches them as one batch.
// Every node exposes its knowledge base as the pipeline's DocumentStore (Node::document_store),
// which is how POST /v1/documents finds it.
// Thread-safety: process() runs concurrently; nodes hold only immutable config and a shared
// KnowledgeBase (itself thread-safe).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "graph/node.h"
#include "graph/schema.h"
#include "nodes/retrieval/kb/extractive_answer.h"
#include "nodes/retrieval/kb/knowledge_base.h"
#include "nodes/retrieval/kb/retriever.h"
#include "nodes/retrieval/node/dense_demand.h"
#include "nodes/retrieval/node/path_agreement_watch.h"
#include "nodes/retrieval/node/knowledge_base_documents.h"

namespace sluice::retrieval {

inline constexpr const char* kSnapshotKey = "retrieval.snapshot";
inline constexpr const char* kQueryVectorKey = "retrieval.query_vector";
inline constexpr const char* kBm25Key = "retrieval.bm25";
inline constexpr const char* kDenseKey = "retrieval.dense";
inline constexpr const char* kHitsKey = "retrieval.hits";

struct RetrievalHits {
  QueryType type = QueryType::kNaturalLanguage;
  FusionParams fusion;
  std::vector<RetrievedChunk> hits;
};

// The request's pinned snapshot, pinning the knowledge base's current one if none yet.
std::shared_ptr<const KbSnapshot> pinned_snapshot(Request& request, const KnowledgeBase& kb);

// What every retrieval node shares: the knowledge base it reads, exposed to connectors as the
// pipeline's document store (knowledge_base_documents.h) so POST /v1/documents writes into it.
class KnowledgeBaseNode : public SyncNode {
 public:
  explicit KnowledgeBaseNode(std::shared_ptr<KnowledgeBase> kb) : kb_(std::move(kb)) {}
  std::shared_ptr<DocumentStore> document_store() const override { return documents_of(kb_); }

 protected:
  std::shared_ptr<KnowledgeBase> kb_;
};

// `demand` (may be null: always embed): the pipeline's fuse nodes (dense_demand.h); a request
// pinned to a snapshot none of them reads the dense path on is pinned but not embedded.
class EmbedNode final : public KnowledgeBaseNode {
 public:
  explicit EmbedNode(std::shared_ptr<KnowledgeBase> kb, std::shared_ptr<const DenseDemand> demand = nullptr)
      : KnowledgeBaseNode(std::move(kb)), demand_(std::move(demand)) {}
  void process(Batch& batch) override;

 private:
  std::shared_ptr<const DenseDemand> demand_;
};

// `demand` (may be null: always search): as EmbedNode's; a request no fuse node reads dense
// hits for is passed on without them.
class DenseNode final : public KnowledgeBaseNode {
 public:
  DenseNode(std::shared_ptr<KnowledgeBase> kb, std::size_t candidates, Clock* clock,
            std::shared_ptr<const DenseDemand> demand = nullptr)
      : KnowledgeBaseNode(std::move(kb)), candidates_(candidates), clock_(clock), demand_(std::move(demand)) {}
  // Feeds `metrics` from the knowledge base's GPU searches (register_nodes.cc) until the node
  // goes, since the snapshots outlive it.
  void attach_gpu_metrics(BatchObserver::Fn metrics) { gpu_ticket_ = kb_->search_observer()->attach(std::move(metrics)); }
  ~DenseNode() override {
    if (gpu_ticket_ != 0) kb_->search_observer()->detach(gpu_ticket_);
  }
  void process(Batch& batch) override;

 private:
  std::size_t candidates_;
  Clock* clock_;
  std::shared_ptr<const DenseDemand> demand_;
  std::uint64_t gpu_ticket_ = 0;
};

class Bm25Node final : public KnowledgeBaseNode {
 public:
  Bm25Node(std::shared_ptr<KnowledgeBase> kb, std::size_t candidates)
      : KnowledgeBaseNode(std::move(kb)), candidates_(candidates) {}
  void process(Batch& batch) override;

 private:
  std::size_t candidates_;
};

class FuseNode final : public KnowledgeBaseNode {
 public:
  // `stage_index`, `shrink_factor`: NodeContext's (a shrunk request keeps top_k times the
  // factor, at least 1: fewer passages for the stages after it).
  // `name`, `metrics` (may be null): for the path-agreement gauges and log lines
  // (path_agreement_watch.h); the knowledge base's current snapshot is reported at once.
  // `demand` (may be null): the pipeline's DenseDemand, told this node's options while it lives.
  // Led by BM25 at weight 1, the node ranks BM25's candidates whether or not dense hits came.
  FuseNode(std::shared_ptr<KnowledgeBase> kb, RetrieveOptions options, std::uint16_t stage_index = 0, double shrink_factor = 1,
           std::string name = "fuse", MetricsRegistry* metrics = nullptr, std::shared_ptr<DenseDemand> demand = nullptr)
      : KnowledgeBaseNode(std::move(kb)),
        options_(options),
        shrunk_top_k_(std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(options.top_k) * shrink_factor))),
        stage_index_(stage_index),
        watch_(std::move(name), metrics),
        demand_(std::move(demand)) {
    if (const auto snapshot = kb_->current()) watch_.observe(*snapshot, options_);
    if (demand_) demand_ticket_ = demand_->add_fuse(options_);
  }
  ~FuseNode() override {
    if (demand_) demand_->remove_fuse(demand_ticket_);
  }
  void process(Batch& batch) override;

 private:
  RetrieveOptions options_;
  std::size_t shrunk_top_k_;
  std::uint16_t stage_index_;
  PathAgreementWatch watch_;
  std::shared_ptr<DenseDemand> demand_;
  std::uint64_t demand_ticket_ = 0;
};

class RerankNode final : public KnowledgeBaseNode {
 public:
  // `stage_index`, `shrink_factor`: NodeContext's (a shrunk request's chunks rescored: depth
  // times the factor, at least 1).
  RerankNode(std::shared_ptr<KnowledgeBase> kb, std::size_t depth, float weight, std::uint16_t stage_index = 0,
             double shrink_factor = 1)
      : KnowledgeBaseNode(std::move(kb)),
        depth_(depth),
        shrunk_depth_(std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(depth) * shrink_factor))),
        weight_(weight),
        stage_index_(stage_index) {}
  void process(Batch& batch) override;

 private:
  std::size_t depth_;
  std::size_t shrunk_depth_;
  float weight_;
  std::uint16_t stage_index_;
};

// Answers and completes each request: for RequestInput::Kind::kRetrieve a "retrieval" event
// (JSON: ranked chunks with each path's score and rank); otherwise the extractive answer
// streamed piece by piece, then its sources as AnswerOptions::citations says.
class AnswerNode final : public KnowledgeBaseNode {
 public:
  AnswerNode(std::shared_ptr<KnowledgeBase> kb, AnswerOptions options, Clock* clock)
      : KnowledgeBaseNode(std::move(kb)), options_(options), clock_(clock) {}
  void process(Batch& batch) override;

 private:
  AnswerOptions options_;
  Clock* clock_;
};

// The engine options a `fuse` node config stands for (also what `sluice eval FILE` should use,
// so evaluation measures the pipeline's own settings), with its `profile` file (relative to
// `base_dir`, the pipeline file's directory) applied. Throws std::invalid_argument on an unknown
// method or a profile that cannot be read (naming the file and field).
RetrieveOptions retrieve_options_from(const FuseConfig& config, const std::string& base_dir = "");

// JSON text of ranked chunks, as /v1/retrieve returns them.
std::string hits_json(const RetrievalHits& hits, const KbSnapshot& gen);

}  // namespace sluice::retrieval
