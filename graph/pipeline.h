// Pipeline: a validated pipeline spec running as a tbb::flow::graph.
//
// Built once from a LoadedSpec and a NodeRegistry, then started. Connectors put requests in
// through `submit(source, request)`; the answer leaves through the request's ResponseSink.
// The pipeline guarantees that every submitted request completes exactly once: rejected at
// intake (429 when `runtime.max_in_flight` requests are already inside or an admission
// controller (graph/admission.h) sheds it, 503 when draining),
// failed by a node, timed out, cancelled, answered, or abandoned at shutdown.
//
// Lifecycle: build -> start -> submit... -> drain (stop intake, wait up to the drain timeout,
// abandon the rest, stop nodes, wait for the graph) -> destroy. submit() is thread-safe and
// never blocks; drain() is called once, from one thread.
//
// This header is the interface only. The builder (graph/pipeline_build.cc: topology to plan,
// graph/pipeline_plan.h; nodes; oneTBB objects, graph/pipeline_flow.h) and the runtime
// (graph/pipeline.cc: submit, completion, drain) share the state in graph/pipeline_state.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/clock.h"
#include "graph/metrics.h"
#include "graph/node_registry.h"
#include "graph/request.h"
#include "graph/spec_loader.h"

namespace sluice {

class AdmissionController;
class DocumentStore;

struct DrainReport {
  std::size_t completed_during_drain = 0;
  std::vector<std::uint64_t> abandoned;   // ids of requests still in flight at the deadline
  Nanos waited = 0;
};

class Pipeline {
 public:
  struct Options {
    Clock* clock = &SteadyClock::instance();
    MetricsRegistry* metrics = nullptr;    // required
  };

  // Builds the graph. Throws SpecErrors (file:line:column messages) when a node factory
  // refuses its config; the spec must already have passed validate_spec().
  static std::unique_ptr<Pipeline> build(const LoadedSpec& spec, const NodeRegistry& registry, Options options);
  ~Pipeline();

  void start();

  // Puts a request into the graph at `source` (a source name of the spec). Sets the
  // request's id-derived fields that are still unset (arrival, deadline). Returns the
  // admission status; when not ok the request has already been completed with it.
  Status submit(const std::string& source, const RequestPtr& request);

  // With tracing on (TracingSpec.endpoint): the span a request with this incoming traceparent
  // gets (a child of it, or a sampled-or-not root); nullopt with tracing off. submit() calls it
  // for requests that come without a span; a connector that must name the span before it
  // submits (the HTTP source's response headers) calls it itself and sets Request::span.
  std::optional<SpanContext> start_span(std::string_view incoming_traceparent) const;

  // Stops intake and waits for in-flight requests; see the header comment.
  DrainReport drain();
  DrainReport drain(Nanos timeout);

  std::uint64_t next_request_id();
  // Index of a priority class by name, or -1.
  int class_index(std::string_view name) const;
  const std::vector<std::string>& class_names() const;
  int default_class() const;
  Nanos default_deadline() const;

  bool draining() const;
  bool ready() const;
  // The admission controllers' state per source, a JSON object for /readyz detail
  // (e.g. {"api":{"shed_level":1,...}}); "{}" when no source has one.
  std::string admission_detail() const;
  // The controller consulted at `source`, or null; a queue-fed connector installs its
  // deferral hook through it (AdmissionController::set_deferral_hook).
  AdmissionController* admission(const std::string& source) const;
  // The distinct knowledge bases the nodes read (Node::document_store), in node order; empty
  // when none. `POST /v1/documents` writes through them.
  std::vector<std::shared_ptr<DocumentStore>> document_stores() const;
  // Whether any node answers embeddings requests (Node::answers_embeddings).
  bool answers_embeddings() const;
  // The caches the pipeline's nodes keep (Node::cache_tier), in node order.
  std::vector<CacheTier*> cache_tiers() const;
  std::size_t in_flight() const;
  // Envelopes the intake threads' live lists hold: in flight, or completed and not yet
  // pruned (at most about twice what each thread had in flight). Takes each list's lock.
  std::size_t live_list_entries() const;
  const std::string& name() const;
  const std::vector<std::string>& stage_names() const;
  Clock& clock() const;
  MetricsRegistry& metrics() const;

  struct State;  // graph/pipeline_state.h

 private:
  explicit Pipeline(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace sluice
