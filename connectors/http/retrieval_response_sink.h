// The answer to one POST /v1/retrieve: the ranked chunks as JSON.
//
// The pipeline's answer node emits one "retrieval" event for a RequestInput::Kind::kRetrieve
// request (nodes/retrieval/node/retrieval_nodes.h: {"version","query_type","fusion","chunks":
// [{rank, score, doc_id, title, text, begin, end, bm25_rank, bm25_score, dense_rank,
// dense_score, rerank_score?}]}); that object is the response body, with "object":
// "retrieval" and "id" added (event_response_sink.h: errors, the 500 when a pipeline completes
// the request without the event, 499). Tokens and other events are ignored: the endpoint
// returns ranked chunks, not text.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/http/http_metrics.h"
#include "connectors/http/response_writer.h"
#include "graph/request.h"

namespace sluice::http {

// The body of a successful retrieve answer: {"object":"retrieval","id":<request_id>, ...the
// "retrieval" event's fields}. `retrieval_event` must be a JSON object. Shared with the Kafka
// job source, whose retrieve jobs answer the same body.
std::string retrieval_response_body(std::string_view request_id, std::string retrieval_event);

std::shared_ptr<ResponseSink> make_retrieval_response_sink(std::shared_ptr<ResponseWriter> writer, std::string request_id,
                                                           std::shared_ptr<HttpMetrics> metrics,
                                                           std::shared_ptr<const std::vector<std::string>> stage_names);

}  // namespace sluice::http
