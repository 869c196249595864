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
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
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

  // Stops intake and waits for in-flight requests; see the header comment.
  DrainReport drain();
  DrainReport drain(Nanos timeout);

  std::uint64_t next_request_id() { return next_id_.fetch_add(1, std::memory_order_relaxed); }
  // Index of a priority class by name, or -1.
  int class_index(std::string_view name) const;
  const std::vector<std::string>& class_names() const { return class_names_; }
  int default_class() const { return default_class_; }
  Nanos default_deadline() const { return default_deadline_; }

  bool draining() const { return draining_.load(std::memory_order_acquire); }
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
  std::size_t in_flight() const { return in_flight_.load(std::memory_order_acquire); }
  // Envelopes the intake threads' live lists hold: in flight, or completed and not yet
  // pruned (at most about twice what each thread had in flight). Takes each list's lock.
  std::size_t live_list_entries() const;
  const std::string& name() const { return name_; }
  const std::vector<std::string>& stage_names() const { return stage_names_; }
  Clock& clock() const { return *clock_; }
  MetricsRegistry& metrics() const { return *metrics_; }

  struct Impl;  // the tbb graph and node wrappers (pipeline.cc)

 private:
  Pipeline() = default;
  class Lifecycle;
  void on_request_complete(Request& request);

  std::string name_;
  Clock* clock_ = nullptr;
  MetricsRegistry* metrics_ = nullptr;
  std::vector<std::string> class_names_;
  int default_class_ = 0;
  Nanos default_deadline_ = 60 * kNanosPerSecond;
  Nanos drain_timeout_ = 30 * kNanosPerSecond;
  std::size_t max_in_flight_ = 4096;
  std::vector<std::string> stage_names_;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<Lifecycle> lifecycle_;
  std::vector<AdmissionController*> controllers_;  // installed by nodes at build; borrowed

  std::atomic<std::uint64_t> next_id_{1};
  std::atomic<std::uint64_t> next_batch_id_{1};
  std::atomic<std::size_t> in_flight_{0};
  std::atomic<bool> draining_{false};
  std::atomic<bool> started_{false};

  // Live requests, for abandoning at shutdown: one list per intake thread (indexed like the
  // metric rows, graph/metric_slot.h), touched only by that thread and by drain, so neither
  // intake nor completion shares a lock or a cache line with the other. A list holds its
  // requests (RequestPtr) and drops the completed ones lazily: each submit checks the next
  // kPrunePerSubmit entries, so a list stays within about twice the requests its thread has in
  // flight, and the intake thread, which allocated a request, usually frees it too.
  static constexpr std::size_t kPrunePerSubmit = 2;
  struct alignas(64) LiveList {
    mutable std::mutex mu;  // uncontended but for drain and threads sharing the overflow row
    std::vector<RequestPtr> requests;
    std::size_t cursor = 0;
  };
  static void prune(LiveList& list, std::size_t checks);
  std::unique_ptr<LiveList[]> live_;
  std::mutex drain_mu_;
  std::condition_variable drained_cv_;
};

}  // namespace sluice
