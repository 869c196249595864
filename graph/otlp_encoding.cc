#include "graph/otlp_encoding.h"

#include <cstring>

namespace sluice {
namespace {

// Protobuf wire types.
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

std::size_t varint_size(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
void varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void tag(std::string& out, int field, int wire_type) { varint(out, static_cast<std::uint64_t>(field) << 3 | wire_type); }
// A length-delimited field's header; its `n` bytes of content follow.
void open_field(std::string& out, int field, std::size_t n) {
  tag(out, field, kLengthDelimited);
  varint(out, n);
}
void bytes_field(std::string& out, int field, const void* data, std::size_t n) {
  open_field(out, field, n);
  out.append(static_cast<const char*>(data), n);
}
void string_field(std::string& out, int field, std::string_view s) { bytes_field(out, field, s.data(), s.size()); }
void fixed64_field(std::string& out, int field, std::uint64_t v) {
  tag(out, field, kFixed64);
  for (int i = 0; i < 8; ++i) out += static_cast<char>(v >> (8 * i));  // little-endian
}
void fixed32_field(std::string& out, int field, std::uint32_t v) {
  tag(out, field, kFixed32);
  for (int i = 0; i < 4; ++i) out += static_cast<char>(v >> (8 * i));
}
void varint_field(std::string& out, int field, std::uint64_t v) {
  tag(out, field, kVarint);
  varint(out, v);
}

// Sizes of the small messages, so they are written in place (no temporary per message); the
// tags of fields 1-15 take one byte.
std::size_t delimited_size(std::size_t n) { return 1 + varint_size(n) + n; }

// common.v1.AnyValue: string_value 1, bool_value 2, int_value 3, double_value 4.
std::size_t any_value_size(const SpanAttribute& a) {
  if (const auto* s = std::get_if<std::string_view>(&a.value)) return delimited_size(s->size());
  if (const auto* i = std::get_if<std::int64_t>(&a.value)) return 1 + varint_size(static_cast<std::uint64_t>(*i));
  if (std::holds_alternative<bool>(a.value)) return 2;
  return 9;
}
void any_value(std::string& out, const SpanAttribute& a) {
  if (const auto* s = std::get_if<std::string_view>(&a.value)) {
    string_field(out, 1, *s);
  } else if (const auto* b = std::get_if<bool>(&a.value)) {
    varint_field(out, 2, *b ? 1 : 0);
  } else if (const auto* i = std::get_if<std::int64_t>(&a.value)) {
    varint_field(out, 3, static_cast<std::uint64_t>(*i));  // int64: two's complement varint
  } else {
    std::uint64_t bits;
    const double d = std::get<double>(a.value);
    std::memcpy(&bits, &d, sizeof bits);
    fixed64_field(out, 4, bits);
  }
}

// common.v1.KeyValue: key 1, value 2.
std::size_t key_value_size(const SpanAttribute& a) { return delimited_size(a.key.size()) + delimited_size(any_value_size(a)); }
void key_values(std::string& out, int field, const std::vector<SpanAttribute>& attributes) {
  for (const SpanAttribute& a : attributes) {
    open_field(out, field, key_value_size(a));
    string_field(out, 1, a.key);
    open_field(out, 2, any_value_size(a));
    any_value(out, a);
  }
}

// trace.v1.Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6,
// start_time_unix_nano 7, end_time_unix_nano 8, attributes 9, events 11, status 15, flags 16.
void span(std::string& out, const SpanRecord& s) {
  bytes_field(out, 1, s.context.trace_id.data(), s.context.trace_id.size());
  bytes_field(out, 2, s.context.span_id.data(), s.context.span_id.size());
  if (s.context.has_parent()) bytes_field(out, 4, s.context.parent_span_id.data(), s.context.parent_span_id.size());
  string_field(out, 5, s.name);
  varint_field(out, 6, static_cast<std::uint64_t>(s.kind));
  fixed64_field(out, 7, s.start_unix_nanos);
  fixed64_field(out, 8, s.end_unix_nanos);
  key_values(out, 9, s.attributes);
  for (const SpanEvent& e : s.events) {  // Span.Event: time_unix_nano 1, name 2, attributes 3
    std::size_t n = 9 + delimited_size(e.name.size());
    for (const SpanAttribute& a : e.attributes) n += delimited_size(key_value_size(a));
    open_field(out, 11, n);
    fixed64_field(out, 1, e.unix_nanos);
    string_field(out, 2, e.name);
    key_values(out, 3, e.attributes);
  }
  if (s.error) {  // Status: message 2, code 3 (STATUS_CODE_ERROR = 2)
    open_field(out, 15, delimited_size(s.status_message.size()) + 2);
    string_field(out, 2, s.status_message);
    varint_field(out, 3, 2);
  }
  // flags: the W3C trace flags (bit 0 sampled) in the low byte; 0x100 says whether the parent
  // is remote is known, 0x200 that it is (the root's parent came in a traceparent header).
  std::uint32_t flags = s.context.sampled ? 1 : 0;
  flags |= 0x100;
  if (s.context.has_parent() && s.kind == SpanRecord::Kind::kServer) flags |= 0x200;
  fixed32_field(out, 16, flags);
}

}  // namespace

std::string encode_otlp_traces(const std::string& service_name, const std::vector<SpanRecord>& spans) {
  // resource.v1.Resource: attributes 1.
  std::string resource;
  key_values(resource, 1,
             {{"service.name", std::string_view(service_name)}, {"telemetry.sdk.name", std::string_view("sluice")},
              {"telemetry.sdk.language", std::string_view("cpp")}});
  // common.v1.InstrumentationScope: name 1.
  std::string scope;
  string_field(scope, 1, "sluice");
  // trace.v1.ScopeSpans: scope 1, spans 2. One scratch string serves every span (its length
  // must precede it).
  std::string scope_spans;
  bytes_field(scope_spans, 1, scope.data(), scope.size());
  std::string encoded;
  for (const SpanRecord& s : spans) {
    encoded.clear();
    span(encoded, s);
    bytes_field(scope_spans, 2, encoded.data(), encoded.size());
  }
  // trace.v1.ResourceSpans: resource 1, scope_spans 2.
  std::string resource_spans;
  resource_spans.reserve(resource.size() + scope_spans.size() + 16);
  bytes_field(resource_spans, 1, resource.data(), resource.size());
  bytes_field(resource_spans, 2, scope_spans.data(), scope_spans.size());
  // collector.trace.v1.ExportTraceServiceRequest: resource_spans 1.
  std::string request;
  request.reserve(resource_spans.size() + 8);
  bytes_field(request, 1, resource_spans.data(), resource_spans.size());
  return request;
}

}  // namespace sluice
