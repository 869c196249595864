// The answer to a RequestInput::Kind::kEmbed request: the `embeddings` node computes an
// EmbeddingResult and emits it as one "embeddings" event (kEmbeddingEvent) before completing
// the request; connectors wrap that event's JSON into their response (connectors/http/
// embeddings_api.h). In graph/ so connectors never link the encoder.
//
// The event's JSON: {"data":[{"object":"embedding","index":i,"embedding":[...] | "<base64>"}...],
// "usage":{"prompt_tokens":n,"total_tokens":n}} where base64 is the little-endian float32 bytes
// of each vector (OpenAI's encoding_format "base64") and floats are written in their shortest
// form that reads back exactly.
#pragma once

#include <string>
#include <vector>

namespace sluice {

inline constexpr const char* kEmbeddingEvent = "embeddings";

struct EmbeddingResult {
  int dimension = 0;
  std::vector<float> vectors;  // inputs x dimension, row-major
  int prompt_tokens = 0;       // the inputs' tokens before the model's length cut
};

std::string embedding_event_json(const EmbeddingResult& result, bool base64);

}  // namespace sluice
