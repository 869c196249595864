// The OpenAI models endpoints of an HTTP source: GET /v1/models (the list) and
// GET /v1/models/{id} (one model, or 404 model_not_found as OpenAI answers it). `created` is
// when the source started (Unix seconds): the models it serves exist from then on.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/http/http_response.h"

namespace sluice::http {

inline constexpr std::string_view kModelsPath = "/v1/models";

// The answer to GET `path` (kModelsPath or kModelsPath + "/" + id).
HttpResponse models_response(std::string_view path, const std::vector<std::string>& models, std::int64_t created);

}  // namespace sluice::http
