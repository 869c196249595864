// RequestTracer: a pipeline's tracing (TracingSpec): gives each request its span context at
// intake and hands the spans of the requests worth keeping to the exporter at completion.
//
// Contract:
//  - start_span(incoming): a child of the incoming traceparent's span (its sampled flag is
//    followed), else a new root whose sampled flag is a draw against sample_ratio;
//  - on_complete(r): exports r's spans (graph/request_spans.h) when r.span is sampled, or when
//    r failed or was degraded (kept whatever the draw: those are the traces worth reading);
//    otherwise nothing. Runs on the completing thread, where it only copies the request's
//    stamps (finished_request); building the spans and the export are the exporter's.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/clock.h"
#include "graph/request.h"
#include "graph/request_spans.h"
#include "graph/span_context.h"
#include "graph/span_exporter.h"

namespace sluice {

class RequestTracer {
 public:
  RequestTracer(std::unique_ptr<SpanExporter> exporter, double sample_ratio)
      : exporter_(std::move(exporter)), sample_ratio_(sample_ratio) {}

  SpanContext start_span(std::string_view incoming_traceparent) const;
  void on_complete(const Request& r);

 private:
  std::unique_ptr<SpanExporter> exporter_;
  const double sample_ratio_;
};

}  // namespace sluice
