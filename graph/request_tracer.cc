#include "graph/request_tracer.h"

namespace sluice {

SpanContext RequestTracer::start_span(std::string_view incoming) const {
  if (auto parent = parse_traceparent(incoming)) return SpanContext::child_of(*parent);
  return SpanContext::root(sample_ratio_ > 0 && random_unit() < sample_ratio_);
}

void RequestTracer::on_complete(const Request& r) {
  if (!r.span.valid()) return;
  if (!r.span.sampled && r.status().ok() && !r.trace().degraded()) return;
  exporter_->add(r);
}

}  // namespace sluice
