#include "connectors/http/json_body.h"

#include "graph/json_reading.h"

namespace sluice::http {
namespace {

using nlohmann::json;

constexpr int kMaxJsonDepth = 64;

std::optional<ApiError> check_depth(std::string_view body) {
  if (auto at = json_too_deep(body, kMaxJsonDepth)) {
    return invalid_value("", "request body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels (at byte " +
                                 std::to_string(*at) + ")");
  }
  if (auto at = json_nul_byte(body)) {
    return invalid_value("", "request body is not valid JSON: a NUL byte at byte " + std::to_string(*at));
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

ApiError unsupported(std::string param, std::string message) {
  return ApiError{400, std::move(message), "invalid_request_error", std::move(param), "unsupported"};
}

ApiError wrong_type(const std::string& field, std::string_view expected, const json& got) {
  ApiError e = invalid_value(field, "'" + field + "' must be " + std::string(expected) + ", got " +
                                        std::string(json_type_name(got)));
  e.code = "invalid_type";
  return e;
}

std::optional<ApiError> parse_json_object(std::string_view body, json* out) {
  if (auto e = check_depth(body)) return e;
  // The parser's events keep the path to the value being read, so that a value the parser
  // cannot hold (a number beyond a double, 1e400) is answered naming its field.
  JsonPath path;
  try {
    *out = json::parse(body.begin(), body.end(),
                       [&path](int /*depth*/, json::parse_event_t event, json& parsed) {
                         path.on_event(event, parsed);
                         return true;
                       });
  } catch (const json::parse_error& e) {
    return invalid_value("", "request body is not valid JSON: " + strip_json_exception_id(e.what()));
  } catch (const json::out_of_range& e) {
    // nlohmann reports "number overflow parsing '1e400'" (406) and nothing else here.
    std::string field = path.current();
    std::string what = strip_json_exception_id(e.what());
    return invalid_value(field, field.empty() ? "request body holds a value out of range: " + what
                                              : "'" + field + "' is out of range: " + what);
  } catch (const json::exception& e) {
    // Any other refusal of the parser is the body's fault, never the server's.
    return invalid_value(path.current(), "request body could not be read: " + strip_json_exception_id(e.what()));
  }
  if (!out->is_object()) {
    return invalid_value("", "request body must be a JSON object, got " + std::string(json_type_name(*out)));
  }
  return std::nullopt;
}

}  // namespace sluice::http
