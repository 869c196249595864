#include "connectors/http/openai_request.h"

#include <cctype>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "connectors/http/json_body.h"
#include "connectors/http/structured_request.h"
#include "graph/span_context.h"

namespace sluice::http {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxStopSequences = 16;

// Optional numeric field in [lo, hi]; absent or null keeps *out.
template <class T>
std::optional<ApiError> read_number(const json& obj, const char* field, double lo, double hi, T* out) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  constexpr bool integral = std::numeric_limits<T>::is_integer;
  if (integral ? !it->is_number_integer() : !it->is_number()) {
    return wrong_type(field, integral ? "an integer" : "a number", *it);
  }
  double v = it->get<double>();
  if (!(v >= lo && v <= hi)) {
    char range[96];
    std::snprintf(range, sizeof range, "between %g and %g", lo, hi);
    return invalid_value(field, "'" + std::string(field) + "' must be " + range);
  }
  *out = integral ? static_cast<T>(it->get<std::int64_t>()) : static_cast<T>(v);
  return std::nullopt;
}

std::optional<ApiError> read_bool(const json& obj, const char* field, bool* out) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return wrong_type(field, "a boolean", *it);
  *out = it->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> read_messages(const json& obj, std::vector<ChatMessage>* out) {
  auto it = obj.find("messages");
  if (it == obj.end() || it->is_null()) return invalid_value("messages", "'messages' is required");
  if (!it->is_array()) return wrong_type("messages", "an array", *it);
  if (it->empty()) return invalid_value("messages", "'messages' must not be empty");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return wrong_type(at, "an object", m);
    ChatMessage msg;
    auto role = m.find("role");
    if (role == m.end()) return invalid_value(at + ".role", "'" + at + ".role' is required");
    if (!role->is_string()) return wrong_type(at + ".role", "a string", *role);
    msg.role = role->get<std::string>();
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "developer" &&
        msg.role != "tool") {
      return invalid_value(at + ".role", "'" + at + ".role' must be one of system, developer, user, assistant, tool; got '" +
                                       msg.role + "'");
    }
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      // An assistant turn that only called tools has no content.
    } else if (content->is_string()) {
      msg.content = content->get<std::string>();
    } else if (content->is_array()) {
      for (std::size_t j = 0; j < content->size(); ++j) {
        const json& part = (*content)[j];
        std::string pat = at + ".content[" + std::to_string(j) + "]";
        if (!part.is_object()) return wrong_type(pat, "an object", part);
        auto type = part.find("type");
        if (type == part.end() || !type->is_string() || *type != "text") {
          return invalid_value(pat + ".type", "only content parts of type 'text' are supported (" + pat + ")");
        }
        auto text = part.find("text");
        if (text == part.end() || !text->is_string()) {
          return wrong_type(pat + ".text", "a string", text == part.end() ? json() : *text);
        }
        if (!msg.content.empty()) msg.content += '\n';
        msg.content += text->get<std::string>();
      }
    } else {
      return wrong_type(at + ".content", "a string or an array of text parts", *content);
    }
    out->push_back(std::move(msg));
  }
  return std::nullopt;
}

std::optional<ApiError> read_prompt(const json& obj, std::string* out) {
  auto it = obj.find("prompt");
  if (it == obj.end() || it->is_null()) return invalid_value("prompt", "'prompt' is required");
  if (it->is_string()) {
    *out = it->get<std::string>();
    return std::nullopt;
  }
  if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
    *out = (*it)[0].get<std::string>();
    return std::nullopt;
  }
  if (it->is_array() && it->size() > 1) return invalid_value("prompt", "'prompt' with several prompts is not supported; send one");
  return wrong_type("prompt", "a string", *it);
}

std::optional<ApiError> read_stop(const json& obj, std::vector<std::string>* out) {
  auto it = obj.find("stop");
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    out->push_back(it->get<std::string>());
    return std::nullopt;
  }
  if (!it->is_array()) return wrong_type("stop", "a string or an array of strings", *it);
  if (it->size() > kMaxStopSequences) {
    return invalid_value("stop", "'stop' has " + std::to_string(it->size()) + " sequences, at most " +
                               std::to_string(kMaxStopSequences) + " are allowed");
  }
  for (std::size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string()) return wrong_type("stop[" + std::to_string(i) + "]", "a string", (*it)[i]);
    out->push_back((*it)[i].get<std::string>());
  }
  return std::nullopt;
}

// Fields that change what the answer must be and that Sluice cannot honour yet: refused by
// name rather than ignored.
std::optional<ApiError> refuse_unsupported(const json& doc) {
  if (auto it = doc.find("logprobs");
      it != doc.end() && ((it->is_boolean() && it->get<bool>()) || (it->is_number() && it->get<double>() > 0)))
    return unsupported("logprobs", "'logprobs' is not supported yet: choices carry \"logprobs\": null");
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_openai_request(std::string_view body, RequestInput::Kind kind, OpenAiRequest* out) {
  json doc;
  if (auto e = parse_json_object(body, &doc)) return e;

  RequestInput& in = out->input;
  in.kind = kind;
  auto model = doc.find("model");
  if (model == doc.end() || model->is_null()) return invalid_value("model", "'model' is required");
  if (!model->is_string()) return wrong_type("model", "a string", *model);
  in.model = model->get<std::string>();

  if (kind == RequestInput::Kind::kChat) {
    if (auto e = read_messages(doc, &in.messages)) return e;
  } else {
    if (auto e = read_prompt(doc, &in.prompt)) return e;
  }

  SamplingParams& s = in.sampling;
  constexpr double kMaxTokens = 1 << 24;
  if (auto e = read_number(doc, "max_tokens", 1, kMaxTokens, &in.max_tokens)) return e;
  if (auto e = read_number(doc, "max_completion_tokens", 1, kMaxTokens, &in.max_tokens)) return e;
  if (auto e = read_number(doc, "temperature", 0, 2, &s.temperature)) return e;
  if (auto e = read_number(doc, "top_p", 0, 1, &s.top_p)) return e;
  if (auto e = read_number(doc, "top_k", -1, 1 << 20, &s.top_k)) return e;
  if (s.top_k < 0) s.top_k = 0;  // vLLM spells "disabled" as -1; ours is 0
  if (auto e = read_number(doc, "min_p", 0, 1, &s.min_p)) return e;
  if (auto e = read_number(doc, "presence_penalty", -2, 2, &s.presence_penalty)) return e;
  if (auto e = read_number(doc, "frequency_penalty", -2, 2, &s.frequency_penalty)) return e;
  if (auto e = read_number(doc, "repetition_penalty", 0.01, 10, &s.repetition_penalty)) return e;
  if (auto it = doc.find("seed"); it != doc.end() && !it->is_null()) {
    if (!it->is_number_integer()) return wrong_type("seed", "an integer", *it);
    s.seed = it->is_number_unsigned() ? it->get<std::uint64_t>() : static_cast<std::uint64_t>(it->get<std::int64_t>());
  }
  if (auto e = read_stop(doc, &in.stop)) return e;
  int n = 1;
  if (auto e = read_number(doc, "n", 1, 1 << 10, &n)) return e;
  if (n != 1) return invalid_value("n", "'n' must be 1: one choice per request is supported");
  if (auto e = refuse_unsupported(doc)) return e;
  if (auto e = read_structured_output(body, doc, &in.structured)) return e;
  if (kind != RequestInput::Kind::kChat && in.structured.kind == StructuredOutput::Kind::kToolCall)
    return invalid_value("tools", "'tools' are for /v1/chat/completions; a completion answers with text or response_format JSON");
  if (auto e = read_bool(doc, "stream", &in.stream)) return e;
  if (auto it = doc.find("stream_options"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) return wrong_type("stream_options", "an object", *it);
    if (auto e = read_bool(*it, "include_usage", &out->include_usage)) {
      e->param = "stream_options.include_usage";
      return e;
    }
  }
  return std::nullopt;
}

std::optional<Nanos> parse_timeout_header(std::string_view value) {
  double scale = 1e9;
  if (value.size() > 2 && value.substr(value.size() - 2) == "ms") {
    scale = 1e6;
    value.remove_suffix(2);
  } else if (!value.empty() && value.back() == 's') {
    value.remove_suffix(1);
  }
  if (value.empty() || value.size() > 24) return std::nullopt;
  std::string text(value);
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v) || v <= 0 || v > 86400.0 * 1e9 / scale) return std::nullopt;
  // Less than a nanosecond would truncate to 0, which callers read as "no deadline".
  if (v * scale < 1) return std::nullopt;
  return static_cast<Nanos>(v * scale);
}

bool valid_traceparent(std::string_view v) { return parse_traceparent(v).has_value(); }

}  // namespace sluice::http
