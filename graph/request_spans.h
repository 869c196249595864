// request_spans: the OpenTelemetry spans of one completed request, built from what the runtime
// already stamped (graph/trace.h), so tracing adds no work on the request's path.
//
// One root span (kind SERVER, named after the pipeline, child of the incoming traceparent's
// span when there was one) from arrival to completion, and under it one INTERNAL span per stage
// the request passed, named after the stage, from when the stage's batch was ready (queue wait
// included) to when the stage handed the request on (the completing stage: to completion),
// with an event "service.start" where the wait ended. Attributes:
//  - root: sluice.pipeline, sluice.priority_class, sluice.request_id, sluice.status (the
//    StatusCode name), sluice.degraded; status ERROR with the message when it failed;
//  - stage: sluice.stage.kind, sluice.stage.queue_seconds, sluice.stage.service_seconds,
//    sluice.batch.size, sluice.degradation (skip|shrink) when degraded, sluice.cache.hit on
//    the answer caches (response_cache, semantic_cache);
//  - a `generate` stage also carries the GenAI semantic conventions: gen_ai.operation.name
//    (chat|text_completion), gen_ai.system "sluice", gen_ai.request.model,
//    gen_ai.request.max_tokens (when the client set it), gen_ai.usage.input_tokens and
//    gen_ai.usage.output_tokens.
// Stage span ids are drawn here; the root's is the request's own (Request::span).
//
// Split in two so the request's completing thread does only a copy: finished_request() takes
// what the spans need from the request (its stamps, status, usage, a few strings), and
// request_spans() builds the spans from that copy later, on the exporter's thread.
#pragma once

#include <string>
#include <vector>

#include "graph/clock.h"
#include "graph/otlp_encoding.h"
#include "graph/request.h"

namespace sluice {

struct SpanNaming {
  std::string pipeline;
  const std::vector<std::string>* class_names = nullptr;  // by priority index
  const std::vector<std::string>* stage_names = nullptr;  // by stage index
  const std::vector<std::string>* stage_kinds = nullptr;  // by stage index
};

// What a completed request's spans are made of.
struct FinishedRequest {
  SpanContext span;
  std::vector<StageStamp> stamps;
  Nanos arrival = 0;
  Nanos completed_at = 0;
  StatusCode code = StatusCode::kOk;
  std::string status_message;
  std::uint8_t priority = 0;
  std::string request_id;  // the external id (chatcmpl-...), else the number
  RequestInput::Kind kind = RequestInput::Kind::kChat;
  std::string model;
  int max_tokens = -1;
  Usage usage;
};

FinishedRequest finished_request(const Request& request);

// `unix_offset`: add to a Clock time to get Unix nanoseconds (wall clock at export minus the
// runtime clock at export). The spans refer to `request`'s strings and `naming`'s: both must
// outlive them (their encoding).
std::vector<SpanRecord> request_spans(const FinishedRequest& request, const SpanNaming& naming, Nanos unix_offset);

}  // namespace sluice
