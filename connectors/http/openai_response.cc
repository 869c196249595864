#include "connectors/http/openai_response.h"

#include <cmath>
#include <cstdio>
#include <utility>

#include <nlohmann/json.hpp>

#include "graph/system_fingerprint.h"
#include "graph/utf8.h"

namespace sluice::http {
namespace {

void append_usage(std::string& out, const Usage& usage) {
  out += "{\"prompt_tokens\":";
  out += std::to_string(usage.prompt_tokens);
  out += ",\"completion_tokens\":";
  out += std::to_string(usage.completion_tokens);
  out += ",\"total_tokens\":";
  out += std::to_string(usage.prompt_tokens + usage.completion_tokens);
  out += '}';
}

void append_micros(std::string& out, Nanos n) {
  char buf[32];
  int len = std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(n) / 1e3);
  out.append(buf, static_cast<std::size_t>(len));
}

constexpr char kHex[] = "0123456789abcdef";

// One byte below 0x80 (or any byte, for append_json_string), escaped as JSON needs.
inline void append_escaped(std::string& out, char ch) {
  auto c = static_cast<unsigned char>(ch);
  switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    default:
      if (c < 0x20 || c == 0x7f) {
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
      } else {
        out += ch;
      }
  }
}


}  // namespace

std::string prepend_members(std::string object, std::string_view members) {
  std::string front(members);
  if (object.size() > 2) front += ',';
  object.replace(0, 1, "{" + front);
  return object;
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) append_escaped(out, ch);
  out += '"';
}

void append_json_string_lossy(std::string& out, std::string_view s) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      append_escaped(out, s[i++]);
      continue;
    }
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  out += '"';
}

std::string error_body(const ApiError& e) {
  std::string out = "{\"error\":{\"message\":";
  append_json_string_lossy(out, e.message);
  out += ",\"type\":";
  append_json_string_lossy(out, e.type);
  out += ",\"param\":";
  if (e.param.empty()) out += "null";
  else append_json_string_lossy(out, e.param);
  out += ",\"code\":";
  if (e.code.empty()) out += "null";
  else append_json_string_lossy(out, e.code);
  out += "}}";
  return out;
}

ApiError error_for_status(const Status& status) {
  ApiError e;
  e.status = http_status_for(status.code);
  e.message = status.message.empty() ? std::string(status_code_name(status.code)) : status.message;
  e.code = status.api_code.empty() ? std::string(status_code_name(status.code)) : status.api_code;
  e.param = status.param;
  switch (status.code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound: e.type = "invalid_request_error"; break;
    case StatusCode::kOverloaded: e.type = "rate_limit_error"; break;
    case StatusCode::kDeadlineExceeded: e.type = "timeout_error"; break;
    case StatusCode::kCancelled: e.type = "cancelled"; break;
    case StatusCode::kUnavailable: e.type = "service_unavailable"; break;
    default: e.type = "server_error"; break;
  }
  return e;
}

HttpResponse error_response_for_status(const Status& status, const std::string& request_id) {
  ApiError error = error_for_status(status);
  HttpResponse response{error.status, "application/json", {{"X-Request-Id", request_id}}, error_body(error)};
  if (status.code == StatusCode::kOverloaded) {
    double seconds = std::ceil(status.retry_after_seconds);
    response.headers.push_back({"Retry-After", std::to_string(seconds < 1 ? 1 : static_cast<long long>(seconds))});
  }
  return response;
}

std::string timings_json(const Request& request, const std::vector<std::string>& stage_names) {
  std::string out = "{\"id\":";
  append_json_string(out, request.external_id);
  out += ",\"stages\":[";
  bool first = true;
  for (const StageStamp& s : request.trace().stamps()) {
    if (!first) out += ',';
    first = false;
    out += "{\"stage\":";
    append_json_string(out, s.stage < stage_names.size() ? stage_names[s.stage] : "stage" + std::to_string(s.stage));
    out += ",\"queue_us\":";
    append_micros(out, s.started - s.queued);
    out += ",\"service_us\":";
    // A stage not finished yet is the one completing the request (the runtime stamps its end
    // only after the node returns): its work on this request ended at completion.
    const Nanos end = s.finished > s.started ? s.finished : request.completed_at;
    append_micros(out, end > s.started ? end - s.started : 0);
    if (s.degradation != Degradation::kNone) {
      out += ",\"degraded\":";
      append_json_string(out, degradation_name(s.degradation));
    }
    out += '}';
  }
  out += "],\"total_us\":";
  append_micros(out, request.completed_at > request.arrival ? request.completed_at - request.arrival : 0);
  if (request.first_token_at > 0) {
    out += ",\"ttft_us\":";
    append_micros(out, request.first_token_at - request.arrival);
  }
  out += '}';
  return out;
}

namespace {
// Calls f(stage name, action name) for each stage that degraded `request`, in stage order.
template <class F>
void for_each_degradation(const Request& request, const std::vector<std::string>& stage_names, F&& f) {
  for (const StageStamp& s : request.trace().stamps()) {
    if (s.degradation == Degradation::kNone) continue;
    f(s.stage < stage_names.size() ? stage_names[s.stage] : "stage" + std::to_string(s.stage), degradation_name(s.degradation));
  }
}
}  // namespace

std::string degradations_header(const Request& request, const std::vector<std::string>& stage_names) {
  std::string out;
  for_each_degradation(request, stage_names, [&](const std::string& stage, std::string_view action) {
    if (!out.empty()) out += ", ";
    out += stage;
    out += '=';
    out += action;
  });
  return out;
}

std::string degradations_json(const Request& request, const std::vector<std::string>& stage_names) {
  std::string out;
  for_each_degradation(request, stage_names, [&](const std::string& stage, std::string_view action) {
    out += out.empty() ? "{" : ",";
    append_json_string(out, stage);
    out += ':';
    append_json_string(out, action);
  });
  if (!out.empty()) out += '}';
  return out;
}

ChunkWriter::ChunkWriter(RequestInput::Kind kind, std::string_view id, std::string_view model, std::int64_t created)
    : kind_(kind), id_(id), model_(model), created_(created) {
  head_ = "\"id\":";
  append_json_string(head_, id);
  head_ += kind == RequestInput::Kind::kChat ? ",\"object\":\"chat.completion.chunk\"" : ",\"object\":\"text_completion\"";
  head_ += ",\"created\":";
  head_ += std::to_string(created);
  head_ += ",\"model\":";
  append_json_string(head_, model);
  head_ += ",\"system_fingerprint\":";
  append_json_string(head_, system_fingerprint());
}

std::string ChunkWriter::chunk_prefix() const {
  std::string out;
  out.reserve(head_.size() + 96);
  out += "data: {";
  out += head_;
  out += ",\"choices\":";
  return out;
}

void ChunkWriter::answer_as_tool_call(std::string name, std::string call_id) {
  tool_call_ = true;
  tool_name_ = std::move(name);
  call_id_ = std::move(call_id);
}

void ChunkWriter::shape_for(const StructuredOutput& structured) {
  if (structured.kind != StructuredOutput::Kind::kToolCall) return;
  const std::size_t dash = id_.find('-');
  answer_as_tool_call(structured.tool_name, "call_" + (dash == std::string::npos ? id_ : id_.substr(dash + 1)));
}

std::string_view ChunkWriter::finish_name(std::string_view finish_reason) const {
  return tool_call_ && finish_reason == "stop" ? std::string_view("tool_calls") : finish_reason;
}

void ChunkWriter::append_tool_calls(std::string& out, std::string_view generated, bool with_index) const {
  std::string name = tool_name_;
  std::string arguments(generated);
  if (name.empty()) {  // tool_choice "required": the answer is {"name":..,"arguments":{..}}
    const auto call = nlohmann::ordered_json::parse(generated, nullptr, false);
    if (call.is_object() && call.contains("name") && call["name"].is_string() && call.contains("arguments")) {
      name = call["name"].get<std::string>();
      arguments = call["arguments"].dump();
    }
  }
  out += "\"tool_calls\":[{";
  if (with_index) out += "\"index\":0,";
  out += "\"id\":";
  append_json_string(out, call_id_);
  out += ",\"type\":\"function\",\"function\":{\"name\":";
  append_json_string(out, name);
  out += ",\"arguments\":";
  append_json_string(out, arguments);
  out += "}}]";
}

std::string ChunkWriter::tool_call_event(std::string_view generated) {
  std::string out = chunk_prefix();
  out += "[{\"index\":0,\"delta\":{";
  if (!role_sent_) out += "\"role\":\"assistant\",";
  role_sent_ = true;
  out += "\"content\":null,";
  append_tool_calls(out, generated, true);
  out += "},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
  return out;
}

std::string ChunkWriter::content_event(std::string_view piece) {
  std::string out = chunk_prefix();
  if (kind_ == RequestInput::Kind::kChat) {
    out += "[{\"index\":0,\"delta\":{";
    if (!role_sent_) {
      out += "\"role\":\"assistant\",";
      role_sent_ = true;
    }
    out += "\"content\":";
    append_json_string(out, piece);
    out += "},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
  } else {
    out += "[{\"index\":0,\"text\":";
    append_json_string(out, piece);
    out += ",\"logprobs\":null,\"finish_reason\":null}]}\n\n";
  }
  return out;
}

void ChunkWriter::append_extras(std::string& out, const Extras& extras) {
  for (const auto& [type, json] : extras) {
    out += ',';
    append_json_string(out, "sluice_" + type);
    out += ':';
    out += json;
  }
}

std::string ChunkWriter::finish_event(std::string_view finish_reason, const Extras& extras) {
  std::string out = chunk_prefix();
  if (kind_ == RequestInput::Kind::kChat) {
    out += role_sent_ ? "[{\"index\":0,\"delta\":{},\"logprobs\":null"
                      : "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null";
    role_sent_ = true;
  } else {
    out += "[{\"index\":0,\"text\":\"\",\"logprobs\":null";
  }
  out += ",\"finish_reason\":";
  append_json_string(out, finish_name(finish_reason));
  out += "}]";
  append_extras(out, extras);
  out += "}\n\n";
  return out;
}

std::string ChunkWriter::usage_event(const Usage& usage) {
  std::string out = chunk_prefix();
  out += "[],\"usage\":";
  append_usage(out, usage);
  out += "}\n\n";
  return out;
}

std::string ChunkWriter::timings_event(std::string_view timings) {
  std::string out = chunk_prefix();
  out += "[],\"sluice_timings\":";
  out += timings;
  out += "}\n\n";
  return out;
}

std::string ChunkWriter::error_event(const ApiError& error) { return "data: " + error_body(error) + "\n\n"; }

std::string ChunkWriter::full_response(std::string_view text, std::string_view finish_reason, const Usage& usage,
                                       const Extras& extras) const {
  std::string out;
  out.reserve(text.size() + id_.size() + 256);
  out += "{\"id\":";
  append_json_string(out, id_);
  out += kind_ == RequestInput::Kind::kChat ? ",\"object\":\"chat.completion\"" : ",\"object\":\"text_completion\"";
  out += ",\"created\":";
  out += std::to_string(created_);
  out += ",\"model\":";
  append_json_string(out, model_);
  out += ",\"system_fingerprint\":";
  append_json_string(out, system_fingerprint());
  if (kind_ == RequestInput::Kind::kChat && tool_call_) {
    out += ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,";
    append_tool_calls(out, text, false);
    out += "},\"logprobs\":null,\"finish_reason\":";
  } else if (kind_ == RequestInput::Kind::kChat) {
    out += ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":";
    append_json_string(out, text);
    out += "},\"logprobs\":null,\"finish_reason\":";
  } else {
    out += ",\"choices\":[{\"index\":0,\"text\":";
    append_json_string(out, text);
    out += ",\"logprobs\":null,\"finish_reason\":";
  }
  append_json_string(out, finish_name(finish_reason));
  out += "}],\"usage\":";
  append_usage(out, usage);
  append_extras(out, extras);
  out += '}';
  return out;
}

}  // namespace sluice::http
