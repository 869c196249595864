#include "connectors/http/http_metrics.h"

namespace sluice::http {
namespace {

constexpr const char* kReadTimeoutsHelp =
    "Connections answered 408 and closed because a read deadline ran out: reason header (the head took longer "
    "than header_timeout) or body (the body arrived slower than body_min_rate).";
constexpr const char* kAsyncJobsHelp =
    "Requests written to Kafka as jobs: queued (answered 202), deferred (shed by admission and written instead of "
    "answered 429; each is also counted queued or refused), refused (the job queue could not take it).";

}  // namespace

std::string_view endpoint_label(Endpoint endpoint) {
  switch (endpoint) {
    case Endpoint::kChatCompletions: return "/v1/chat/completions";
    case Endpoint::kCompletions: return "/v1/completions";
    case Endpoint::kEmbeddings: return "/v1/embeddings";
    case Endpoint::kRetrieve: return "/v1/retrieve";
    case Endpoint::kDocuments: return "/v1/documents";
    case Endpoint::kJobs: return "/v1/jobs";
    case Endpoint::kStreams: return "/v1/streams";
    case Endpoint::kModels: return "/v1/models";
    case Endpoint::kCache: return "/v1/cache";
    case Endpoint::kUi: return "/ui";
    case Endpoint::kHealthz: return "/healthz";
    case Endpoint::kReadyz: return "/readyz";
    case Endpoint::kMetrics: return "/metrics";
    default: return "other";
  }
}

Endpoint endpoint_for_path(std::string_view path) {
  for (int i = 0; i < static_cast<int>(Endpoint::kOther); ++i) {
    auto e = static_cast<Endpoint>(i);
    if (path == endpoint_label(e)) return e;
  }
  if (path.size() > 9 && path.substr(0, 9) == "/v1/jobs/") return Endpoint::kJobs;
  if (path.size() > 12 && path.substr(0, 12) == "/v1/streams/") return Endpoint::kStreams;
  if (path.size() > 11 && path.substr(0, 11) == "/v1/models/") return Endpoint::kModels;
  return Endpoint::kOther;
}

HttpMetrics::HttpMetrics(MetricsRegistry& registry, std::string source)
    : open_connections(registry.gauge("sluice_http_open_connections", "Open HTTP connections.", {{"source", source}})),
      active_streams(registry.gauge("sluice_http_active_streams", "SSE responses in progress.", {{"source", source}})),
      refused_connections(registry.counter("sluice_http_refused_connections_total",
                                           "Connections refused because max_connections were open.",
                                           {{"source", source}})),
      slow_client_closes(registry.counter("sluice_http_slow_client_closes_total",
                                          "Connections closed because unsent bytes exceeded max_stream_buffer_bytes.",
                                          {{"source", source}})),
      idle_closes(registry.counter("sluice_http_idle_closes_total",
                                   "Connections closed after idle_timeout without a request.", {{"source", source}})),
      header_timeouts(registry.counter("sluice_http_read_timeouts_total", kReadTimeoutsHelp,
                                       {{"source", source}, {"reason", "header"}})),
      body_rate_timeouts(registry.counter("sluice_http_read_timeouts_total", kReadTimeoutsHelp,
                                          {{"source", source}, {"reason", "body"}})),
      per_ip_refused_connections(registry.counter("sluice_http_per_ip_refused_connections_total",
                                                  "Connections refused because their address held "
                                                  "max_connections_per_ip connections.",
                                                  {{"source", source}})),
      client_disconnects(registry.counter("sluice_http_client_disconnects_total",
                                          "Clients that went away before their answer was complete.",
                                          {{"source", source}})),
      handler_exceptions(registry.counter("sluice_http_handler_exceptions_total",
                                          "Requests answered 500 because an exception escaped their handler (a bug).",
                                          {{"source", source}})),
      ingests_running(registry.gauge("sluice_http_ingests_running", "POST /v1/documents ingests in progress.",
                                     {{"source", source}})),
      ingest_seconds(registry.histogram("sluice_http_ingest_seconds", "Duration of POST /v1/documents ingests.",
                                        {{"source", source}})),
      async_jobs_queued(registry.counter("sluice_http_async_jobs_total", kAsyncJobsHelp,
                                         {{"source", source}, {"outcome", "queued"}})),
      async_jobs_deferred(registry.counter("sluice_http_async_jobs_total", kAsyncJobsHelp,
                                           {{"source", source}, {"outcome", "deferred"}})),
      async_jobs_refused(registry.counter("sluice_http_async_jobs_total", kAsyncJobsHelp,
                                          {{"source", source}, {"outcome", "refused"}})),
      registry_(registry),
      source_(std::move(source)) {}

void HttpMetrics::count_response(Endpoint endpoint, int status) {
  if (status < kMinStatus || status > kMaxStatus) status = 500;
  auto& slot = by_status_[static_cast<std::size_t>(endpoint)][static_cast<std::size_t>(status - kMinStatus)];
  Counter* c = slot.load(std::memory_order_acquire);
  if (!c) {
    c = &registry_.counter("sluice_http_requests_total", "HTTP responses by endpoint and status code.",
                           {{"source", source_}, {"endpoint", std::string(endpoint_label(endpoint))},
                            {"code", std::to_string(status)}});
    slot.store(c, std::memory_order_release);
  }
  c->inc();
}

}  // namespace sluice::http
