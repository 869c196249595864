// PipelineLifecycle: a pipeline's RequestLifecycle (graph/request.h), the per-class accounting
// of every admitted request: time to first token, inter-token latency, end-to-end latency and
// outcome by priority class, aborts by cause, requests in flight and in service per class. On
// completion it also reports the request to the admission controllers and releases its place
// in the pipeline's InFlight count, which may end a drain's wait, or end a burst: then that
// completion releases the completed requests the live lists still hold (graph/live_lists.h)
// and, once nothing is in flight, the allocator's cached memory (graph/free_memory.h).
//
// Made once at build (registering its metrics); then called from any thread, lock-free but for
// that release, which takes each live list's lock in turn.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "graph/in_flight.h"
#include "graph/live_lists.h"
#include "graph/metrics.h"
#include "graph/request.h"

namespace sluice {

class AdmissionController;
class RequestTracer;

class PipelineLifecycle final : public RequestLifecycle {
 public:
  static constexpr std::size_t kStatusCodes = static_cast<std::size_t>(StatusCode::kInternal) + 1;
  static constexpr std::size_t kAbortCauses = static_cast<std::size_t>(AbortCause::kShutdown) + 1;

  struct ClassMetrics {
    Histogram* e2e;
    Histogram* ttft;
    Histogram* itl;
    Histogram* tokens_per_second;
    Counter* tokens;
    ShardedCount in_flight;
    ShardedCount in_service;  // from the first stage of a flow-graph node to the end of its last
    std::array<Counter*, kStatusCodes> outcomes{};  // by StatusCode value
  };

  // `controllers` (filled while the nodes are built), `in_flight` and `live` must outlive this.
  PipelineLifecycle(MetricsRegistry& metrics, const std::vector<std::string>& class_names,
                    const std::vector<AdmissionController*>& controllers, InFlight& in_flight, LiveLists& live);

  // The metrics of the request's class (the last class for an out-of-range priority).
  ClassMetrics& of(const Request& r) { return *classes_[std::min<std::size_t>(r.priority, classes_.size() - 1)]; }
  static Counter& outcome(ClassMetrics& cm, StatusCode code) { return *cm.outcomes[static_cast<std::size_t>(code)]; }

  // Completed requests' spans go to `tracer` (null: tracing off); set at build, before start.
  void set_tracer(RequestTracer* tracer) { tracer_ = tracer; }

  void on_first_token(Request& r) override;
  void on_token(Request& r, Nanos since_previous) override;
  void on_complete(Request& r) override;

 private:
  const std::vector<AdmissionController*>& controllers_;
  InFlight& in_flight_;
  LiveLists& live_;
  std::vector<std::unique_ptr<ClassMetrics>> classes_;
  std::array<Counter*, kAbortCauses> aborts_{};  // by AbortCause value; kNone unused
  RequestTracer* tracer_ = nullptr;
};

}  // namespace sluice
