#include "connectors/http/structured_request.h"

#include <regex>

#include "connectors/http/json_body.h"
#include "inference/constrain/grammar_cache.h"

namespace sluice::http {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;
using constrain::GrammarCache;
using constrain::GrammarError;
using constrain::JsonGrammar;

ApiError schema_error(const GrammarError& e) {
  const bool keyword = e.message.find("not supported") != std::string::npos;
  return ApiError{400, e.path + ": " + e.message, "invalid_request_error", e.path, keyword ? "unsupported" : "invalid_value"};
}

std::optional<ApiError> compile(const ojson& schema, const std::string& path, StructuredOutput* out) {
  GrammarError e;
  out->grammar = GrammarCache::shared().get(schema, path, &e);
  if (!out->grammar) return schema_error(e);
  return std::nullopt;
}

// A tool's parameters inside the one schema of tool_choice "required": its $defs move to the
// combined root's $defs as "<prefix>X" and its references follow ("#" is the tool itself).
void rebase_refs(ojson& s, const std::string& prefix) {
  if (s.is_object()) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (it.key() == "$ref" && it.value().is_string()) {
        std::string ref = it.value().get<std::string>();
        for (const char* section : {"#/$defs/", "#/definitions/"})
          if (ref.rfind(section, 0) == 0) ref = "#/$defs/" + prefix + ref.substr(std::string(section).size());
        if (ref == "#") ref = "#/$defs/" + prefix;
        it.value() = ref;
      } else {
        rebase_refs(it.value(), prefix);
      }
    }
  } else if (s.is_array()) {
    for (ojson& v : s) rebase_refs(v, prefix);
  }
}

struct Tool {
  std::string name;
  ojson parameters;
};

std::optional<ApiError> read_tools(const ojson& tools, std::vector<Tool>* out) {
  static const std::regex kName("^[A-Za-z0-9_-]{1,64}$");
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const ojson& t = tools[i];
    if (!t.is_object()) return invalid_value(at, "'" + at + "' must be an object");
    auto type = t.find("type");
    if (type == t.end() || !type->is_string() || type->get<std::string>() != "function") return invalid_value(at + ".type", "'" + at + ".type' must be 'function'");
    auto f = t.find("function");
    if (f == t.end() || !f->is_object()) return invalid_value(at + ".function", "'" + at + ".function' must be an object");
    auto name = f->find("name");
    if (name == f->end() || !name->is_string() || !std::regex_match(name->get<std::string>(), kName))
      return invalid_value(at + ".function.name", "'" + at + ".function.name' must be 1-64 letters, digits, '_' or '-'");
    Tool tool{name->get<std::string>(), ojson::object()};
    if (auto p = f->find("parameters"); p != f->end() && !p->is_null()) {
      if (!p->is_object()) return invalid_value(at + ".function.parameters", "'" + at + ".function.parameters' must be a JSON Schema object");
      tool.parameters = *p;
    } else {
      tool.parameters = ojson{{"type", "object"}, {"properties", ojson::object()}, {"additionalProperties", false}};
    }
    for (const Tool& seen : *out)
      if (seen.name == tool.name) return invalid_value(at + ".function.name", "two tools are named '" + tool.name + "'");
    out->push_back(std::move(tool));
  }
  return std::nullopt;
}

std::optional<ApiError> read_tool_choice(const ojson& doc, const std::vector<Tool>& tools, StructuredOutput* out) {
  auto choice = doc.find("tool_choice");
  std::string mode = "auto";
  std::string named;
  if (choice != doc.end() && !choice->is_null()) {
    if (choice->is_string()) {
      mode = choice->get<std::string>();
      if (mode != "auto" && mode != "none" && mode != "required")
        return invalid_value("tool_choice", "'tool_choice' must be auto, none, required or {\"type\":\"function\",\"function\":{\"name\":..}}");
    } else if (choice->is_object() && choice->contains("function") && (*choice)["function"].is_object() &&
               (*choice)["function"].contains("name") && (*choice)["function"]["name"].is_string()) {
      mode = "function";
      named = (*choice)["function"]["name"].get<std::string>();
    } else {
      return invalid_value("tool_choice", "'tool_choice' must be auto, none, required or {\"type\":\"function\",\"function\":{\"name\":..}}");
    }
  }
  if (mode == "none") return std::nullopt;
  if (mode == "auto")
    return unsupported("tool_choice",
                       "tool_choice 'auto' is not supported: this server's models have no tool-call template to decide between "
                       "text and a call; send tool_choice 'required', a named function, or 'none'");
  out->kind = StructuredOutput::Kind::kToolCall;
  if (mode == "function") {
    for (std::size_t i = 0; i < tools.size(); ++i) {
      if (tools[i].name != named) continue;
      out->tool_name = named;
      return compile(tools[i].parameters, "tools[" + std::to_string(i) + "].function.parameters", out);
    }
    return invalid_value("tool_choice.function.name", "tool_choice names '" + named + "', which is not among the tools");
  }
  // required: one schema, {"name": <const>, "arguments": <parameters>} per tool.
  ojson combined = {{"anyOf", ojson::array()}, {"$defs", ojson::object()}};
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const std::string prefix = "tool" + std::to_string(i);
    ojson params = tools[i].parameters;
    for (const char* section : {"$defs", "definitions"}) {
      if (auto defs = params.find(section); defs != params.end() && defs->is_object()) {
        for (auto it = defs->begin(); it != defs->end(); ++it) {
          ojson def = it.value();
          rebase_refs(def, prefix);
          combined["$defs"][prefix + it.key()] = def;
        }
        params.erase(section);
      }
    }
    rebase_refs(params, prefix);
    combined["$defs"][prefix] = params;
    combined["anyOf"].push_back(ojson{{"type", "object"},
                                      {"properties", {{"name", {{"const", tools[i].name}}}, {"arguments", {{"$ref", "#/$defs/" + prefix}}}}},
                                      {"required", {"name", "arguments"}},
                                      {"additionalProperties", false}});
  }
  return compile(combined, "tools", out);
}

}  // namespace

std::optional<ApiError> read_structured_output(std::string_view body, const json& doc, StructuredOutput* out) {
  for (const char* legacy : {"functions", "function_call"}) {
    auto it = doc.find(legacy);
    if (it != doc.end() && !it->is_null() && !(it->is_array() && it->empty()))
      return unsupported(legacy, std::string("'") + legacy + "' is deprecated and not supported: send 'tools' and 'tool_choice'");
  }
  auto has = [&](const char* field) {
    auto it = doc.find(field);
    return it != doc.end() && !it->is_null() && !(it->is_array() && it->empty());
  };
  if (!has("response_format") && !has("tools")) return std::nullopt;

  // Parsed again with the property order kept: an object's properties are written in it. Only
  // this copy is read from here on (with a key given twice, the two parsers may keep different
  // ones).
  const ojson ordered = ojson::parse(body, nullptr, false);
  if (!ordered.is_object()) return invalid_value("", "the body must be a JSON object");
  auto tools = ordered.find("tools");
  if (tools != ordered.end() && !tools->is_null() && !(tools->is_array() && tools->empty())) {
    if (!tools->is_array()) return invalid_value("tools", "'tools' must be an array");
    std::vector<Tool> list;
    if (auto e = read_tools(*tools, &list)) return e;
    if (auto e = read_tool_choice(ordered, list, out)) return e;
  }
  auto format = ordered.find("response_format");
  if (format == ordered.end() || format->is_null()) return std::nullopt;
  if (!format->is_object()) return invalid_value("response_format", "'response_format' must be an object");
  auto type = format->find("type");
  if (type == format->end() || !type->is_string())
    return invalid_value("response_format.type", "'response_format.type' must be text, json_object or json_schema");
  const std::string t = type->get<std::string>();
  if (t == "text") return std::nullopt;
  if (t != "json_object" && t != "json_schema")
    return invalid_value("response_format.type", "'response_format.type' must be text, json_object or json_schema, not '" + t + "'");
  if (out->kind == StructuredOutput::Kind::kToolCall)
    return invalid_value("response_format", "'response_format' " + t + " and a tool call cannot both shape one answer");
  out->kind = StructuredOutput::Kind::kJson;
  if (t == "json_object") {
    out->grammar = JsonGrammar::any_object();
    return std::nullopt;
  }
  auto spec = format->find("json_schema");
  if (spec == format->end() || !spec->is_object())
    return invalid_value("response_format.json_schema", "'response_format.json_schema' must be an object with a 'schema'");
  auto schema = spec->find("schema");
  if (schema == spec->end() || !schema->is_object())
    return invalid_value("response_format.json_schema.schema", "'response_format.json_schema.schema' must be a JSON Schema object");
  return compile(*schema, "response_format.json_schema.schema", out);
}

}  // namespace sluice::http
