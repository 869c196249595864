// OpenAI request bodies (POST /v1/chat/completions, POST /v1/completions) into RequestInput.
//
// Validation is strict about what we use and lenient about what we ignore: a known field of
// the wrong type or out of range is a 400 naming the field (`param`), malformed JSON is a 400
// saying where (line, column), unknown fields are ignored because OpenAI clients send many
// we do not act on (user, logprobs, ...). `n` other than 1 and non-text message parts are
// refused rather than silently ignored.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "graph/clock.h"
#include "graph/request.h"

namespace sluice::http {

// An error the client can act on, rendered as {"error":{"message","type","param","code"}}.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending field ("messages[0].role"); empty when none
  std::string code;   // machine-readable; empty when none
};

struct OpenAiRequest {
  RequestInput input;
  bool include_usage = false;  // stream_options.include_usage
};

// Parses and validates a body for `kind` (kChat or kCompletion). Returns the error instead
// when the body is unusable.
std::optional<ApiError> parse_openai_request(std::string_view body, RequestInput::Kind kind, OpenAiRequest* out);

// "2.5", "2.5s", "250ms" -> nanoseconds; nullopt when malformed or not positive.
std::optional<Nanos> parse_timeout_header(std::string_view value);

// A W3C traceparent header ("00-<32 hex>-<16 hex>-<2 hex>") is well formed.
bool valid_traceparent(std::string_view value);

}  // namespace sluice::http
