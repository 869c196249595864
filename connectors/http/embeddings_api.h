// POST /v1/embeddings, OpenAI's shape, shared by the HTTP source and the Kafka job source:
//   request  {"input": "text" | ["text", ...], "model": "...", "encoding_format": "float" |
//            "base64", "user": "..." (ignored)}
//   response {"object":"list","data":[{"object":"embedding","index":i,"embedding":[...] |
//            "<base64>"}],"model":"...","usage":{"prompt_tokens":n,"total_tokens":n}}
// base64 is the little-endian float32 bytes of each vector, as OpenAI's SDKs decode it.
// Refused with a 400 naming the field: token-id inputs (arrays of integers; this server embeds
// text), `dimensions` (the model has one output size), an empty input list, and any unknown
// field. Limits on the number and length of inputs are the `embeddings` node's
// (max_inputs, max_input_chars), since they belong to the model it serves.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/http/openai_request.h"
#include "graph/embedding_result.h"

namespace sluice::http {

struct EmbeddingsRequest {
  std::vector<std::string> inputs;
  std::string model;
  bool base64 = false;
};

std::optional<ApiError> parse_embeddings_request(std::string_view body, EmbeddingsRequest* out);

// The response body: the `embeddings` node's event JSON (graph/embedding_result.h: data and
// usage) with "object":"list" and the model named in the request added.
std::string embeddings_response_body(std::string embeddings_event, std::string_view model);

}  // namespace sluice::http
