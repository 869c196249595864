// EventResponseSink: answers one request whose answer is a single JSON event a node emits
// (not streamed tokens): POST /v1/retrieve (the answer node's "retrieval" event) and
// POST /v1/embeddings (the embeddings node's "embeddings" event). On completion: 200 with
// make_body(event), X-Request-Id and, when the request asked (X-Sluice-Timings: 1), the
// per-stage timings header as the OpenAI endpoints send it; the request's error response when it failed (429 with
// Retry-After when shed, 504 past its deadline, 400 naming the field, ...); a 500 carrying
// `missing` when it completed without the event (the pipeline's path lacks the node); nothing
// but a 499 in the metrics when the client has gone. Tokens and other events are ignored.
//
// Memory: an event handed over (Request::emit_owned_event) is kept, not copied, and its buffer
// becomes the body and then the bytes on the wire, so a large answer is held once.
//
// Thread-safety: a Request serialises its sink calls, which is all this needs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/http/http_metrics.h"
#include "connectors/http/response_writer.h"
#include "graph/request.h"

namespace sluice::http {

class EventResponseSink final : public ResponseSink {
 public:
  // Builds the body from the event's text, which it may reuse (the event is not read after).
  using BodyFn = std::function<std::string(std::string event)>;
  EventResponseSink(std::shared_ptr<ResponseWriter> writer, std::string request_id, std::shared_ptr<HttpMetrics> metrics,
                    std::shared_ptr<const std::vector<std::string>> stage_names, Endpoint endpoint, std::string event_type,
                    std::string missing, BodyFn make_body)
      : writer_(std::move(writer)), request_id_(std::move(request_id)), metrics_(std::move(metrics)),
        stage_names_(std::move(stage_names)), endpoint_(endpoint), event_type_(std::move(event_type)),
        missing_(std::move(missing)), make_body_(std::move(make_body)) {}

  void on_token(std::string_view) override {}
  void on_event(std::string_view type, std::string_view json) override;
  void on_owned_event(std::string_view type, std::string&& json) override;
  void on_complete(const Request& request) override;

 private:
  std::shared_ptr<ResponseWriter> writer_;
  std::string request_id_;
  std::shared_ptr<HttpMetrics> metrics_;
  std::shared_ptr<const std::vector<std::string>> stage_names_;
  Endpoint endpoint_;
  std::string event_type_, missing_;
  BodyFn make_body_;
  std::string event_;  // the event's JSON object
};

}  // namespace sluice::http
