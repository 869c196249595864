// OTLP trace encoding: spans as an OpenTelemetry ExportTraceServiceRequest in protobuf wire
// format, the body of an OTLP/HTTP export (Content-Type: application/x-protobuf).
//
// Written straight to the wire by field number (opentelemetry/proto/collector/trace/v1 and
// trace/v1, common/v1, resource/v1 of the OTLP specification), so no generated code is needed
// for the handful of messages a span uses; tests decode the result with OpenTelemetry's own
// generated code (tests/interop/otlp_receiver.mjs) and with protobuf's schema-less parser.
//
// One request = one ResourceSpans (service.name and the process's attributes) with one
// ScopeSpans (scope "sluice") holding every span given.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "graph/span_context.h"

namespace sluice {

// Views, not copies: a SpanRecord refers to strings that outlive its encoding (string
// literals, the pipeline's names, the FinishedRequest it was built from; request_spans.h), so
// building and encoding a span allocates little. Write string values as std::string_view
// explicitly: a bare literal would pick the bool alternative.
struct SpanAttribute {
  std::string_view key;
  std::variant<std::string_view, std::int64_t, double, bool> value;
};

struct SpanEvent {
  std::uint64_t unix_nanos = 0;
  std::string_view name;
  std::vector<SpanAttribute> attributes;
};

struct SpanRecord {
  enum class Kind : int { kInternal = 1, kServer = 2, kClient = 3, kProducer = 4, kConsumer = 5 };
  SpanContext context;  // trace id, span id, parent span id (zero: a root span)
  std::string_view name;
  Kind kind = Kind::kInternal;
  std::uint64_t start_unix_nanos = 0;
  std::uint64_t end_unix_nanos = 0;
  std::vector<SpanAttribute> attributes;
  std::vector<SpanEvent> events;
  bool error = false;          // status ERROR with `status_message`; else UNSET
  std::string_view status_message;
};

// The ExportTraceServiceRequest bytes of `spans` from service `service_name`.
std::string encode_otlp_traces(const std::string& service_name, const std::vector<SpanRecord>& spans);

}  // namespace sluice
