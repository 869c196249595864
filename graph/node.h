// Node: the contract between the graph runtime and a node kind's implementation.
//
// The runtime owns the tbb::flow nodes; an implementation only sees batches. Before calling an
// implementation the runtime completes requests that are cancelled or past their deadline
// (504), stamps the trace and records stage metrics, so implementations only check
// `request->active()` and do their work.
//
// Two shapes:
//  - SyncNode::process runs on a TBB worker and returns when the batch is ready for the next
//    stage. The runtime calls it concurrently up to the node's `concurrency`.
//  - AsyncNode::start_batch hands the batch to an engine with its own threads (generation,
//    timers, batchers); the engine calls `done(batch)` exactly once per start_batch when the
//    batch may move on, or `done(nullptr)` when it absorbed the batch and emits nothing for it
//    (a batcher that merged its requests into another batch made with NodeContext::make_batch
//    and emitted through another call's `done`). The runtime wires this through
//    tbb::flow::async_node so the graph knows work is outstanding.
// A failure for one request is reported with request->complete(Status::Error(...)); a
// thrown exception fails every still-active request of the batch with kInternal and a message
// naming the node. Either way the batch moves on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/batch.h"

namespace sluice {

class AdmissionController;
class CacheTier;
class Clock;
class DocumentStore;
class MetricsRegistry;

// What a node gets from the runtime when it is built.
struct NodeContext {
  std::string name;            // the node's name in the pipeline file
  std::string pipeline_name;
  // The node's index in the pipeline: the trace slot where the runtime records a degradation
  // (Request::trace().degradation(stage_index)).
  std::uint16_t stage_index = 0;
  // For a kind that supports shrink (NodeKind::on_shrink): the fraction of its usual work to do
  // for a request whose trace says kShrink at stage_index. 1 when the node declares no shrink.
  double shrink_factor = 1;
  // 16 hex digits of a hash of the pipeline's nodes and edges as validated (deterministic
  // protobuf bytes; sources left out, so instances listening on different ports agree): it
  // changes with any setting that can change an answer (a prompt template, a model path, a
  // knob), which is why the answer caches put it in their keys.
  std::string pipeline_fingerprint;
  Clock* clock = nullptr;
  MetricsRegistry* metrics = nullptr;
  // Directory of the pipeline file, for resolving relative paths in configs.
  std::string base_dir;
  // Makes an empty batch to emit from this node (batchers, splitters): a fresh id and the
  // bookkeeping for the part of the graph below this node.
  std::function<BatchPtr()> make_batch;
  // The pipeline's priority classes, most urgent first (Request::priority indexes them).
  std::vector<std::string> class_names;
  // Installs an intake-time admission controller (graph/admission.h) for the sources upstream
  // of this node; the node keeps ownership. Call it from the node's factory only. Throws
  // std::invalid_argument when a source would get two controllers.
  std::function<void(AdmissionController*)> install_admission;
};

class Node {
 public:
  virtual ~Node() = default;
  // Called once after the whole graph is built, before the first request.
  virtual void start() {}
  // Called once at shutdown after intake stopped: finish or release outstanding work promptly.
  virtual void stop() {}
  // Readiness for /readyz: false while e.g. an index is still loading.
  virtual bool ready() const { return true; }
  // The knowledge base this node reads, for connectors that write documents into it
  // (graph/document_store.h); null for nodes that read none. Nodes reading the same knowledge
  // base return the same store.
  virtual std::shared_ptr<DocumentStore> document_store() const { return nullptr; }
  // True for a node that answers RequestInput::Kind::kEmbed requests (the `embeddings` node), so
  // POST /v1/embeddings is refused up front by pipelines that have none.
  virtual bool answers_embeddings() const { return false; }
  // The cache this node keeps (graph/cache_tier.h), for GET and DELETE /v1/cache; null when none.
  virtual CacheTier* cache_tier() { return nullptr; }
};

class SyncNode : public Node {
 public:
  virtual void process(Batch& batch) = 0;
};

class AsyncNode : public Node {
 public:
  using Done = std::function<void(BatchPtr)>;
  virtual void start_batch(BatchPtr batch, Done done) = 0;
};

}  // namespace sluice
