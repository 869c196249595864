#include "connectors/http/retrieval_response_sink.h"

#include "connectors/http/openai_response.h"

namespace sluice::http {

void RetrievalResponseSink::on_event(std::string_view type, std::string_view json) {
  if (type == "retrieval") retrieval_.assign(json);
}

void RetrievalResponseSink::on_complete(const Request& request) {
  const Status& status = request.status();
  if (status.code == StatusCode::kCancelled && writer_->closed()) {
    metrics_->count_response(Endpoint::kRetrieve, 499);  // the client is gone (nginx's 499)
    return;
  }
  Status outcome = status;
  if (outcome.ok() && (retrieval_.size() < 2 || retrieval_.front() != '{')) {
    outcome = Status::Error(StatusCode::kInternal,
                            "the pipeline finished the retrieve request without ranked chunks; its path must end in an "
                            "answer node");
  }
  if (!outcome.ok()) {
    HttpResponse response = error_response_for_status(outcome, request_id_);
    metrics_->count_response(Endpoint::kRetrieve, response.status);
    writer_->send(response);
    return;
  }
  // {"object":"retrieval","id":"retr-N", ...the event's fields}
  std::string body = "{\"object\":\"retrieval\",\"id\":";
  append_json_string(body, request_id_);
  if (retrieval_.size() > 2) body += ',';
  body.append(retrieval_, 1, std::string::npos);
  metrics_->count_response(Endpoint::kRetrieve, 200);
  writer_->send(HttpResponse{200, "application/json", {{"X-Request-Id", request_id_}}, std::move(body)});
}

}  // namespace sluice::http
