// Requests that run later as Kafka jobs, at the HTTP source (docs/kafka.md, HTTP to Kafka).
//
// Two ways in, both answered 202 {"id", "object": "sluice.job", "status": "queued"} once the job
// queue (job_queue.h) says the broker acknowledged the record:
//  - `X-Sluice-Async: true` on POST /v1/chat/completions, /v1/completions or /v1/retrieve: the
//    request is not run here; it is written as a job at once.
//  - a request of a class listed in async_jobs.defer_when_shed that admission sheds (a 429 of
//    cause kShed: the ladder, or its class queue full): DeferringSink writes it as a job instead
//    of answering 429. Streaming requests are never deferred (their clients wait for SSE).
// When the queue cannot take the job (full, stopping, no acknowledgement in time) the client
// gets 503 with Retry-After (async) or the 429 it would have had (deferred).
//
// GET /v1/jobs/{id} answers the job's state from the queue's table: queued, completed (the
// response the worker wrote) or failed (its last error); 404 when the table does not know the
// id. Job ids are "job-" and 32 hex digits from the OS's random source: unguessable, so the id
// is the only key a GET needs (as with a signed URL).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "connectors/http/http_metrics.h"
#include "connectors/http/http_parser.h"
#include "connectors/http/http_response.h"
#include "connectors/http/job_queue.h"
#include "connectors/http/openai_response.h"
#include "connectors/http/response_writer.h"
#include "graph/request.h"

namespace sluice::http {

// X-Sluice-Async: "true"/"1" or "false"/"0" (any case); absent is false; anything else 400.
std::optional<ApiError> read_async_header(const HttpRequest& http, bool* async);

// "job-" + 32 lowercase hex digits (128 random bits).
std::string new_job_id();

// What a job record is made of: the request as the client sent it, and how it was routed.
struct AsyncJob {
  std::string id;
  Endpoint endpoint = Endpoint::kChatCompletions;  // chat, completions or retrieve
  std::string body;                                // the request body (a JSON object)
  std::string priority;                            // the class name it was routed to
  std::int64_t deadline_unix_ms = 0;               // 0: the workers' default per attempt
  std::string traceparent;
  std::string tenant;  // the API key's tenant (Routing::tenant); the job runs as it and only it reads the answer
};
// The job as an OpenAI Batch input line (the codec's encode_job), keyed by its id.
JobRecord job_record(const AsyncJob& job);

// 202 {"id","object":"sluice.job","status":"queued"} with Location: /v1/jobs/{id}.
HttpResponse queued_response(const std::string& job_id);
// GET /v1/jobs/{id}: {"id","object":"sluice.job","status":"queued"|"completed"|"failed",
// "created_at" (unix s, when this process queued it; absent otherwise), "response" (the Batch
// output line's response: status_code, request_id, body), "error" ({code, message}),
// "attempts"}.
HttpResponse job_status_response(const std::string& job_id, const JobLookup& lookup);
// The 503 when the queue could not take a job.
HttpResponse queue_refused_response(const Status& why, const std::string& request_id);

// Writes `job` to `queue` and answers the client when the queue is done: 202, else
// `on_refused(status)`'s response. Counts the outcome in `metrics`.
void enqueue_and_answer(JobQueue& queue, const AsyncJob& job, std::shared_ptr<ResponseWriter> writer,
                        std::shared_ptr<HttpMetrics> metrics, std::function<HttpResponse(const Status&)> on_refused);

// Wraps the sink of a deferrable request: a completion with kOverloaded of cause kShed becomes
// a job (answered 202, or the 429 when the queue refuses it); anything else goes to `inner`.
class DeferringSink final : public ResponseSink {
 public:
  DeferringSink(std::shared_ptr<ResponseSink> inner, std::shared_ptr<JobQueue> queue, AsyncJob job,
                std::shared_ptr<ResponseWriter> writer, std::shared_ptr<HttpMetrics> metrics, std::string request_id)
      : inner_(std::move(inner)),
        queue_(std::move(queue)),
        job_(std::move(job)),
        writer_(std::move(writer)),
        metrics_(std::move(metrics)),
        request_id_(std::move(request_id)) {}

  void on_token(std::string_view piece) override { inner_->on_token(piece); }
  void on_event(std::string_view type, std::string_view json) override { inner_->on_event(type, json); }
  void on_complete(const Request& request) override;

 private:
  std::shared_ptr<ResponseSink> inner_;
  std::shared_ptr<JobQueue> queue_;
  AsyncJob job_;
  std::shared_ptr<ResponseWriter> writer_;
  std::shared_ptr<HttpMetrics> metrics_;
  std::string request_id_;
};

}  // namespace sluice::http
