// EmbeddingsResponseSink: answers one POST /v1/embeddings from the "embeddings" event the
// pipeline's `embeddings` node emits (graph/embedding_result.h), in OpenAI's shape
// (embeddings_api.h). A request that fails gets the usual error response (400 naming the
// field and limit, 429 with Retry-After when shed, 504 past its deadline, ...); one the
// pipeline completes without a result (no `embeddings` node on its path) gets a 500 saying so.
//
// Thread-safety: a Request serialises its sink calls, which is all this needs.
#pragma once

#include <memory>
#include <string>

#include "connectors/http/http_metrics.h"
#include "connectors/http/response_writer.h"
#include "graph/request.h"

namespace sluice::http {

class EmbeddingsResponseSink final : public ResponseSink {
 public:
  EmbeddingsResponseSink(std::shared_ptr<ResponseWriter> writer, std::string request_id, std::string model,
                         std::shared_ptr<HttpMetrics> metrics)
      : writer_(std::move(writer)), request_id_(std::move(request_id)), model_(std::move(model)), metrics_(std::move(metrics)) {}

  void on_token(std::string_view) override {}
  void on_event(std::string_view type, std::string_view json) override;
  void on_complete(const Request& request) override;

 private:
  std::shared_ptr<ResponseWriter> writer_;
  std::string request_id_;
  std::string model_;
  std::shared_ptr<HttpMetrics> metrics_;
  std::string embeddings_;  // the event's JSON object
};

}  // namespace sluice::http
