#include "graph/json_reading.h"

namespace sluice {

using nlohmann::json;

std::optional<std::size_t> json_nul_byte(std::string_view text) {
  const std::size_t at = text.find('\0');
  return at == std::string_view::npos ? std::nullopt : std::optional<std::size_t>(at);
}

std::optional<std::size_t> json_too_deep(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

std::string strip_json_exception_id(std::string what) {
  if (what.rfind("[json.exception.", 0) == 0) {
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
  }
  return what;
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

void JsonPath::on_event(json::parse_event_t event, const json& parsed) {
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

std::string JsonPath::current() const {
  std::string out = prefix_;
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

}  // namespace sluice
