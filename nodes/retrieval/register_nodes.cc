// Registers the retrieval node kinds: embed, dense, bm25, fuse, rerank, answer.
#include <filesystem>
#include <stdexcept>

#include "graph/node_registry.h"
#include "graph/proto_duration.h"
#include "nodes/retrieval/dense/vector_device.h"
#include "nodes/retrieval/kb/shared_knowledge_bases.h"
#include "nodes/retrieval/node/retrieval_nodes.h"

namespace sluice {
namespace {

using retrieval::shared_knowledge_base;

std::shared_ptr<retrieval::KnowledgeBase> open_kb(const std::string& dir, const NodeContext& ctx) {
  return retrieval::node_knowledge_base(dir, ctx.base_dir);
}

// What the pipeline's fuse nodes read of the dense path over `kb` (node/dense_demand.h), shared
// by its embed, dense and fuse nodes.
std::shared_ptr<retrieval::DenseDemand> dense_demand(const NodeContext& ctx, const retrieval::KnowledgeBase& kb) {
  return retrieval::dense_demand_for(ctx.pipeline_name + "/" + ctx.pipeline_fingerprint, &kb);
}

// The GPU index's launches, as the dense node's metrics (docs/operations.md).
retrieval::BatchObserver::Fn gpu_search_metrics(MetricsRegistry& metrics, const std::string& node) {
  const Labels labels{{"node", node}};
  Counter& launches = metrics.counter("sluice_dense_gpu_launches_total", "Searches of the GPU index (one launch each)", labels);
  Counter& queries = metrics.counter("sluice_dense_gpu_queries_total", "Queries the GPU index searched", labels);
  Histogram& per_launch = metrics.histogram("sluice_dense_gpu_launch_queries",
                                            "Queries per GPU index launch (concurrent searches merged)", labels,
                                            {1, 2, 4, 8, 16, 32, 64, 128, 256});
  Histogram& seconds = metrics.histogram("sluice_dense_gpu_launch_seconds", "Duration of one GPU index search", labels);
  return [launches = &launches, queries = &queries, per_launch = &per_launch, seconds = &seconds](std::size_t n,
                                                                                                std::size_t, double s) {
    launches->inc();
    queries->inc(static_cast<double>(n));
    per_launch->observe(static_cast<double>(n));
    seconds->observe(s);
  };
}

retrieval::CoalescerOptions coalescer_options(const DenseConfig& dense) {
  retrieval::CoalescerOptions o;
  o.window = duration_nanos(dense.coalesce_window());
  o.max_queries = dense.coalesce_max_queries();
  return o;
}

}  // namespace

void register_retrieval_nodes(NodeRegistry& registry) {
  registry.add(NodeKind{
      .kind = "embed",
      .summary = "Pins the request to the knowledge base's current snapshot and embeds its query (batched).",
      .needs = {"request"},
      .adds = {"query.vector"},
      .async = false,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) -> std::unique_ptr<Node> {
        auto kb = open_kb(spec.embed().knowledge_base(), ctx);
        if (!spec.embed().model().empty()) {
          try {
            kb->set_dense_model(spec.embed().model());
          } catch (const std::exception& e) {
            throw std::invalid_argument(std::string("model: ") + e.what());
          }
        }
        auto demand = dense_demand(ctx, *kb);
        return std::make_unique<retrieval::EmbedNode>(std::move(kb), std::move(demand));
      },
  });
  registry.add(NodeKind{
      .kind = "dense",
      .summary = "Dense candidates: nearest chunks to the query vector (exact or HNSW).",
      .needs = {"query.vector"},
      .adds = {"hits.dense"},
      .async = false,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) -> std::unique_ptr<Node> {
        auto kb = open_kb(spec.dense().knowledge_base(), ctx);
        bool on_gpu = false;
        try {
          const std::string device = retrieval::resolve_vector_device(spec.dense().device());
          kb->set_vector_device(device, coalescer_options(spec.dense()));
          on_gpu = retrieval::is_cuda_vector_device(device);
        } catch (const std::exception& e) {
          throw std::invalid_argument(std::string("device: ") + e.what());
        }
        auto demand = dense_demand(ctx, *kb);
        auto node = std::make_unique<retrieval::DenseNode>(std::move(kb), spec.dense().candidates(), ctx.clock, std::move(demand));
        if (on_gpu && ctx.metrics != nullptr) node->attach_gpu_metrics(gpu_search_metrics(*ctx.metrics, spec.name()));
        return node;
      },
  });
  registry.add(NodeKind{
      .kind = "bm25",
      .summary = "BM25 candidates from the knowledge base's inverted index.",
      .needs = {"request"},
      .adds = {"hits.bm25"},
      .async = false,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) -> std::unique_ptr<Node> {
        return std::make_unique<retrieval::Bm25Node>(open_kb(spec.bm25().knowledge_base(), ctx), spec.bm25().candidates());
      },
  });
  registry.add(NodeKind{
      .kind = "fuse",
      .summary = "Fuses BM25 and dense candidates by query type (weighted or RRF, with hybrid feedback).",
      .needs = {"hits.bm25", "hits.dense"},
      .adds = {"hits"},
      .async = false,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) -> std::unique_ptr<Node> {
        auto kb = open_kb(spec.fuse().knowledge_base(), ctx);
        auto options = retrieval::retrieve_options_from(spec.fuse(), ctx.base_dir);
        auto demand = dense_demand(ctx, *kb);
        return std::make_unique<retrieval::FuseNode>(std::move(kb), std::move(options), ctx.stage_index, ctx.shrink_factor,
                                                     spec.name(), ctx.metrics, std::move(demand));
      },
  });
  registry.add(NodeKind{
      .kind = "rerank",
      .summary = "Rescores the top fused chunks by query-term proximity and phrase matches.",
      .needs = {"hits"},
      .adds = {},
      .async = false,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) -> std::unique_ptr<Node> {
        return std::make_unique<retrieval::RerankNode>(open_kb(spec.rerank().knowledge_base(), ctx), spec.rerank().depth(),
                                                       spec.rerank().weight(), ctx.stage_index, ctx.shrink_factor);
      },
  });
  registry.add(NodeKind{
      .kind = "answer",
      .summary = "Streams an extractive, cited answer (or the ranked chunks for /v1/retrieve).",
      .needs = {"hits"},
      .adds = {"answer"},
      .async = false,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) -> std::unique_ptr<Node> {
        retrieval::AnswerOptions o;
        o.passages = spec.answer().passages();
        o.max_sentences = spec.answer().max_sentences();
        o.citations = citation_mode(spec.answer().citations());
        return std::make_unique<retrieval::AnswerNode>(open_kb(spec.answer().knowledge_base(), ctx), o, ctx.clock);
      },
  });
  registry.set_degradations("dense", "fuse ranks the BM25 branch alone", "");
  registry.set_degradations("bm25", "fuse ranks the dense branch alone", "");
  registry.set_degradations("fuse", "", "keeps top_k times factor of the fused chunks (at least 1): fewer passages after it");
  registry.set_degradations("rerank", "the fused order stands", "rescores depth times factor of the top chunks (at least 1)");
}

}  // namespace sluice
