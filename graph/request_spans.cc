#include "graph/request_spans.h"

namespace sluice {
namespace {

std::uint64_t unix_nanos(Nanos t, Nanos offset) { return t + offset > 0 ? static_cast<std::uint64_t>(t + offset) : 0; }

const std::string& name_at(const std::vector<std::string>* names, std::size_t i, const std::string& fallback) {
  return names && i < names->size() ? (*names)[i] : fallback;
}

bool is_cache_kind(const std::string& kind) { return kind == "response_cache" || kind == "semantic_cache"; }

}  // namespace

FinishedRequest finished_request(const Request& r) {
  FinishedRequest f;
  f.span = r.span;
  f.stamps = r.trace().stamps();
  f.arrival = r.arrival;
  f.completed_at = r.completed_at;
  f.code = r.status().code;
  if (!r.status().ok()) f.status_message = r.status().message;
  f.priority = r.priority;
  f.request_id = r.external_id.empty() ? std::to_string(r.id()) : r.external_id;
  f.kind = r.input().kind;
  f.model = r.input().model;
  f.max_tokens = r.input().max_tokens;
  f.usage = r.usage;
  return f;
}

std::vector<SpanRecord> request_spans(const FinishedRequest& r, const SpanNaming& naming, Nanos offset) {
  static const std::string kUnknown = "unknown";
  std::vector<SpanRecord> spans;
  const std::vector<StageStamp>& stamps = r.stamps;
  spans.reserve(stamps.size() + 1);
  bool degraded = false;
  for (const StageStamp& s : stamps) degraded |= s.degradation != Degradation::kNone;

  SpanRecord root;
  root.context = r.span;
  root.name = naming.pipeline;
  root.kind = SpanRecord::Kind::kServer;
  root.start_unix_nanos = unix_nanos(r.arrival, offset);
  root.end_unix_nanos = unix_nanos(r.completed_at > r.arrival ? r.completed_at : r.arrival, offset);
  const bool ok = r.code == StatusCode::kOk;
  root.attributes = {{"sluice.pipeline", std::string_view(naming.pipeline)},
                     {"sluice.priority_class", std::string_view(name_at(naming.class_names, r.priority, kUnknown))},
                     {"sluice.request_id", std::string_view(r.request_id)},
                     {"sluice.status", status_code_name(r.code)},
                     {"sluice.degraded", degraded}};
  if (!ok) {
    root.error = true;
    root.status_message = r.status_message;
  }
  spans.push_back(std::move(root));

  for (const StageStamp& s : stamps) {
    SpanRecord span;
    span.context = SpanContext::child_of(r.span);
    const std::string& kind = name_at(naming.stage_kinds, s.stage, kUnknown);
    span.name = name_at(naming.stage_names, s.stage, kUnknown);
    span.kind = SpanRecord::Kind::kInternal;
    // The stage that completed the request stamps its finish only afterwards (trace.h).
    const Nanos end = s.finished > s.started ? s.finished : (r.completed_at > s.started ? r.completed_at : s.started);
    span.start_unix_nanos = unix_nanos(s.queued, offset);
    span.end_unix_nanos = unix_nanos(end, offset);
    span.events.push_back({unix_nanos(s.started, offset), "service.start", {}});
    span.attributes = {{"sluice.stage.kind", std::string_view(kind)},
                       {"sluice.stage.queue_seconds", nanos_to_seconds(s.started - s.queued)},
                       {"sluice.stage.service_seconds", nanos_to_seconds(end - s.started)},
                       {"sluice.batch.size", static_cast<std::int64_t>(s.batch)}};
    if (s.degradation != Degradation::kNone) {
      span.attributes.push_back({"sluice.degradation", degradation_name(s.degradation)});
    }
    if (is_cache_kind(kind)) {
      // A hit answers the request there: no stage starts after it.
      bool later = false;
      for (const StageStamp& o : stamps) later |= o.started > s.started;
      span.attributes.push_back({"sluice.cache.hit", !later && ok});
    }
    if (kind == "generate") {
      span.attributes.push_back(
          {"gen_ai.operation.name", std::string_view(r.kind == RequestInput::Kind::kChat ? "chat" : "text_completion")});
      span.attributes.push_back({"gen_ai.system", std::string_view("sluice")});
      span.attributes.push_back({"gen_ai.request.model", std::string_view(r.model)});
      if (r.max_tokens >= 0) span.attributes.push_back({"gen_ai.request.max_tokens", static_cast<std::int64_t>(r.max_tokens)});
      span.attributes.push_back({"gen_ai.usage.input_tokens", static_cast<std::int64_t>(r.usage.prompt_tokens)});
      span.attributes.push_back({"gen_ai.usage.output_tokens", static_cast<std::int64_t>(r.usage.completion_tokens)});
    }
    spans.push_back(std::move(span));
  }
  return spans;
}

}  // namespace sluice
