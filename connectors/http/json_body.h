// Reading JSON request bodies with errors a client can act on; shared by the OpenAI endpoints
// (openai_request.h) and Sluice's own (retrieval_api.h), so every 400 has one shape: the
// OpenAI error body with `param` naming the field and `code` invalid_value / invalid_type.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "connectors/http/openai_request.h"
#include "graph/json_reading.h"

namespace sluice::http {

// A 400 invalid_value naming `param` ("" for the body as a whole).
ApiError invalid_value(std::string param, std::string message);
// A 400 unsupported naming `param`: a field that would change what the answer must be and
// that Sluice cannot honour (refused, never ignored).
ApiError unsupported(std::string param, std::string message);
// A 400 invalid_type: "'field' must be <expected>, got <what it is>".
ApiError wrong_type(const std::string& field, std::string_view expected, const nlohmann::json& got);
using sluice::json_type_name;  // "a string", "an array", ... (graph/json_reading.h)

// Parses a request body that must be one JSON object. Refuses nesting deeper than 64 levels
// before parsing (a hostile body must not exhaust the parser's stack) and reports malformed
// JSON with its line and column.
std::optional<ApiError> parse_json_object(std::string_view body, nlohmann::json* out);

}  // namespace sluice::http
