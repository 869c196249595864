// Tracing (graph/span_context.h, otlp_encoding.h, request_spans.h, span_exporter.h): W3C
// traceparent parsing and propagation, the OTLP protobuf encoding (decoded here with
// protobuf's schema-less parser, by the field numbers of the OTLP specification; the interop
// test decodes it with OpenTelemetry's own generated code), and a pipeline exporting the span
// tree of its requests to a real OTLP/HTTP receiver on loopback: every stage under the root,
// the root under the incoming span, times nested, head sampling, errors always kept, and a
// collector that is down costing requests nothing.
#include <gtest/gtest.h>
#include <google/protobuf/unknown_field_set.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "graph/otlp_encoding.h"
#include "graph/pipeline.h"
#include "graph/span_context.h"
#include "graph/spec_validator.h"
#include "tests/graph/test_support.h"
#include "tests/support/loopback_receiver.h"

namespace sluice {
namespace {

namespace pb = google::protobuf;
using testing::LoopbackReceiver;
using testing::RecordingSink;

const std::string kIncoming = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

TEST(SpanContext, ParsesTheW3CFormAndRefusesTheRest) {
  auto c = parse_traceparent(kIncoming);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->trace_id_hex(), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(c->span_id_hex(), "b7ad6b7169203331");
  EXPECT_TRUE(c->sampled);
  EXPECT_EQ(c->traceparent(), kIncoming);
  EXPECT_FALSE(parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")->sampled);
  for (const char* bad : {"", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331", "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                          "00-00000000000000000000000000000000-b7ad6b7169203331-01", "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
                          "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}) {
    EXPECT_FALSE(parse_traceparent(bad).has_value()) << bad;
  }
}

TEST(SpanContext, AChildKeepsTheTraceAndTheSampledFlag) {
  const SpanContext parent = *parse_traceparent(kIncoming);
  const SpanContext child = SpanContext::child_of(parent);
  EXPECT_EQ(child.trace_id, parent.trace_id);
  EXPECT_EQ(child.parent_span_id, parent.span_id);
  EXPECT_NE(child.span_id, parent.span_id);
  EXPECT_TRUE(child.sampled);
  const SpanContext root = SpanContext::root(false);
  EXPECT_TRUE(root.valid());
  EXPECT_FALSE(root.has_parent());
  EXPECT_NE(root.trace_id, SpanContext::root(false).trace_id);
  EXPECT_TRUE(parse_traceparent(root.traceparent()).has_value());
}

// ---- decoding by field number
const pb::UnknownField* field(const pb::UnknownFieldSet& set, int number, int index = 0) {
  for (int i = 0; i < set.field_count(); ++i) {
    if (set.field(i).number() == number && index-- == 0) return &set.field(i);
  }
  return nullptr;
}
int count(const pb::UnknownFieldSet& set, int number) {
  int n = 0;
  for (int i = 0; i < set.field_count(); ++i) n += set.field(i).number() == number;
  return n;
}
// UnknownFieldSet cannot be copied: decoded messages are shared.
using Message = std::shared_ptr<pb::UnknownFieldSet>;
Message message(const pb::UnknownField& f) {
  auto out = std::make_shared<pb::UnknownFieldSet>();
  EXPECT_TRUE(out->ParseFromString(f.length_delimited()));
  return out;
}

struct DecodedSpan {
  std::string trace_id, span_id, parent_span_id, name;
  int kind = 0;
  std::uint64_t start = 0, end = 0;
  std::map<std::string, Message> attributes;  // key -> AnyValue
  std::vector<std::string> events;
  int status_code = 0;
  std::string status_message;
};

std::map<std::string, Message> key_values(const pb::UnknownFieldSet& m, int number) {
  std::map<std::string, Message> out;
  for (int i = 0; i < count(m, number); ++i) {
    const Message kv = message(*field(m, number, i));
    out[field(*kv, 1)->length_delimited()] = message(*field(*kv, 2));
  }
  return out;
}
std::string string_value(const Message& any) { return field(*any, 1) ? field(*any, 1)->length_delimited() : "?"; }
std::int64_t int_value(const Message& any) { return field(*any, 3) ? static_cast<std::int64_t>(field(*any, 3)->varint()) : -1; }
bool bool_value(const Message& any) { return field(*any, 2) && field(*any, 2)->varint() == 1; }

// service.name and the spans of one ExportTraceServiceRequest.
std::pair<std::string, std::vector<DecodedSpan>> decode(const std::string& body) {
  pb::UnknownFieldSet request;
  EXPECT_TRUE(request.ParseFromString(body));
  const Message resource_spans = message(*field(request, 1));
  const auto resource = key_values(*message(*field(*resource_spans, 1)), 1);
  const Message scope_spans = message(*field(*resource_spans, 2));
  EXPECT_EQ(field(*message(*field(*scope_spans, 1)), 1)->length_delimited(), "sluice");
  std::vector<DecodedSpan> spans;
  for (int i = 0; i < count(*scope_spans, 2); ++i) {
    const Message m = message(*field(*scope_spans, 2, i));
    const pb::UnknownFieldSet& s = *m;
    DecodedSpan d;
    d.trace_id = field(s, 1)->length_delimited();
    d.span_id = field(s, 2)->length_delimited();
    if (field(s, 4)) d.parent_span_id = field(s, 4)->length_delimited();
    d.name = field(s, 5)->length_delimited();
    d.kind = static_cast<int>(field(s, 6)->varint());
    d.start = field(s, 7)->fixed64();
    d.end = field(s, 8)->fixed64();
    d.attributes = key_values(s, 9);
    for (int e = 0; e < count(s, 11); ++e) d.events.push_back(field(*message(*field(s, 11, e)), 2)->length_delimited());
    if (field(s, 15)) {
      const Message st = message(*field(s, 15));
      d.status_code = static_cast<int>(field(*st, 3)->varint());
      d.status_message = field(*st, 2)->length_delimited();
    }
    spans.push_back(std::move(d));
  }
  return {string_value(resource.at("service.name")), spans};
}

TEST(OtlpEncoding, EverySpanFieldAtItsNumber) {
  SpanRecord s;
  s.context = SpanContext::child_of(*parse_traceparent(kIncoming));
  s.name = "generate";
  s.kind = SpanRecord::Kind::kServer;
  s.start_unix_nanos = 1796515200000000000ULL;
  s.end_unix_nanos = 1796515200250000000ULL;
  s.attributes = {{"gen_ai.request.model", std::string_view("sluice")}, {"gen_ai.usage.output_tokens", std::int64_t{-3}},
                  {"sluice.stage.queue_seconds", 0.5}, {"sluice.degraded", true}};
  s.events = {{1796515200100000000ULL, "service.start", {}}};
  s.error = true;
  s.status_message = "deadline";
  const auto [service, spans] = decode(encode_otlp_traces("svc", {s}));
  EXPECT_EQ(service, "svc");
  ASSERT_EQ(spans.size(), 1u);
  const DecodedSpan& d = spans[0];
  EXPECT_EQ(d.trace_id.size(), 16u);
  EXPECT_EQ(d.parent_span_id, std::string(reinterpret_cast<const char*>(parse_traceparent(kIncoming)->span_id.data()), 8));
  EXPECT_EQ(d.name, "generate");
  EXPECT_EQ(d.kind, 2);
  EXPECT_EQ(d.start, 1796515200000000000ULL);
  EXPECT_EQ(d.end, 1796515200250000000ULL);
  EXPECT_EQ(string_value(d.attributes.at("gen_ai.request.model")), "sluice");
  EXPECT_EQ(int_value(d.attributes.at("gen_ai.usage.output_tokens")), -3);
  double q = 0;
  const std::uint64_t bits = field(*d.attributes.at("sluice.stage.queue_seconds"), 4)->fixed64();
  std::memcpy(&q, &bits, sizeof q);
  EXPECT_EQ(q, 0.5);
  EXPECT_TRUE(bool_value(d.attributes.at("sluice.degraded")));
  EXPECT_EQ(d.events, std::vector<std::string>{"service.start"});
  EXPECT_EQ(d.status_code, 2);
  EXPECT_EQ(d.status_message, "deadline");
}

// ---- a pipeline exporting to a receiver
// The diamond of test nodes (left and right marks joined by answer_marks) with `tracing`.
struct Traced : testing::PipelineHarness {
  explicit Traced(const std::string& tracing)
      : PipelineHarness("name: traced\ntracing: " + tracing + R"(
sources: [{name: api, kind: http}]
nodes:
  - {name: left, kind: mark}
  - {name: right, kind: mark}
  - {name: join, kind: answer_marks}
edges:
  - {from: api, to: left}
  - {from: api, to: right}
  - {from: left, to: join}
  - {from: right, to: join}
)") {}
  ~Traced() { pipeline->drain(kNanosPerSecond); }
  RequestPtr ask(const std::string& traceparent = "") {
    auto [r, sink] = make();
    r->traceparent = traceparent;
    pipeline->submit("api", r);
    EXPECT_TRUE(sink->wait());
    return r;
  }
  double metric(const std::string& name, const Labels& labels = {}) { return metrics.counter(name, "", labels).value(); }
};

std::string bytes_of(const std::array<std::uint8_t, 16>& a) { return std::string(reinterpret_cast<const char*>(a.data()), a.size()); }
std::string bytes_of(const std::array<std::uint8_t, 8>& a) { return std::string(reinterpret_cast<const char*>(a.data()), a.size()); }

TEST(Tracing, ARequestsSpansFormOneTreeUnderTheIncomingSpan) {
  LoopbackReceiver collector;
  Traced t("{endpoint: '" + collector.url("/v1/traces") + "', sample_ratio: 0, flush_interval: 10ms, service_name: rag}");
  const RequestPtr r = t.ask(kIncoming);  // sampled by its parent, whatever the ratio
  const SpanContext incoming = *parse_traceparent(kIncoming);
  EXPECT_EQ(r->span.trace_id, incoming.trace_id);
  EXPECT_EQ(r->span.parent_span_id, incoming.span_id);
  const auto bodies = collector.wait_for(1);
  ASSERT_EQ(bodies.size(), 1u);
  EXPECT_NE(collector.heads()[0].find("POST /v1/traces"), std::string::npos);
  EXPECT_NE(collector.heads()[0].find("Content-Type: application/x-protobuf"), std::string::npos);
  const auto [service, spans] = decode(bodies[0]);
  EXPECT_EQ(service, "rag");
  ASSERT_EQ(spans.size(), 4u);  // the root and left, right, join
  const DecodedSpan& root = spans[0];
  EXPECT_EQ(root.name, "traced");
  EXPECT_EQ(root.kind, 2);
  EXPECT_EQ(root.span_id, bytes_of(r->span.span_id));
  EXPECT_EQ(root.parent_span_id, bytes_of(incoming.span_id));
  EXPECT_EQ(string_value(root.attributes.at("sluice.status")), "ok");
  EXPECT_EQ(string_value(root.attributes.at("sluice.priority_class")), "P1");
  std::set<std::string> stages;
  for (std::size_t i = 1; i < spans.size(); ++i) {
    const DecodedSpan& s = spans[i];
    stages.insert(s.name);
    EXPECT_EQ(s.trace_id, bytes_of(incoming.trace_id));
    EXPECT_EQ(s.parent_span_id, root.span_id) << s.name;
    EXPECT_EQ(s.kind, 1);
    EXPECT_GE(s.start, root.start) << s.name;
    EXPECT_LE(s.end, root.end) << s.name;
    EXPECT_LE(s.start, s.end);
    EXPECT_EQ(s.events, std::vector<std::string>{"service.start"});
    EXPECT_EQ(string_value(s.attributes.at("sluice.stage.kind")), s.name == "join" ? "answer_marks" : "mark");
    EXPECT_EQ(int_value(s.attributes.at("sluice.batch.size")), 1);
  }
  EXPECT_EQ(stages, (std::set<std::string>{"left", "right", "join"}));
  for (int i = 0; i < 100 && t.metric("sluice_tracing_spans_exported_total") < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(t.metric("sluice_tracing_spans_exported_total"), 4);
}

TEST(Tracing, UnsampledRequestsLeaveNoSpans) {
  LoopbackReceiver collector;
  Traced t("{endpoint: '" + collector.url() + "', sample_ratio: 0, flush_interval: 10ms}");
  // ratio 0, no sampled parent: nothing leaves but the failure
  t.ask();
  t.ask("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");  // parent says: not sampled
  EXPECT_EQ(collector.wait_for(1, std::chrono::milliseconds(300)).size(), 0u);
}

TEST(Tracing, RootsAreSampledAtTheRatioAndChildrenFollowTheirParent) {
  LoopbackReceiver collector;
  Traced t("{endpoint: '" + collector.url() + "', sample_ratio: 0.25}");
  int sampled = 0;
  for (int i = 0; i < 20000; ++i) sampled += t.pipeline->start_span("")->sampled;
  EXPECT_NEAR(sampled / 20000.0, 0.25, 0.02);  // 0.02 is over 6 standard deviations
  EXPECT_TRUE(t.pipeline->start_span(kIncoming)->sampled);
  EXPECT_FALSE(t.pipeline->start_span("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")->sampled);
}

TEST(Tracing, FailedRequestsAreKeptWhateverTheDraw) {
  LoopbackReceiver collector;
  testing::PipelineHarness h("name: failing\ntracing: {endpoint: '" + collector.url() + R"(', sample_ratio: 0, flush_interval: 10ms}
sources: [{name: api, kind: http}]
nodes: [{name: broken, kind: fail}]
edges: [{from: api, to: broken}]
)");
  auto [r, sink] = h.make();
  h.pipeline->submit("api", r);
  ASSERT_TRUE(sink->wait());
  const auto bodies = collector.wait_for(1);
  ASSERT_EQ(bodies.size(), 1u);
  const auto spans = decode(bodies[0]).second;
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].status_code, 2);
  EXPECT_NE(spans[0].status_message.find("boom"), std::string::npos) << spans[0].status_message;
  EXPECT_FALSE(spans[0].parent_span_id.size()) << "a new root: no incoming traceparent";
  h.pipeline->drain(kNanosPerSecond);
}

TEST(Tracing, ACollectorThatIsDownDropsSpansAndCountsThem) {
  std::string url;
  {
    LoopbackReceiver gone;
    url = gone.url();
  }
  Traced t("{endpoint: '" + url + "', sample_ratio: 1, flush_interval: 1ms, timeout: 1s}");
  for (int i = 0; i < 20; ++i) EXPECT_EQ(t.ask()->status().code, StatusCode::kOk);
  const Labels failed{{"reason", "export_failed"}};
  for (int i = 0; i < 200 && t.metric("sluice_tracing_spans_dropped_total", failed) < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(t.metric("sluice_tracing_spans_dropped_total", failed), 1);
  EXPECT_EQ(t.metric("sluice_tracing_spans_exported_total"), 0);
}

TEST(Tracing, ABoundedQueueDropsWholeRequestsWhenFull) {
  LoopbackReceiver collector;
  // 16 spans queued at most; a flush only after a minute, so the queue fills.
  Traced t("{endpoint: '" + collector.url() + "', sample_ratio: 1, max_queued_spans: 16, batch_spans: 1000, flush_interval: 60s}");
  for (int i = 0; i < 10; ++i) t.ask();  // 4 spans each: 4 requests fit
  // The sink hears of completion before the tracer does: wait for the last request's spans.
  const Labels full{{"reason", "queue_full"}};
  for (int i = 0; i < 500 && t.metric("sluice_tracing_spans_dropped_total", full) < 24; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(t.metric("sluice_tracing_spans_dropped_total", {{"reason", "queue_full"}}), 24);
  EXPECT_EQ(t.metrics.gauge("sluice_tracing_queued_spans", "").value(), 16);
}

TEST(Tracing, WithoutAnEndpointTheTraceparentPassesThroughUntouched) {
  testing::PipelineHarness h(R"(name: plain
sources: [{name: api, kind: http}]
nodes: [{name: join, kind: answer_marks}]
edges: [{from: api, to: join}]
)");
  EXPECT_FALSE(h.pipeline->start_span(kIncoming).has_value());
  auto [r, sink] = h.make();
  r->traceparent = kIncoming;
  h.pipeline->submit("api", r);
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(r->traceparent, kIncoming);
  EXPECT_FALSE(r->span.valid());
  h.pipeline->drain(kNanosPerSecond);
}

TEST(Tracing, TheValidatorNamesABadEndpoint) {
  NodeRegistry reg = testing::test_registry();
  std::string what;
  try {
    load_and_validate_text("name: v\ntracing: {endpoint: 'localhost:4318'}\nsources: [{name: api, kind: http}]\n"
                           "nodes: [{name: a, kind: answer_marks}]\nedges: [{from: api, to: a}]\n",
                           "v.yaml", reg);
  } catch (const SpecErrors& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("tracing.endpoint: "), std::string::npos) << what;
}

}  // namespace
}  // namespace sluice
