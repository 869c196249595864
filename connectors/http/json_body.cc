#include "connectors/http/json_body.h"

namespace sluice::http {
namespace {

using nlohmann::json;

constexpr int kMaxJsonDepth = 64;

std::optional<ApiError> check_depth(std::string_view body) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return invalid_value("", "request body nests deeper than " + std::to_string(kMaxJsonDepth) +
                                     " levels (at byte " + std::to_string(i) + ")");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

}  // namespace

ApiError invalid_value(std::string param, std::string message) {
  ApiError e;
  e.status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = "invalid_value";
  return e;
}

std::string_view json_type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

ApiError wrong_type(const std::string& field, std::string_view expected, const json& got) {
  ApiError e = invalid_value(field, "'" + field + "' must be " + std::string(expected) + ", got " +
                                        std::string(json_type_name(got)));
  e.code = "invalid_type";
  return e;
}

std::optional<ApiError> parse_json_object(std::string_view body, json* out) {
  if (auto e = check_depth(body)) return e;
  try {
    *out = json::parse(body.begin(), body.end());
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix; keep "parse error at line L, column C: ...".
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    return invalid_value("", "request body is not valid JSON: " + what);
  }
  if (!out->is_object()) {
    return invalid_value("", "request body must be a JSON object, got " + std::string(json_type_name(*out)));
  }
  return std::nullopt;
}

}  // namespace sluice::http
