#include "connectors/http/json_body.h"

#include <vector>

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

// Drops nlohmann's "[json.exception.parse_error.101] " prefix; keeps "parse error at line L,
// column C: ..." or "number overflow parsing '1e400'".
std::string strip_exception_id(std::string what) {
  if (what.rfind("[json.exception.", 0) == 0) {
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
  }
  return what;
}

// Follows the parser's events to name the value being read as messages[0].content. Bounded by
// check_depth: at most kMaxJsonDepth frames.
class JsonPathTracker {
 public:
  void on_event(json::parse_event_t event, const json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: frames_.push_back({false, {}, 0}); break;
      case json::parse_event_t::array_start: frames_.push_back({true, {}, 0}); break;
      case json::parse_event_t::key:
        if (!frames_.empty() && parsed.is_string()) frames_.back().key = parsed.get_ref<const std::string&>();
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames_.empty()) frames_.pop_back();
        finished_value();
        break;
      case json::parse_event_t::value: finished_value(); break;
    }
  }

  // The path of the value being read now; "" at the top level.
  std::string current() const {
    std::string out;
    for (const Frame& f : frames_) {
      if (f.array) {
        out += "[" + std::to_string(f.index) + "]";
      } else {
        if (!out.empty()) out += '.';
        out += f.key;
      }
    }
    return out;
  }

 private:
  struct Frame {
    bool array;
    std::string key;    // objects: the key whose value is being read
    std::size_t index;  // arrays: the element being read
  };
  void finished_value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }
  std::vector<Frame> frames_;
};

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
  // The parser's events keep the path to the value being read, so that a value the parser
  // cannot hold (a number beyond a double, 1e400) is answered naming its field.
  JsonPathTracker path;
  try {
    *out = json::parse(body.begin(), body.end(),
                       [&path](int /*depth*/, json::parse_event_t event, json& parsed) {
                         path.on_event(event, parsed);
                         return true;
                       });
  } catch (const json::parse_error& e) {
    return invalid_value("", "request body is not valid JSON: " + strip_exception_id(e.what()));
  } catch (const json::out_of_range& e) {
    // nlohmann reports "number overflow parsing '1e400'" (406) and nothing else here.
    std::string field = path.current();
    std::string what = strip_exception_id(e.what());
    return invalid_value(field, field.empty() ? "request body holds a value out of range: " + what
                                              : "'" + field + "' is out of range: " + what);
  } catch (const json::exception& e) {
    // Any other refusal of the parser is the body's fault, never the server's.
    return invalid_value(path.current(), "request body could not be read: " + strip_exception_id(e.what()));
  }
  if (!out->is_object()) {
    return invalid_value("", "request body must be a JSON object, got " + std::string(json_type_name(*out)));
  }
  return std::nullopt;
}

}  // namespace sluice::http
