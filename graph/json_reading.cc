#include "graph/json_reading.h"

#include <algorithm>

namespace sluice {

using nlohmann::json;

std::optional<std::size_t> json_nul_byte(std::string_view text) {
  const std::size_t at = text.find('\0');
  return at == std::string_view::npos ? std::nullopt : std::optional<std::size_t>(at);
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::size_t skip_space(std::string_view t, std::size_t i) {
  while (i < t.size() && is_space(t[i])) ++i;
  return i;
}

// Past the string whose opening quote is at t[i].
std::size_t skip_string(std::string_view t, std::size_t i) {
  for (++i; i < t.size(); ++i) {
    if (t[i] == '\\') ++i;
    else if (t[i] == '"') return i + 1;
  }
  return t.size();
}

// Past the value that starts at t[i] (no leading space).
std::size_t skip_value(std::string_view t, std::size_t i) {
  if (i >= t.size()) return i;
  if (t[i] == '"') return skip_string(t, i);
  if (t[i] == '{' || t[i] == '[') {
    int depth = 0;
    while (i < t.size()) {
      const char c = t[i];
      if (c == '"') {
        i = skip_string(t, i);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      else if ((c == '}' || c == ']') && --depth == 0) return i + 1;
      ++i;
    }
    return i;
  }
  while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && !is_space(t[i])) ++i;  // a literal or number
  return i;
}

}  // namespace

std::optional<std::size_t> json_too_deep(std::string_view text, int limit) {
  int depth = 0;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"') {
      i = skip_string(text, i);
      continue;
    }
    if (c == '[' || c == '{') {
      if (++depth > limit) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
    ++i;
  }
  return std::nullopt;
}

std::optional<std::string_view> json_member_text(std::string_view document, std::string_view key) {
  std::optional<std::string_view> found;
  std::size_t i = skip_space(document, 0);
  if (i >= document.size() || document[i] != '{') return found;
  i = skip_space(document, i + 1);
  while (i < document.size() && document[i] == '"') {
    const std::size_t key_end = skip_string(document, i);
    const std::string_view written = document.substr(i + 1, key_end - i - 2);
    bool match = written == key;
    if (!match && written.find('\\') != std::string_view::npos) {
      // Escaped: compare what it means (the parser accepted it, so it decodes).
      const json decoded = json::parse(document.substr(i, key_end - i), nullptr, /*allow_exceptions=*/false);
      match = decoded.is_string() && decoded.get_ref<const std::string&>() == key;
    }
    i = skip_space(document, key_end);
    if (i >= document.size() || document[i] != ':') return found;
    i = skip_space(document, i + 1);
    const std::size_t value_end = skip_value(document, i);
    if (match) found = document.substr(i, value_end - i);
    i = skip_space(document, value_end);
    if (i < document.size() && document[i] == ',') i = skip_space(document, i + 1);
  }
  return found;
}

std::string json_minified(std::string_view text) {
  // Written through a pointer into a buffer of the input's size (the result is never longer):
  // this runs on every Kafka job's body, and appending a byte at a time checked capacity each
  // time. Strings are copied whole.
  std::string out(text.size(), '\0');
  char* o = out.data();
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t end = skip_string(text, i);
      o = std::copy(text.data() + i, text.data() + end, o);
      i = end;
      continue;
    }
    if (!is_space(c)) *o++ = c;
    ++i;
  }
  out.resize(std::size_t(o - out.data()));
  return out;
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
