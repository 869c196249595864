#include "connectors/http/http_source.h"

#include <google/protobuf/duration.pb.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "connectors/http/cache_api.h"
#include "connectors/http/models_api.h"
#include "connectors/http/openai_request.h"
#include "connectors/http/openai_response.h"
#include "connectors/http/openai_response_sink.h"
#include "connectors/http/retrieval_api.h"
#include "connectors/http/retrieval_response_sink.h"
#include "connectors/http/ui_page.h"
#include "graph/external_ids.h"
#include "graph/listen_rules.h"
#include "graph/proto_duration.h"

namespace sluice::http {
namespace {

constexpr std::size_t kDefaultMaxBody = 1024 * 1024;
constexpr std::size_t kDefaultMaxHeader = 16 * 1024;
constexpr Nanos kDefaultIdle = 60 * kNanosPerSecond;
constexpr std::uint32_t kDefaultMaxConnections = 10000;
constexpr std::size_t kDefaultStreamBuffer = 1024 * 1024;

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

// Protocol errors (from the parser, the read deadlines and the connection limits) in the
// OpenAI error shape.
ApiError protocol_error(int status, const std::string& message) {
  ApiError e;
  e.status = status;
  e.message = message;
  switch (status) {
    case 408: e.code = "request_timeout"; break;
    case 413: e.code = "request_too_large"; break;
    case 431: e.code = "headers_too_large"; break;
    case 411: e.code = "length_required"; break;
    case 503: e.code = "too_many_connections"; e.type = "service_unavailable"; break;
    default: e.code = "bad_request"; break;
  }
  return e;
}

std::int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

HttpSource::HttpSource(const HttpSourceConfig& config, std::string source_name, RequestIntake& intake)
    : intake_(intake), name_(std::move(source_name)) {
  init(config);
}

HttpSource::HttpSource(const HttpSourceConfig& config, std::string source_name, Pipeline& pipeline)
    : owned_intake_(intake_for(pipeline)), intake_(*owned_intake_), name_(std::move(source_name)) {
  init(config);
}

HttpSource::~HttpSource() { stop(); }

void HttpSource::init(const HttpSourceConfig& config) {
  auto bad = [&](const std::string& field, const std::string& why) {
    return std::invalid_argument("http source '" + name_ + "': " + field + ": " + why);
  };
  HttpServerOptions options;
  try {
    parse_listen_address(config.listen().empty() ? "127.0.0.1:8080" : config.listen(), &options.host, &options.port);
  } catch (const std::invalid_argument& e) {
    throw bad("listen", e.what());
  }
  host_ = options.host;
  if (auto problem = listen_auth_problem(config)) throw bad(problem->field, problem->message);
  started_unix_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  cors_ = CorsPolicy(config.cors());
  stream_progress_ = !config.has_stream_progress() || config.stream_progress();
  ui_ = config.ui();
  models_.assign(config.models().begin(), config.models().end());
  if (models_.empty()) models_.push_back("sluice");
  std::string priority = config.default_priority().empty() ? "P0" : config.default_priority();
  default_class_ = intake_.class_index(priority);
  if (default_class_ < 0) {
    throw bad("default_priority", "'" + priority + "' is not a class of this pipeline (classes: " +
                                      join(intake_.class_names()) + ")");
  }
  // Zero means "not set" (a config built in code); files always carry the schema defaults.
  options.max_body_bytes = config.max_body_bytes() ? config.max_body_bytes() : kDefaultMaxBody;
  options.max_header_bytes = config.max_header_bytes() ? config.max_header_bytes() : kDefaultMaxHeader;
  options.idle_timeout = duration_or(config.has_idle_timeout(), config.idle_timeout(), kDefaultIdle);
  // The read deadlines and the per-address limit: 0 disables them, so "not set" is presence
  // (the HttpServerOptions defaults are the schema's).
  options.header_timeout = duration_or(config.has_header_timeout(), config.header_timeout(), options.header_timeout);
  if (config.has_body_min_rate()) options.body_min_rate = config.body_min_rate();
  options.body_rate_grace = duration_or(config.has_body_rate_grace(), config.body_rate_grace(), options.body_rate_grace);
  if (config.has_max_connections_per_ip()) options.max_connections_per_ip = config.max_connections_per_ip();
  options.max_connections = config.max_connections() ? config.max_connections() : kDefaultMaxConnections;
  options.io_threads = config.io_threads() ? config.io_threads() : 1;
  options.max_stream_buffer_bytes =
      config.max_stream_buffer_bytes() ? config.max_stream_buffer_bytes() : kDefaultStreamBuffer;

  metrics_ = std::make_shared<HttpMetrics>(intake_.metrics(), name_);
  stage_names_ = std::make_shared<const std::vector<std::string>>(intake_.stage_names());
  options.open_connections_gauge = &metrics_->open_connections;
  options.active_streams_gauge = &metrics_->active_streams;
  options.refused_connections = &metrics_->refused_connections;
  options.slow_client_closes = &metrics_->slow_client_closes;
  options.idle_closes = &metrics_->idle_closes;
  options.header_timeouts = &metrics_->header_timeouts;
  options.body_rate_timeouts = &metrics_->body_rate_timeouts;
  options.refused_per_ip = &metrics_->per_ip_refused_connections;

  auth_ = std::make_unique<RequestAuth>(
      config.auth(), name_, [this](const std::string& c) { return intake_.class_index(c); }, intake_.clock(),
      intake_.metrics());

  has_async_jobs_ = config.has_async_jobs();
  defer_class_.assign(intake_.class_names().size(), false);
  for (const std::string& c : config.async_jobs().defer_when_shed()) {
    const int index = intake_.class_index(c);
    if (index < 0) {
      throw bad("async_jobs.defer_when_shed", "'" + c + "' is not a class of this pipeline (classes: " +
                                                  join(intake_.class_names()) + ")");
    }
    defer_class_[static_cast<std::size_t>(index)] = true;
  }

  StreamResumeOptions resume;
  resume.grace = duration_or(config.resume().has_grace(), config.resume().grace(), resume.grace);
  if (config.resume().max_stream_bytes()) resume.max_stream_bytes = config.resume().max_stream_bytes();
  if (config.resume().max_total_bytes()) resume.max_total_bytes = config.resume().max_total_bytes();
  resume.max_keep_running =
      duration_or(config.resume().has_max_keep_running(), config.resume().max_keep_running(), resume.max_keep_running);
  journals_ = std::make_shared<StreamJournals>(resume, intake_.clock(), intake_.metrics(), name_);

  document_stores_ = intake_.document_stores();
  answers_embeddings_ = intake_.answers_embeddings();  // fixed once the pipeline is built
  ingests_ = std::make_unique<IngestRunner>(&metrics_->ingests_running, &metrics_->ingest_seconds);

  auto metrics = metrics_;
  server_ = std::make_unique<HttpServer>(
      options, [this](HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) { handle(request, writer); },
      [metrics](int status, const std::string& message) {
        ApiError e = protocol_error(status, message);
        metrics->count_response(Endpoint::kOther, status);
        return HttpResponse{status, "application/json", {}, error_body(e)};
      });
}

void HttpSource::start() { server_->start(); }
Status HttpSource::reload_auth() { return auth_->reload(); }
void HttpSource::stop_accepting() { server_->stop_accepting(); }
void HttpSource::stop() {
  if (server_) server_->stop();
  if (ingests_) ingests_->stop();  // waits for a running ingest: it cannot be abandoned half-way
}

std::string HttpSource::address() const {
  bool v6 = host_.find(':') != std::string::npos;
  return (v6 ? "[" + host_ + "]" : host_) + ":" + std::to_string(port());
}

void HttpSource::respond(Endpoint endpoint, const std::shared_ptr<ResponseWriter>& writer, HttpResponse response) {
  metrics_->count_response(endpoint, response.status);
  writer->send(response);
}

void HttpSource::respond_error(Endpoint endpoint, const std::shared_ptr<ResponseWriter>& writer, const ApiError& error,
                               std::vector<HttpHeader> headers) {
  respond(endpoint, writer, HttpResponse{error.status, "application/json", std::move(headers), error_body(error)});
}

HttpResponse HttpSource::readiness() const {
  bool pipeline_ready = intake_.ready();
  bool draining = intake_.draining() || !server_->accepting();
  bool ready = pipeline_ready && !draining;
  std::string body = std::string("{\"status\":") + (ready ? "\"ready\"" : "\"not ready\"") +
                     ",\"pipeline_ready\":" + (pipeline_ready ? "true" : "false") +
                     ",\"draining\":" + (draining ? "true" : "false") + ",\"admission\":" + intake_.admission_detail() + "}";
  return HttpResponse{ready ? 200 : 503, "application/json", {}, std::move(body)};
}

void HttpSource::handle(HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  // Last resort: whatever escapes the handlers ends this request with a 500, counted and
  // logged, and the loop goes on serving every other connection. The decoders return
  // ApiError for bad input; reaching here is a bug in our code, never the client's.
  try {
    route(request, writer);
  } catch (const std::exception& e) {
    answer_internal_error(request, writer, e.what());
  } catch (...) {
    answer_internal_error(request, writer, "unknown exception");
  }
}

void HttpSource::answer_internal_error(const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer,
                                       const char* what) {
  metrics_->handler_exceptions.inc();
  // The reference ties the client's 500 (X-Request-Id) to this log line; the handler may have
  // failed before it gave the request an id of its own.
  const std::string reference = external_request_id("err", intake_.next_request_id());
  std::fprintf(stderr, "sluice: http source '%s': request %s (%s %s) failed with an exception: %s\n", name_.c_str(),
               reference.c_str(), request.method.c_str(), std::string(request.path()).c_str(), what);
  Endpoint endpoint = endpoint_for_path(request.path());
  if (writer->finished()) return;
  if (writer->streaming()) {
    writer->end_stream();  // the stream's head is out: ending it is the only answer left
    return;
  }
  respond_error(endpoint, writer,
                ApiError{500, "internal error while handling the request (reference " + reference + ")", "server_error",
                         "", "internal_error"},
                {{"X-Request-Id", reference}});
}

void HttpSource::route(HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  Endpoint endpoint = endpoint_for_path(request.path());
  bool post = endpoint == Endpoint::kChatCompletions || endpoint == Endpoint::kCompletions ||
              endpoint == Endpoint::kEmbeddings || endpoint == Endpoint::kRetrieve || endpoint == Endpoint::kDocuments;
  if (endpoint == Endpoint::kOther || (endpoint == Endpoint::kUi && !ui_)) {
    ApiError e{404,
               "no route for " + request.method + " " + std::string(request.path()) +
                   (endpoint == Endpoint::kUi ? " (the chat page is off: set `ui: true` on the http source)" : ""),
               "invalid_request_error", "", "not_found"};
    return respond_error(endpoint, writer, e);
  }
  const char* allowed = post ? "POST" : "GET";
  if (endpoint == Endpoint::kCache && request.method == "DELETE") allowed = "DELETE";
  if (cors_.enabled()) {
    if (const std::string* origin = request.header("origin")) {
      writer->add_headers(cors_.response_headers(*origin));
      // A preflight carries no credentials: answered before authentication.
      if (request.method == "OPTIONS") return respond(endpoint, writer, cors_.preflight(request));
    }
  }
  if (request.method != allowed) {
    ApiError e{405, "method " + request.method + " is not allowed on " + std::string(request.path()) + "; use " + allowed,
               "invalid_request_error", "", "method_not_allowed"};
    return respond_error(endpoint, writer, e, {{"Allow", endpoint == Endpoint::kCache ? "GET, DELETE" : allowed}});
  }
  const AuthDecision auth = auth_->authorize(request, endpoint);
  if (auth.error) return respond_error(endpoint, writer, *auth.error, auth.headers);
  switch (endpoint) {
    case Endpoint::kChatCompletions:
    case Endpoint::kCompletions:
      return handle_completion(endpoint, request, writer, auth);
    case Endpoint::kEmbeddings:
      return handle_embeddings(request, writer, auth);
    case Endpoint::kRetrieve:
      return handle_retrieve(request, writer, auth);
    case Endpoint::kDocuments:
      return handle_documents(request, writer);
    case Endpoint::kJobs:
      return handle_job_status(request, writer, auth);
    case Endpoint::kStreams:
      return handle_stream_resume(request, writer, auth);
    case Endpoint::kHealthz:
      return respond(endpoint, writer, HttpResponse{200, "application/json", {}, "{\"status\":\"ok\"}"});
    case Endpoint::kReadyz:
      return respond(endpoint, writer, readiness());
    case Endpoint::kUi:
      return respond(endpoint, writer, ui_page_response());
    case Endpoint::kMetrics:
      return respond(endpoint, writer,
                     HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", {}, intake_.metrics().exposition()});
    case Endpoint::kModels:
      return respond(endpoint, writer, models_response(request.path(), models_, started_unix_));
    case Endpoint::kCache:
      return respond(endpoint, writer, cache_response(request.method, request.body, intake_.cache_tiers()));
    default:
      return;
  }
}

std::optional<ApiError> HttpSource::refuse_when_draining() const {
  if (!intake_.draining() && server_->accepting()) return std::nullopt;
  return ApiError{503, "the server is draining and accepts no new requests", "service_unavailable", "", "draining"};
}

std::optional<ApiError> HttpSource::read_routing(const HttpRequest& http, const AuthDecision& auth, Routing* out) const {
  // Without a header a key gets the default class, or its ceiling when the default is above it.
  out->priority = std::max(default_class_, auth.ceiling_class);
  out->tenant = auth.tenant;
  if (const std::string* p = http.header("x-priority")) {
    out->priority = intake_.class_index(*p);
    if (out->priority < 0) {
      return ApiError{400, "X-Priority '" + *p + "' is not a priority class; use one of: " + join(intake_.class_names()),
                      "invalid_request_error", "X-Priority", "invalid_value"};
    }
    if (out->priority < auth.ceiling_class) return auth_->priority_refusal(auth, *p);
  }
  if (const std::string* t = http.header("x-request-timeout")) {
    auto parsed_timeout = parse_timeout_header(*t);
    if (!parsed_timeout) {
      return ApiError{400, "X-Request-Timeout '" + *t + "' is not a positive duration such as 2.5, 2.5s or 250ms",
                      "invalid_request_error", "X-Request-Timeout", "invalid_value"};
    }
    out->timeout = *parsed_timeout;
  }
  const std::string* timings_header = http.header("x-sluice-timings");
  out->want_timings = timings_header && (*timings_header == "1" || *timings_header == "true");
  return std::nullopt;
}

void HttpSource::submit(const Routing& routing, const HttpRequest& http, const RequestPtr& request,
                        const std::shared_ptr<ResponseWriter>& writer, std::shared_ptr<StreamJournal> journal) {
  request->priority = static_cast<std::uint8_t>(routing.priority);
  if (const std::string* tp = http.header("traceparent"); tp && valid_traceparent(*tp)) request->traceparent = *tp;
  request->arrival = intake_.clock().now();
  if (routing.timeout > 0) request->deadline = request->arrival + routing.timeout;
  request->want_timings = routing.want_timings;
  request->tenant = routing.tenant;

  std::weak_ptr<Request> weak = request;
  auto metrics = metrics_;
  if (journal) {
    // The journal decides: a client that asked for X-Sluice-Resume leaves its request running
    // (until keep_running passes with no client: the journal's cancel).
    journal->set_cancel([weak] {
      if (auto r = weak.lock(); r && !r->done()) r->cancel(AbortCause::kClientDisconnect);
    });
    // Weak: the journal holds the writer it forwards to, and the writer this callback.
    writer->on_disconnect([weak, metrics, weak_journal = std::weak_ptr<StreamJournal>(journal), w = writer.get()] {
      auto r = weak.lock();
      if (!r || r->done()) return;
      metrics->client_disconnects.inc();
      if (auto j = weak_journal.lock()) return j->detach(w);
      r->cancel(AbortCause::kClientDisconnect);
    });
  } else {
    writer->on_disconnect([weak, metrics] {
      if (auto r = weak.lock(); r && !r->done()) {
        metrics->client_disconnects.inc();
        r->cancel(AbortCause::kClientDisconnect);
      }
    });
  }
  intake_.submit(name_, request);
}

void HttpSource::handle_completion(Endpoint endpoint, HttpRequest& http, const std::shared_ptr<ResponseWriter>& writer,
                                   const AuthDecision& auth) {
  if (auto e = refuse_when_draining()) return respond_error(endpoint, writer, *e);
  auto kind = endpoint == Endpoint::kChatCompletions ? RequestInput::Kind::kChat : RequestInput::Kind::kCompletion;
  OpenAiRequest parsed;
  if (auto error = parse_openai_request(http.body, kind, &parsed)) return respond_error(endpoint, writer, *error);
  const std::string& model = parsed.input.model;
  if (auto e = unknown_model(model)) return respond_error(endpoint, writer, *e);
  Routing routing;
  if (auto e = read_routing(http, auth, &routing)) return respond_error(endpoint, writer, *e);
  if (answered_async(endpoint, http, routing, parsed.input.stream, writer)) return;

  std::uint64_t id = intake_.next_request_id();
  std::string external_id = external_request_id(kind == RequestInput::Kind::kChat ? "chatcmpl" : "cmpl", id);
  bool refused = false;
  std::shared_ptr<StreamJournal> journal =
      stream_journal(endpoint, http, parsed.input.stream, routing, external_id, writer, &refused);
  if (refused) return;
  SinkOptions sink_options;
  sink_options.endpoint = endpoint;
  sink_options.stream = parsed.input.stream;
  sink_options.include_usage = parsed.include_usage;
  sink_options.want_timings = routing.want_timings;
  sink_options.request_id = external_id;
  sink_options.metrics = metrics_;
  sink_options.stage_names = stage_names_;
  sink_options.progress = stream_progress_;
  sink_options.journal = journal;
  if (journal) sink_options.journals = journals_;
  // With tracing on the response names this request's span, so the span is drawn before the
  // sink is made (Pipeline::submit would draw it otherwise).
  const std::string* incoming_traceparent = http.header("traceparent");
  std::optional<SpanContext> span = intake_.start_span(incoming_traceparent ? *incoming_traceparent : std::string_view());
  if (span) sink_options.traceparent = span->traceparent();
  if (auth.meter) {
    const Clock* clock = &intake_.clock();
    sink_options.on_usage = [meter = auth.meter, clock](const Usage& usage) {
      meter->charge_tokens(clock->now(), usage.prompt_tokens + usage.completion_tokens);
    };
  }
  const bool stream = parsed.input.stream;
  ChunkWriter chunks(kind, external_id, model, unix_seconds());
  chunks.shape_for(parsed.input.structured);
  auto sink = deferrable(std::make_shared<OpenAiResponseSink>(writer, std::move(chunks), std::move(sink_options)),
                         endpoint, http, routing, stream, writer, external_id);
  auto request = std::make_shared<Request>(id, std::move(parsed.input), std::move(sink));
  request->external_id = std::move(external_id);
  if (span) request->span = *span;
  submit(routing, http, request, writer, std::move(journal));
}

std::optional<ApiError> HttpSource::unknown_model(const std::string& model) const {
  if (std::find(models_.begin(), models_.end(), model) != models_.end()) return std::nullopt;
  return ApiError{404, "the model '" + model + "' does not exist; this server serves: " + join(models_),
                  "invalid_request_error", "model", "model_not_found"};
}

std::optional<ApiError> HttpSource::missing_document_store() const {
  if (document_stores_.size() == 1) return std::nullopt;
  if (document_stores_.empty()) {
    return ApiError{404, "this pipeline has no knowledge base: none of its nodes reads one (add retrieval nodes such as "
                         "embed, bm25 or answer with a knowledge_base)",
                    "invalid_request_error", "", "no_knowledge_base"};
  }
  std::string names;
  for (const auto& s : document_stores_) names += (names.empty() ? "" : ", ") + s->name();
  return ApiError{409, "this pipeline reads " + std::to_string(document_stores_.size()) + " knowledge bases (" + names +
                           "); POST /v1/documents needs exactly one",
                  "invalid_request_error", "", "ambiguous_knowledge_base"};
}

void HttpSource::handle_retrieve(HttpRequest& http, const std::shared_ptr<ResponseWriter>& writer,
                                 const AuthDecision& auth) {
  constexpr Endpoint endpoint = Endpoint::kRetrieve;
  if (auto e = refuse_when_draining()) return respond_error(endpoint, writer, *e);
  RequestInput input;
  input.kind = RequestInput::Kind::kRetrieve;
  if (auto e = parse_retrieve_request(http.body, &input.prompt)) return respond_error(endpoint, writer, *e);
  Routing routing;
  if (auto e = read_routing(http, auth, &routing)) return respond_error(endpoint, writer, *e);
  // An async job runs on the workers, whose pipeline has the knowledge base, not necessarily this one.
  if (answered_async(endpoint, http, routing, false, writer)) return;
  if (document_stores_.empty()) return respond_error(endpoint, writer, *missing_document_store());
  std::uint64_t id = intake_.next_request_id();
  std::string external_id = external_request_id("retr", id);
  auto sink = deferrable(make_retrieval_response_sink(writer, external_id, metrics_, stage_names_), endpoint, http, routing,
                         false, writer, external_id);
  auto request = std::make_shared<Request>(id, std::move(input), std::move(sink));
  request->external_id = std::move(external_id);
  submit(routing, http, request, writer);
}

void HttpSource::handle_documents(HttpRequest& http, const std::shared_ptr<ResponseWriter>& writer) {
  constexpr Endpoint endpoint = Endpoint::kDocuments;
  if (auto e = refuse_when_draining()) return respond_error(endpoint, writer, *e);
  if (auto e = missing_document_store()) return respond_error(endpoint, writer, *e);
  auto changes = std::make_shared<DocumentChanges>();
  if (auto e = parse_documents_request(http.body, changes.get())) return respond_error(endpoint, writer, *e);
  // The ingest runs on the runner's thread and answers from there; the loop moves on at once.
  auto store = document_stores_.front();
  auto metrics = metrics_;
  bool accepted = ingests_->try_run([store, changes, writer, metrics]() -> std::function<void()> {
    HttpResponse response;
    try {
      DocumentChangeResult result = store->apply(*changes);
      if (result.rejected) {
        ApiError e = document_problem_error(*result.rejected);
        response = HttpResponse{e.status, "application/json", {}, error_body(e)};
      } else {
        response = HttpResponse{200, "application/json", {}, documents_response(result.stats, store->name())};
      }
    } catch (const std::exception& ex) {
      ApiError e{500, std::string("ingest into ") + store->name() + " failed; the previous version still serves: " +
                          ex.what(),
                 "server_error", "", "ingest_failed"};
      response = HttpResponse{500, "application/json", {}, error_body(e)};
    }
    return [response = std::move(response), writer, metrics] {
      metrics->count_response(Endpoint::kDocuments, response.status);
      writer->send(response);
    };
  });
  if (!accepted) {
    const std::uint32_t retry = ingests_->retry_after_seconds();
    ApiError e{429, "another ingest into " + store->name() + " is running; one runs at a time, retry after " +
                        std::to_string(retry) + " s",
               "rate_limit_error", "", "ingest_in_progress"};
    return respond_error(endpoint, writer, e, {{"Retry-After", std::to_string(retry)}});
  }
}

AsyncJob HttpSource::async_job(Endpoint endpoint, const HttpRequest& http, const Routing& routing) const {
  AsyncJob job;
  job.id = new_job_id();
  job.endpoint = endpoint;
  job.body = http.body;
  job.priority = intake_.class_names()[static_cast<std::size_t>(routing.priority)];
  if (const std::string* tp = http.header("traceparent"); tp && valid_traceparent(*tp)) job.traceparent = *tp;
  job.tenant = routing.tenant;
  return job;
}

bool HttpSource::answered_async(Endpoint endpoint, const HttpRequest& http, const Routing& routing, bool stream,
                                const std::shared_ptr<ResponseWriter>& writer) {
  bool async = false;
  if (auto e = read_async_header(http, &async)) {
    respond_error(endpoint, writer, *e);
    return true;
  }
  if (!async) return false;
  if (!jobs_) {
    respond_error(endpoint, writer,
                  ApiError{400, "this server takes no async jobs: its http source '" + name_ + "' has no async_jobs",
                           "invalid_request_error", "X-Sluice-Async", "async_unavailable"});
    return true;
  }
  if (stream) {
    respond_error(endpoint, writer,
                  ApiError{400, "an async job's answer is fetched with GET /v1/jobs/{id}; it cannot stream: drop "
                                "\"stream\": true or X-Sluice-Async",
                           "invalid_request_error", "stream", "invalid_value"});
    return true;
  }
  AsyncJob job = async_job(endpoint, http, routing);
  // The request's own timeout becomes the job's: given up after it, however many attempts.
  if (routing.timeout > 0) {
    job.deadline_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count() +
                           routing.timeout / 1'000'000;
  }
  const std::string request_id = job.id;
  enqueue_and_answer(*jobs_, job, writer, metrics_,
                     [request_id](const Status& why) { return queue_refused_response(why, request_id); });
  return true;
}

std::shared_ptr<ResponseSink> HttpSource::deferrable(std::shared_ptr<ResponseSink> sink, Endpoint endpoint,
                                                     const HttpRequest& http, const Routing& routing, bool stream,
                                                     const std::shared_ptr<ResponseWriter>& writer,
                                                     const std::string& request_id) {
  if (!jobs_ || stream || !defer_class_[static_cast<std::size_t>(routing.priority)]) return sink;
  // The job keeps no deadline: a deferred request is to complete eventually.
  return std::make_shared<DeferringSink>(std::move(sink), jobs_, async_job(endpoint, http, routing), writer, metrics_,
                                         request_id);
}

void HttpSource::handle_job_status(const HttpRequest& http, const std::shared_ptr<ResponseWriter>& writer,
                                   const AuthDecision& auth) {
  constexpr Endpoint endpoint = Endpoint::kJobs;
  const std::string id(http.path().substr(9));  // after "/v1/jobs/"
  if (!jobs_) {
    return respond_error(endpoint, writer,
                         ApiError{404, "this server keeps no jobs: its http source '" + name_ + "' has no async_jobs",
                                  "invalid_request_error", "", "async_unavailable"});
  }
  const std::optional<JobLookup> found = jobs_->lookup(id);
  // Another tenant's job is answered as unknown: a key learns nothing of jobs it does not own.
  if (!found || found->tenant != auth.tenant) {
    std::string shown;
    append_json_string_lossy(shown, id.size() > 80 ? id.substr(0, 80) + "..." : id);
    return respond_error(endpoint, writer,
                         ApiError{404, "no job " + shown + " is known here (never queued, or forgotten: the job table "
                                       "keeps async_jobs.max_tracked)",
                                  "invalid_request_error", "", "job_not_found"});
  }
  respond(endpoint, writer, job_status_response(id, *found));
}

}  // namespace sluice::http
