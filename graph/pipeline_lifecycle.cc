#include "graph/pipeline_lifecycle.h"

#include "graph/request_tracer.h"

#include "graph/admission.h"
#include "graph/free_memory.h"

namespace sluice {

PipelineLifecycle::PipelineLifecycle(MetricsRegistry& m, const std::vector<std::string>& class_names,
                                     const std::vector<AdmissionController*>& controllers, InFlight& in_flight,
                                     LiveLists& live)
    : controllers_(controllers), in_flight_(in_flight), live_(live) {
  for (const auto& c : class_names) {
    auto cm = std::make_unique<ClassMetrics>();
    Labels l{{"class", c}};
    cm->e2e = &m.histogram("sluice_e2e_request_latency_seconds", "Time from arrival to completion", l);
    cm->ttft = &m.histogram("sluice_time_to_first_token_seconds", "Time from arrival to the first answer token", l);
    cm->itl = &m.histogram("sluice_inter_token_latency_seconds", "Time between consecutive answer tokens", l);
    cm->tokens_per_second = &m.histogram("sluice_request_tokens_per_second", "Answer tokens per second of a request, first to last token", l,
                                         Histogram::exponential(1, 1.5, 30));
    cm->tokens = &m.counter("sluice_generation_tokens_total", "Answer tokens streamed to clients", l);
    for (StatusCode code : {StatusCode::kOk, StatusCode::kInvalidArgument, StatusCode::kNotFound, StatusCode::kOverloaded,
                            StatusCode::kDeadlineExceeded, StatusCode::kCancelled, StatusCode::kUnavailable, StatusCode::kInternal}) {
      cm->outcomes[static_cast<std::size_t>(code)] = &m.counter("sluice_requests_total", "Completed requests by class and outcome",
                                                                {{"class", c}, {"outcome", std::string(status_code_name(code))}});
    }
    ClassMetrics* raw = cm.get();
    m.gauge_fn("sluice_requests_in_flight", "Requests admitted and not yet completed", l,
               [raw] { return static_cast<double>(raw->in_flight.value()); });
    m.gauge_fn("sluice_queue_depth", "Admitted requests of the class waiting between stages (in flight, not in service)", l,
               [raw] { return static_cast<double>(std::max<std::int64_t>(0, raw->in_flight.value() - raw->in_service.value())); });
    classes_.push_back(std::move(cm));
  }
  for (AbortCause cause : {AbortCause::kClientDisconnect, AbortCause::kTimeout, AbortCause::kShed, AbortCause::kFailure,
                           AbortCause::kShutdown}) {
    aborts_[static_cast<std::size_t>(cause)] = &m.counter("sluice_request_aborts_total", "Requests that did not finish normally, by cause",
                                                          {{"cause", std::string(abort_cause_name(cause))}});
  }
}

void PipelineLifecycle::on_first_token(Request& r) {
  of(r).ttft->observe(nanos_to_seconds(r.first_token_at - r.arrival));
  of(r).tokens->inc();
}

void PipelineLifecycle::on_token(Request& r, Nanos since_previous) {
  ClassMetrics& cm = of(r);
  cm.itl->observe(nanos_to_seconds(since_previous));
  cm.tokens->inc();
}

void PipelineLifecycle::on_complete(Request& r) {
  ClassMetrics& cm = of(r);
  cm.e2e->observe(nanos_to_seconds(r.completed_at - r.arrival));
  outcome(cm, r.status().code).inc();
  if (!r.status().ok() && r.status().cause != AbortCause::kNone) aborts_[static_cast<std::size_t>(r.status().cause)]->inc();
  if (r.tokens_emitted > 1 && r.last_token_at > r.first_token_at) {
    cm.tokens_per_second->observe((r.tokens_emitted - 1) / nanos_to_seconds(r.last_token_at - r.first_token_at));
  }
  if (tracer_) tracer_->on_complete(r);
  cm.in_flight.add(-1);
  // Usually none or one; a controller ignores requests it did not admit.
  for (AdmissionController* a : controllers_) a->on_complete(r, r.completed_at);
  // A burst's end: nothing else would drop the envelopes its last requests left listed, since
  // only intake prunes. This completion pays one check per listed request, a few times a burst,
  // and at the last (nothing in flight) a walk of the allocator's heaps.
  const InFlight::BurstEnd burst = in_flight_.leave();
  if (burst == InFlight::BurstEnd::kNone) return;
  live_.release_completed();
  if (burst == InFlight::BurstEnd::kIdle) return_free_memory();
}

}  // namespace sluice
