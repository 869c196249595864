#include "connectors/http/async_jobs.h"

#include <openssl/rand.h>

#include <nlohmann/json.hpp>
#include <random>

#include "connectors/kafka/job_codec.h"

namespace sluice::http {
namespace {

kafka::JobEndpoint job_endpoint(Endpoint endpoint) {
  switch (endpoint) {
    case Endpoint::kCompletions: return kafka::JobEndpoint::kCompletions;
    case Endpoint::kEmbeddings: return kafka::JobEndpoint::kEmbeddings;
    case Endpoint::kRetrieve: return kafka::JobEndpoint::kRetrieve;
    default: return kafka::JobEndpoint::kChatCompletions;
  }
}

}  // namespace

std::optional<ApiError> read_async_header(const HttpRequest& http, bool* async) {
  *async = false;
  const std::string* value = http.header("x-sluice-async");
  if (!value) return std::nullopt;
  std::string v;
  for (char c : *value) v += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (v == "true" || v == "1") {
    *async = true;
    return std::nullopt;
  }
  if (v == "false" || v == "0") return std::nullopt;
  return ApiError{400, "X-Sluice-Async must be true or false", "invalid_request_error", "X-Sluice-Async",
                  "invalid_value"};
}

std::string new_job_id() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    // The OS's random source failed (it does not on Linux): fall back to random_device, which
    // reads the same source through another path.
    std::random_device device;
    for (auto& b : bytes) b = static_cast<unsigned char>(device());
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "job-";
  for (unsigned char b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

JobRecord job_record(const AsyncJob& job) {
  kafka::Job j;
  j.id = job.id;
  j.custom_id = job.id;
  j.endpoint = job_endpoint(job.endpoint);
  j.body = job.body;
  j.priority = job.priority;
  j.deadline_unix_ms = job.deadline_unix_ms;
  j.traceparent = job.traceparent;
  j.tenant = job.tenant;
  j.encoding = kafka::JobEncoding::kJson;
  return JobRecord{job.id, kafka::encode_job(j), job.tenant, job.traceparent};
}

HttpResponse queued_response(const std::string& job_id) {
  nlohmann::json body = {{"id", job_id}, {"object", "sluice.job"}, {"status", "queued"}};
  return HttpResponse{202, "application/json", {{"Location", "/v1/jobs/" + job_id}}, body.dump()};
}

HttpResponse job_status_response(const std::string& job_id, const JobLookup& lookup) {
  nlohmann::json body = {{"id", job_id}, {"object", "sluice.job"}};
  if (lookup.queued_unix_ms > 0) body["created_at"] = lookup.queued_unix_ms / 1000;
  if (lookup.state == JobLookup::State::kQueued) {
    body["status"] = "queued";
    return HttpResponse{200, "application/json", {}, body.dump()};
  }
  // A result line the workers wrote (job_codec.h); the table only keeps lines that parse.
  const auto line = nlohmann::json::parse(lookup.result_line, nullptr, false);
  const bool ok = line.is_object() && line.contains("response") && line["response"].is_object();
  body["status"] = ok ? "completed" : "failed";
  body["response"] = ok ? line["response"] : nlohmann::json(nullptr);
  body["error"] = line.is_object() && line.contains("error") ? line["error"] : nlohmann::json(nullptr);
  if (line.is_object() && line.contains("x_sluice") && line["x_sluice"].is_object() &&
      line["x_sluice"].contains("attempts")) {
    body["attempts"] = line["x_sluice"]["attempts"];
  }
  return HttpResponse{200, "application/json", {}, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

HttpResponse queue_refused_response(const Status& why, const std::string& request_id) {
  ApiError e{503, "the job could not be queued: " + why.message, "service_unavailable", "", "job_queue_unavailable"};
  return HttpResponse{503, "application/json", {{"Retry-After", "1"}, {"X-Request-Id", request_id}}, error_body(e)};
}

void enqueue_and_answer(JobQueue& queue, const AsyncJob& job, std::shared_ptr<ResponseWriter> writer,
                        std::shared_ptr<HttpMetrics> metrics, std::function<HttpResponse(const Status&)> on_refused) {
  const Endpoint endpoint = job.endpoint;
  const std::string id = job.id;
  queue.enqueue(job_record(job), [writer = std::move(writer), metrics = std::move(metrics), endpoint, id,
                                  on_refused = std::move(on_refused)](Status status) {
    HttpResponse response = status.ok() ? queued_response(id) : on_refused(status);
    (status.ok() ? metrics->async_jobs_queued : metrics->async_jobs_refused).inc();
    metrics->count_response(endpoint, response.status);
    writer->send(response);
  });
}

void DeferringSink::on_complete(const Request& request) {
  const Status& status = request.status();
  if (status.code != StatusCode::kOverloaded || status.cause != AbortCause::kShed || writer_->closed()) {
    return inner_->on_complete(request);
  }
  metrics_->async_jobs_deferred.inc();
  // The queue refusing the job leaves the client the answer it would have had: the 429.
  HttpResponse shed = error_response_for_status(status, request_id_);
  enqueue_and_answer(*queue_, job_, writer_, metrics_, [shed](const Status&) { return shed; });
}

}  // namespace sluice::http
