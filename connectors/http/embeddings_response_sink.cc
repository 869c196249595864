#include "connectors/http/embeddings_response_sink.h"

#include "connectors/http/embeddings_api.h"
#include "connectors/http/openai_response.h"

namespace sluice::http {

void EmbeddingsResponseSink::on_event(std::string_view type, std::string_view json) {
  if (type == kEmbeddingEvent) embeddings_.assign(json);
}

void EmbeddingsResponseSink::on_complete(const Request& request) {
  const Status& status = request.status();
  if (status.code == StatusCode::kCancelled && writer_->closed()) {
    metrics_->count_response(Endpoint::kEmbeddings, 499);  // the client is gone (nginx's 499)
    return;
  }
  Status outcome = status;
  if (outcome.ok() && (embeddings_.size() < 2 || embeddings_.front() != '{')) {
    outcome = Status::Error(StatusCode::kInternal,
                            "the pipeline finished the embeddings request without vectors; its path must pass an "
                            "`embeddings` node");
  }
  if (!outcome.ok()) {
    HttpResponse response = error_response_for_status(outcome, request_id_);
    metrics_->count_response(Endpoint::kEmbeddings, response.status);
    writer_->send(response);
    return;
  }
  metrics_->count_response(Endpoint::kEmbeddings, 200);
  writer_->send(HttpResponse{200, "application/json", {{"X-Request-Id", request_id_}},
                             embeddings_response_body(embeddings_, model_)});
}

}  // namespace sluice::http
