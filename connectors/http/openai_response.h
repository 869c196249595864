// OpenAI response bodies, written by hand into strings: the whole response
// (chat.completion / text_completion), the SSE chunks of a stream
// (chat.completion.chunk / text_completion), error bodies and the per-request stage timings.
// Built without a JSON DOM because they are on the per-token path.
//
// Thread-safety: pure functions; ChunkWriter is used by one sink at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/http/http_response.h"
#include "connectors/http/openai_request.h"
#include "graph/request.h"

namespace sluice::http {

// Appends `s` as a JSON string literal (quotes included). Bytes >= 0x80 pass through: `s`
// must be UTF-8 (request strings are checked by the JSON parser, token text by TextStream).
void append_json_string(std::string& out, std::string_view s);
// The same for text that may not be UTF-8: error messages quote what the client sent (a path, a
// header value, the bytes the JSON parser stopped at). Each byte that does not belong to a
// well-formed UTF-8 sequence becomes U+FFFD, so the body stays valid JSON.
void append_json_string_lossy(std::string& out, std::string_view s);

// Puts `members` (JSON object members, `"a":1,"b":2`, no braces) first in `object` (a JSON
// object's text, `{...}`), in the object's own buffer: `{members,...}`, or `{members}` when the
// object is empty. Used to wrap a node's large event as an API body without copying it.
std::string prepend_members(std::string object, std::string_view members);

// {"error":{"message":...,"type":...,"param":...|null,"code":...|null}}; valid JSON whatever
// bytes the fields hold (append_json_string_lossy).
std::string error_body(const ApiError& error);
// The ApiError for a request that ended with `status` (not ok).
ApiError error_for_status(const Status& status);
// The whole error response for a request that ended with `status` (not ok): the error body,
// X-Request-Id, and Retry-After (whole seconds, at least 1) when it was shed (429).
HttpResponse error_response_for_status(const Status& status, const std::string& request_id);

// {"id":..,"stages":[{"stage":..,"queue_us":..,"service_us":..[,"degraded":"skip"|"shrink"]}...],
// "total_us":..[,"ttft_us":..]}
std::string timings_json(const Request& request, const std::vector<std::string>& stage_names);
// The X-Sluice-Degraded header's value: each stage a latency budget degraded, as
// "stage=action" joined by ", " (e.g. "rerank=skip, generate=shrink"); empty when none.
std::string degradations_header(const Request& request, const std::vector<std::string>& stage_names);
// The same as a JSON object for a stream's finish chunk (`sluice_degraded`), e.g.
// {"rerank":"skip","generate":"shrink"}; empty when none.
std::string degradations_json(const Request& request, const std::vector<std::string>& stage_names);

// Writes the JSON of one request's answer; knows its id, model, creation time and kind.
class ChunkWriter {
 public:
  ChunkWriter(RequestInput::Kind kind, std::string_view id, std::string_view model, std::int64_t created);

  // The answer is a tool call (StructuredOutput::kToolCall): the generated text becomes
  // message.tool_calls[0] (content null) and a finish_reason "stop" becomes "tool_calls".
  // `name`: the function called, or empty when the text names it ({"name":..,"arguments":..}).
  void answer_as_tool_call(std::string name, std::string call_id);
  // answer_as_tool_call when `structured` asks for a tool call (the call's id is "call_" and
  // this answer's id without its kind); nothing otherwise.
  void shape_for(const StructuredOutput& structured);
  bool tool_call() const { return tool_call_; }
  // A stream's one chunk carrying the whole call (the arguments are buffered until they are
  // complete: an SDK accumulates deltas either way).
  std::string tool_call_event(std::string_view generated);

  // SSE event "data: {chunk}\n\n" carrying `piece`; the first content chunk of a chat
  // stream also carries the assistant role.
  std::string content_event(std::string_view piece);
  // Side information a pipeline attaches to an answer (a node's named event: the sources of a
  // cited answer, the stage timings): (type, JSON), written as extra top-level fields
  // "sluice_<type>" of an ordinary object, which OpenAI's SDKs keep and never mistake for a
  // chunk of content.
  using Extras = std::vector<std::pair<std::string, std::string>>;

  // The chunk with finish_reason and an empty delta, carrying `extras`.
  std::string finish_event(std::string_view finish_reason, const Extras& extras = {});
  // The chunk with empty choices and `usage` (stream_options.include_usage).
  std::string usage_event(const Usage& usage);
  // A chunk with empty choices and "sluice_timings": {...}, for a stream that failed after it
  // started (a finished one carries its timings on the finish chunk).
  std::string timings_event(std::string_view timings);
  // "data: {"error":{...}}\n\n" for a stream that failed after it started.
  static std::string error_event(const ApiError& error);
  static constexpr std::string_view kDoneEvent = "data: [DONE]\n\n";

  // The whole non-streaming answer, carrying `extras`.
  std::string full_response(std::string_view text, std::string_view finish_reason, const Usage& usage,
                            const Extras& extras) const;

 private:
  std::string chunk_prefix() const;  // "data: {"id":..,"object":..,"created":..,"model":..,"choices":"
  void append_tool_calls(std::string& out, std::string_view generated, bool with_index) const;  // "tool_calls":[..]
  std::string_view finish_name(std::string_view finish_reason) const;
  static void append_extras(std::string& out, const Extras& extras);  // ,"sluice_<type>":json ...

  RequestInput::Kind kind_;
  std::string head_;     // "\"id\":\"..\",\"object\":\"X\",\"created\":N,\"model\":\"..\"" for chunk objects
  std::string id_, model_;
  std::int64_t created_;
  bool role_sent_ = false;
  bool tool_call_ = false;
  std::string tool_name_, call_id_;
};

}  // namespace sluice::http
