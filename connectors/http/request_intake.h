// RequestIntake: what the HTTP source needs from the pipeline it feeds.
//
// It is the slice of sluice::Pipeline's interface that a connector uses (submit, priority
// classes, readiness, ids, clock, metrics), so the HTTP layer can be tested against a
// scripted intake that decides exactly when tokens arrive, and runs against the real
// pipeline through `intake_for(Pipeline&)`.
//
// Thread-safety: every method may be called from any thread (Pipeline's guarantees).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/cache_tier.h"
#include "graph/clock.h"
#include "graph/document_store.h"
#include "graph/metrics.h"
#include "graph/request.h"
#include "graph/span_context.h"
#include "graph/status.h"

namespace sluice {
class Pipeline;
}

namespace sluice::http {

class RequestIntake {
 public:
  virtual ~RequestIntake() = default;
  // Pipeline::submit: when not ok, the request has already been completed with the status.
  virtual Status submit(const std::string& source, const RequestPtr& request) = 0;
  virtual int class_index(std::string_view name) const = 0;  // -1 when unknown
  virtual const std::vector<std::string>& class_names() const = 0;
  virtual bool draining() const = 0;
  virtual bool ready() const = 0;
  virtual std::uint64_t next_request_id() = 0;
  virtual const std::vector<std::string>& stage_names() const = 0;
  virtual Clock& clock() const = 0;
  virtual MetricsRegistry& metrics() const = 0;
  // Admission state for /readyz (e.g. the load-shedding level), a JSON object; Pipeline's
  // admission_detail().
  virtual std::string admission_detail() const { return "{}"; }
  // The knowledge bases the pipeline's nodes read (Pipeline::document_stores()), which
  // POST /v1/documents writes through; empty when none.
  virtual std::vector<std::shared_ptr<DocumentStore>> document_stores() const { return {}; }
  // Whether a node of the pipeline answers POST /v1/embeddings (Pipeline::answers_embeddings()).
  virtual bool answers_embeddings() const { return false; }
  // Pipeline::start_span: the span a request gets when tracing is on; nullopt when off.
  virtual std::optional<SpanContext> start_span(std::string_view incoming_traceparent) const {
    (void)incoming_traceparent;
    return std::nullopt;
  }
  // The pipeline's caches (Pipeline::cache_tiers()), for GET and DELETE /v1/cache.
  virtual std::vector<CacheTier*> cache_tiers() const { return {}; }
};

// Adapts a pipeline (which must outlive the returned intake).
std::unique_ptr<RequestIntake> intake_for(Pipeline& pipeline);

}  // namespace sluice::http
