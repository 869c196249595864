// HttpSource's POST /v1/embeddings (http_source.h): parse, check the model, route, submit.
#include "connectors/http/embeddings_api.h"
#include "connectors/http/event_response_sink.h"
#include "connectors/http/http_source.h"
#include "graph/external_ids.h"

namespace sluice::http {
namespace {

// 200 with OpenAI's body around the embeddings node's event, the request's error response, or
// a 500 when the pipeline's path has no `embeddings` node (event_response_sink.h).
std::shared_ptr<ResponseSink> make_embeddings_response_sink(std::shared_ptr<ResponseWriter> writer, std::string request_id,
                                                            std::string model, std::shared_ptr<HttpMetrics> metrics,
                                                            std::shared_ptr<const std::vector<std::string>> stage_names) {
  return std::make_shared<EventResponseSink>(
      std::move(writer), std::move(request_id), std::move(metrics), std::move(stage_names), Endpoint::kEmbeddings, kEmbeddingEvent,
      "the pipeline finished the embeddings request without vectors; its path must pass an `embeddings` node",
      [model = std::move(model)](std::string event) { return embeddings_response_body(std::move(event), model); });
}

}  // namespace

void HttpSource::handle_embeddings(HttpRequest& http, const std::shared_ptr<ResponseWriter>& writer,
                                   const AuthDecision& auth) {
  constexpr Endpoint endpoint = Endpoint::kEmbeddings;
  if (auto e = refuse_when_draining()) return respond_error(endpoint, writer, *e);
  EmbeddingsRequest parsed;
  if (auto e = parse_embeddings_request(http.body, &parsed)) return respond_error(endpoint, writer, *e);
  if (auto e = unknown_model(parsed.model)) return respond_error(endpoint, writer, *e);
  Routing routing;
  if (auto e = read_routing(http, auth, &routing)) return respond_error(endpoint, writer, *e);
  // An async job runs on the workers, whose pipeline has the encoder, not necessarily this one.
  if (answered_async(endpoint, http, routing, false, writer)) return;
  if (!answers_embeddings_) {
    ApiError e{404, "this pipeline serves no embeddings: none of its nodes is an `embeddings` node", "invalid_request_error",
               "", "no_embeddings_node"};
    return respond_error(endpoint, writer, e);
  }
  RequestInput input;
  input.kind = RequestInput::Kind::kEmbed;
  input.model = parsed.model;
  input.inputs = std::move(parsed.inputs);
  input.embeddings_base64 = parsed.base64;
  const std::uint64_t id = intake_.next_request_id();
  std::string external_id = external_request_id("embd", id);
  auto sink = deferrable(make_embeddings_response_sink(writer, external_id, parsed.model, metrics_, stage_names_),
                         endpoint, http, routing, false, writer, external_id);
  auto request = std::make_shared<Request>(id, std::move(input), std::move(sink));
  request->external_id = std::move(external_id);
  submit(routing, http, request, writer);
}

}  // namespace sluice::http
