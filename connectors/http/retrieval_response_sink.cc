#include "connectors/http/retrieval_response_sink.h"

#include "connectors/http/event_response_sink.h"
#include "connectors/http/openai_response.h"

namespace sluice::http {

std::string retrieval_response_body(std::string_view request_id, std::string retrieval_event) {
  std::string members = "\"object\":\"retrieval\",\"id\":";
  append_json_string(members, request_id);
  return prepend_members(std::move(retrieval_event), members);
}

std::shared_ptr<ResponseSink> make_retrieval_response_sink(std::shared_ptr<ResponseWriter> writer, std::string request_id,
                                                           std::shared_ptr<HttpMetrics> metrics,
                                                           std::shared_ptr<const std::vector<std::string>> stage_names) {
  std::string id = request_id;
  return std::make_shared<EventResponseSink>(
      std::move(writer), std::move(request_id), std::move(metrics), std::move(stage_names), Endpoint::kRetrieve, "retrieval",
      "the pipeline finished the retrieve request without ranked chunks; its path must end in an answer node",
      [id = std::move(id)](std::string event) { return retrieval_response_body(id, std::move(event)); });
}

}  // namespace sluice::http
