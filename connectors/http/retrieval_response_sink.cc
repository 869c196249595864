#include "connectors/http/retrieval_response_sink.h"

#include "connectors/http/openai_response.h"

namespace sluice::http {

std::string retrieval_response_body(std::string_view request_id, std::string_view retrieval_event) {
  std::string body = "{\"object\":\"retrieval\",\"id\":";
  append_json_string(body, request_id);
  if (retrieval_event.size() > 2) body += ',';
  body.append(retrieval_event.substr(1));
  return body;
}

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
  std::string body = retrieval_response_body(request_id_, retrieval_);
  metrics_->count_response(Endpoint::kRetrieve, 200);
  writer_->send(HttpResponse{200, "application/json", {{"X-Request-Id", request_id_}}, std::move(body)});
}

}  // namespace sluice::http
