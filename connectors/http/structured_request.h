// The structured-output fields of an OpenAI request: `response_format` (text, json_object,
// json_schema) and `tools` / `tool_choice`, read into RequestInput::structured with the grammar
// compiled (or found in GrammarCache::shared()).
//
//  - json_object: any JSON object. json_schema: `json_schema.schema`, in OpenAI's strict
//    subset (inference/constrain/json_grammar.h); a keyword beyond it is a 400 naming the
//    keyword's path. `strict` is accepted either way: the schema is always enforced.
//  - tools with tool_choice {"type":"function","function":{"name":..}}: the answer is that
//    function's arguments, constrained to its `parameters`. tool_choice "required": the answer
//    picks a function and its arguments ({"name":..,"arguments":..}, every function's
//    parameters as one anyOf). "none": tools are ignored, the answer is text.
//    tool_choice "auto" (the default when tools are sent) is refused: deciding between text
//    and a call needs a model trained for tool calls and its template, which Sluice's models
//    do not have; a client says which it wants.
//  - the legacy `functions` / `function_call` are refused, naming `tools` instead.
//
// Thread-safety: pure functions (the grammar cache is thread-safe).
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "connectors/http/openai_request.h"

namespace sluice::http {

// `doc` is the parsed body; `body` its text (schemas are re-read from it with their property
// order, which the default JSON object sorts away).
std::optional<ApiError> read_structured_output(std::string_view body, const nlohmann::json& doc, StructuredOutput* out);

}  // namespace sluice::http
