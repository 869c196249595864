// RetrievalResponseSink: answers one POST /v1/retrieve with the ranked chunks as JSON.
//
// The pipeline's answer node emits one "retrieval" event for a RequestInput::Kind::kRetrieve
// request (nodes/retrieval/node/retrieval_nodes.h: {"version","query_type","fusion","chunks":
// [{rank, score, doc_id, title, text, begin, end, bm25_rank, bm25_score, dense_rank,
// dense_score, rerank_score?}]}); that object is the response body, with "object":
// "retrieval" and "id" added. A request that fails gets the usual error response (429 with
// Retry-After when shed, 504 past its deadline, ...). A pipeline that completes the request
// without that event (no answer node on its path) gets a 500 saying so rather than an empty
// 200. Tokens and other events are ignored: the endpoint returns ranked chunks, not text.
//
// Thread-safety: a Request serialises its sink calls, which is all this needs.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "connectors/http/http_metrics.h"
#include "connectors/http/response_writer.h"
#include "graph/request.h"

namespace sluice::http {

// The body of a successful retrieve answer: {"object":"retrieval","id":<request_id>, ...the
// "retrieval" event's fields}. `retrieval_event` must be a JSON object. Shared with the Kafka
// job source, whose retrieve jobs answer the same body.
std::string retrieval_response_body(std::string_view request_id, std::string_view retrieval_event);

class RetrievalResponseSink final : public ResponseSink {
 public:
  RetrievalResponseSink(std::shared_ptr<ResponseWriter> writer, std::string request_id, std::shared_ptr<HttpMetrics> metrics)
      : writer_(std::move(writer)), request_id_(std::move(request_id)), metrics_(std::move(metrics)) {}

  void on_token(std::string_view) override {}
  void on_event(std::string_view type, std::string_view json) override;
  void on_complete(const Request& request) override;

 private:
  std::shared_ptr<ResponseWriter> writer_;
  std::string request_id_;
  std::shared_ptr<HttpMetrics> metrics_;
  std::string retrieval_;  // the "retrieval" event's JSON object
};

}  // namespace sluice::http
