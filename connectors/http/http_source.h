// HttpSource: the embedded HTTP source of a pipeline (`kind: http` in a pipeline file). It
// serves the OpenAI-compatible API and the operational endpoints on one HttpServer:
//
//   POST /v1/chat/completions, POST /v1/completions   -> a sluice::Request submitted at this
//        source; answered as JSON, or as SSE when "stream": true
//   GET  /v1/models                                    -> the configured model names
//   GET  /healthz   liveness: 200 while the process serves HTTP
//   GET  /readyz    200 only when the pipeline is ready and not draining; JSON detail
//   GET  /metrics   the pipeline's MetricsRegistry in Prometheus text format 0.0.4
//
// Request headers: X-Priority (a class name of the pipeline, e.g. P0|P1|P2; unknown -> 400;
// absent -> config.default_priority), X-Request-Timeout ("2.5", "2.5s", "250ms": deadline
// from arrival; absent -> the pipeline's default), traceparent (kept when well formed),
// X-Sluice-Timings: 1 (per-stage timings in the X-Sluice-Timings response header, or as the
// last chunk of a stream). Responses carry X-Request-Id. A client that disconnects before its
// answer is complete cancels its request (AbortCause::kClientDisconnect).
//
// Lifecycle: construct (validates the config; throws std::invalid_argument naming the source
// and field) -> start() (binds; throws std::runtime_error) -> stop_accepting() when the
// pipeline drains (SIGTERM) -> stop() before the pipeline is destroyed. The intake (pipeline)
// and its MetricsRegistry must outlive the source. Thread-safety: lifecycle calls from one
// thread; the handlers run on the server's event loops.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "connectors/http/http_metrics.h"
#include "connectors/http/http_server.h"
#include "connectors/http/openai_request.h"
#include "connectors/http/request_intake.h"
#include "sluice/nodes.pb.h"

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

  // After start(): the bound port (useful with port 0) and "host:port".
  std::uint16_t port() const { return server_->port(); }
  std::string address() const;
  const std::string& name() const { return name_; }
  const HttpServer& server() const { return *server_; }

 private:
  void init(const HttpSourceConfig& config);
  void handle(HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer);
  void handle_completion(Endpoint endpoint, HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer);
  void respond(Endpoint endpoint, const std::shared_ptr<ResponseWriter>& writer, HttpResponse response);
  void respond_error(Endpoint endpoint, const std::shared_ptr<ResponseWriter>& writer, const ApiError& error,
                     std::vector<HttpHeader> headers = {});
  HttpResponse readiness() const;

  std::unique_ptr<RequestIntake> owned_intake_;
  RequestIntake& intake_;
  std::string name_;
  std::string host_;
  std::vector<std::string> models_;
  int default_class_ = 0;
  std::shared_ptr<HttpMetrics> metrics_;
  std::shared_ptr<const std::vector<std::string>> stage_names_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace sluice::http
