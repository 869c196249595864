// HttpSource: the embedded HTTP source of a pipeline (`kind: http` in a pipeline file). It
// serves the OpenAI-compatible API and the operational endpoints on one HttpServer:
//
//   POST /v1/chat/completions, POST /v1/completions   -> a sluice::Request submitted at this
//        source; answered as JSON, or as SSE when "stream": true
//   POST /v1/embeddings (OpenAI's) -> a Request of kind kEmbed through the same pipeline (admission,
//        batching), answered by its `embeddings` node (embeddings_api.h for the body); 404 when
//        the pipeline has none
//   POST /v1/retrieve   {"query"} -> a Request of kind kRetrieve through the same pipeline; the
//        answer node's ranked chunks as JSON (retrieval_response_sink.h)
//   POST /v1/documents  add/replace/delete documents in the knowledge base the pipeline's
//        retrieval nodes read (retrieval_api.h for the body). The store is found once, at
//        construction, through RequestIntake::document_stores() (Pipeline::document_stores():
//        nodes expose it, graph/document_store.h), so this layer never depends on the
//        retrieval library. 404 when the pipeline reads no knowledge base, 409 when several.
//        The ingest runs on an IngestRunner thread, never on an event loop, and the response
//        (the change's counts and the new version) is sent when it is done; one ingest at a
//        time per source: a second one meanwhile gets 429 with Retry-After.
//   GET  /v1/jobs/{id}  a job's state and result (async_jobs.h), when the source has async_jobs
//   GET  /v1/streams/{id}  the rest of a streamed answer after Last-Event-ID (stream_resume_route.cc,
//        stream_journals.h): its kept events replayed, then the live ones; 404 unknown or
//        forgotten (or another tenant's), 410 when the events after Last-Event-ID were dropped
//   GET  /v1/models                                    -> the configured model names
//   GET  /ui        the reference chat page (ui_page.h), when the config sets `ui`; else 404
//   GET  /healthz   liveness: 200 while the process serves HTTP
//   GET  /readyz    200 only when the pipeline is ready and not draining; JSON detail
//   GET  /metrics   the pipeline's MetricsRegistry in Prometheus text format 0.0.4
//
// Request headers: X-Priority (a class name of the pipeline, e.g. P0|P1|P2; unknown -> 400;
// absent -> config.default_priority), X-Request-Timeout ("2.5", "2.5s", "250ms": deadline
// from arrival; absent -> the pipeline's default), traceparent (kept when well formed),
// X-Sluice-Async: true (run it later as a Kafka job: 202 and GET /v1/jobs/{id}; async_jobs.h),
// X-Sluice-Resume: 30s (a stream's generation goes on that long after its client left, so it
// can resume; without it a disconnect cancels as below), X-Sluice-Timings: 1 (per-stage timings in the X-Sluice-Timings response header, or as the
// last chunk of a stream), Authorization: Bearer <key> when auth is on (request_auth.h: keys,
// scopes, tenants, priority ceilings, rate limits). Responses carry X-Request-Id. A client that disconnects before its
// answer is complete cancels its request (AbortCause::kClientDisconnect).
//
// Lifecycle: construct (validates the config; throws std::invalid_argument naming the source
// and field) -> set_job_queue() when the config has async_jobs (the app makes the queue) -> start() (binds; throws std::runtime_error) -> stop_accepting() when the
// pipeline drains (SIGTERM) -> stop() before the pipeline is destroyed. The intake (pipeline)
// and its MetricsRegistry must outlive the source. stop() waits for a running ingest.
// Thread-safety: lifecycle calls from one thread; the handlers run on the server's event loops.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "connectors/http/async_jobs.h"
#include "connectors/http/cors.h"
#include "connectors/http/http_metrics.h"
#include "connectors/http/http_server.h"
#include "connectors/http/ingest_runner.h"
#include "connectors/http/job_queue.h"
#include "connectors/http/openai_request.h"
#include "connectors/http/request_auth.h"
#include "connectors/http/request_intake.h"
#include "connectors/http/stream_journals.h"
#include "graph/document_store.h"
#include "graph/schema.h"

namespace sluice {
class Pipeline;
}

namespace sluice::http {

class HttpSource {
 public:
  HttpSource(const HttpSourceConfig& config, std::string source_name, RequestIntake& intake);
  // Convenience for the app: adapts (and keeps) the pipeline's intake.
  HttpSource(const HttpSourceConfig& config, std::string source_name, Pipeline& pipeline);
  ~HttpSource();

  void start();
  void stop_accepting();
  void stop();

  // Where X-Sluice-Async and deferred requests go, and GET /v1/jobs looks; before start().
  // Without one, X-Sluice-Async answers 400 and nothing is deferred.
  void set_job_queue(std::shared_ptr<JobQueue> queue) { jobs_ = std::move(queue); }
  bool wants_job_queue() const { return has_async_jobs_; }

  // Reads the API keys again (SIGHUP); an error says why the old keys stay.
  Status reload_auth();

  // After start(): the bound port (useful with port 0) and "host:port".
  std::uint16_t port() const { return server_->port(); }
  std::string address() const;
  const std::string& name() const { return name_; }
  const HttpServer& server() const { return *server_; }

 private:
  // What the request headers say about scheduling (X-Priority, X-Request-Timeout, X-Sluice-Timings).
  struct Routing {
    int priority = 0;
    Nanos timeout = 0;  // 0: the pipeline's default deadline
    bool want_timings = false;
    std::string tenant;  // the API key's; empty without auth
  };

  void init(const HttpSourceConfig& config);
  // handle() guards route(): an exception ends only its own request (500, counted, logged).
  void handle(HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer);
  void route(HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer);
  void answer_internal_error(const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer,
                             const char* what);
  void handle_completion(Endpoint endpoint, HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer,
                         const AuthDecision& auth);
  void handle_retrieve(HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer, const AuthDecision& auth);
  void handle_embeddings(HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer, const AuthDecision& auth);  // embeddings_route.cc
  void handle_documents(HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer);
  void handle_job_status(const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer,
                         const AuthDecision& auth);
  // GET /v1/streams/{id} (stream_resume_route.cc).
  void handle_stream_resume(const HttpRequest& http, const std::shared_ptr<ResponseWriter>& writer,
                            const AuthDecision& auth);
  // A journal for a streamed completion, or null when resuming is off; answers 400 itself (and
  // sets *refused) when X-Sluice-Resume is malformed, too long, or sent without a stream.
  std::shared_ptr<StreamJournal> stream_journal(Endpoint endpoint, const HttpRequest& http, bool stream,
                                                const Routing& routing, const std::string& request_id,
                                                const std::shared_ptr<ResponseWriter>& writer, bool* refused);
  // X-Sluice-Async: writes the request as a job and answers 202 when the broker has it. Returns
  // false when the request is not async (the caller runs it); answers 400 itself when the
  // header is bad, the source has no job queue, or the request streams.
  bool answered_async(Endpoint endpoint, const HttpRequest& http, const Routing& routing, bool stream,
                      const std::shared_ptr<ResponseWriter>& writer);
  // A job of this request, as the client sent it and as it was routed.
  AsyncJob async_job(Endpoint endpoint, const HttpRequest& http, const Routing& routing) const;
  // The sink to submit with: `sink`, or a DeferringSink around it for a deferrable class.
  std::shared_ptr<ResponseSink> deferrable(std::shared_ptr<ResponseSink> sink, Endpoint endpoint,
                                           const HttpRequest& http, const Routing& routing, bool stream,
                                           const std::shared_ptr<ResponseWriter>& writer, const std::string& request_id);
  std::optional<ApiError> refuse_when_draining() const;
  // X-Priority (within the key's ceiling), X-Request-Timeout, X-Sluice-Timings, the tenant.
  std::optional<ApiError> read_routing(const HttpRequest& http, const AuthDecision& auth, Routing* out) const;
  // 404 when the pipeline reads no knowledge base, 409 when it reads several; nullopt for one.
  std::optional<ApiError> unknown_model(const std::string& model) const;  // 404 model_not_found
  std::optional<ApiError> missing_document_store() const;
  // Stamps routing and arrival, cancels on disconnect (or, with a journal, detaches the
  // connection and cancels only when the journal says so), submits to the pipeline.
  void submit(const Routing& routing, const HttpRequest& http, const RequestPtr& request,
              const std::shared_ptr<ResponseWriter>& writer, std::shared_ptr<StreamJournal> journal = nullptr);
  void respond(Endpoint endpoint, const std::shared_ptr<ResponseWriter>& writer, HttpResponse response);
  void respond_error(Endpoint endpoint, const std::shared_ptr<ResponseWriter>& writer, const ApiError& error,
                     std::vector<HttpHeader> headers = {});
  HttpResponse readiness() const;

  std::unique_ptr<RequestIntake> owned_intake_;
  RequestIntake& intake_;
  std::string name_;
  std::string host_;
  std::vector<std::string> models_;
  std::int64_t started_unix_ = 0;  // the models' `created`
  CorsPolicy cors_{CorsConfig()};
  int default_class_ = 0;
  bool stream_progress_ = true;
  bool ui_ = false;  // config ui: GET /ui serves the chat page  // config stream_progress: progress comments before the first token
  std::shared_ptr<HttpMetrics> metrics_;
  std::shared_ptr<const std::vector<std::string>> stage_names_;
  std::vector<std::shared_ptr<DocumentStore>> document_stores_;  // the pipeline's, resolved at construction
  bool answers_embeddings_ = false;
  std::unique_ptr<IngestRunner> ingests_;
  std::unique_ptr<RequestAuth> auth_;
  std::unique_ptr<HttpServer> server_;
  bool has_async_jobs_ = false;
  std::vector<bool> defer_class_;  // by class index: async_jobs.defer_when_shed
  std::shared_ptr<JobQueue> jobs_;
  std::shared_ptr<StreamJournals> journals_;  // config resume; enabled() false when grace is 0
};

}  // namespace sluice::http
