#include "connectors/http/embeddings_api.h"

#include "connectors/http/json_body.h"
#include "connectors/http/openai_response.h"

namespace sluice::http {
namespace {

using nlohmann::json;

constexpr const char* kFields[] = {"input", "model", "encoding_format", "user", "dimensions"};

std::optional<ApiError> token_ids_refused(const std::string& param) {
  return unsupported(param, "'" + param +
                                "' is a list of token ids; this server embeds text: send the text as a string (or an "
                                "array of strings)");
}

}  // namespace

std::optional<ApiError> parse_embeddings_request(std::string_view body, EmbeddingsRequest* out) {
  json doc;
  if (auto e = parse_json_object(body, &doc)) return e;
  for (const auto& [key, value] : doc.items()) {
    bool known = false;
    for (const char* k : kFields) known = known || key == k;
    if (known) continue;
    ApiError e = invalid_value(key, "unknown field '" + key + "'; known fields: input, model, encoding_format, user, dimensions");
    e.code = "unknown_field";
    return e;
  }
  auto model = doc.find("model");
  if (model == doc.end() || model->is_null()) return invalid_value("model", "'model' is required");
  if (!model->is_string()) return wrong_type("model", "a string", *model);
  out->model = model->get<std::string>();
  if (auto d = doc.find("dimensions"); d != doc.end() && !d->is_null()) {
    return unsupported("dimensions", "'dimensions' cannot be honoured: the model has one output size (leave it out)");
  }
  if (auto f = doc.find("encoding_format"); f != doc.end() && !f->is_null()) {
    if (!f->is_string()) return wrong_type("encoding_format", "a string", *f);
    const std::string format = f->get<std::string>();
    if (format != "float" && format != "base64")
      return invalid_value("encoding_format", "'encoding_format' '" + format + "' is not one of: float, base64");
    out->base64 = format == "base64";
  }
  if (auto u = doc.find("user"); u != doc.end() && !u->is_null() && !u->is_string()) return wrong_type("user", "a string", *u);
  auto input = doc.find("input");
  if (input == doc.end() || input->is_null()) return invalid_value("input", "'input' is required");
  if (input->is_string()) {
    out->inputs.push_back(input->get<std::string>());
    return std::nullopt;
  }
  if (!input->is_array()) return wrong_type("input", "a string or an array of strings", *input);
  if (input->empty()) return invalid_value("input", "'input' must not be an empty array");
  if (input->front().is_number_integer()) return token_ids_refused("input");
  out->inputs.reserve(input->size());
  for (size_t i = 0; i < input->size(); ++i) {
    const json& item = (*input)[i];
    const std::string at = "input[" + std::to_string(i) + "]";
    if (item.is_array()) return token_ids_refused(at);
    if (!item.is_string()) return wrong_type(at, "a string", item);
    out->inputs.push_back(item.get<std::string>());
  }
  return std::nullopt;
}

std::string embeddings_response_body(std::string embeddings_event, std::string_view model) {
  std::string members = "\"object\":\"list\",\"model\":";
  append_json_string(members, model);
  return prepend_members(std::move(embeddings_event), members);
}

}  // namespace sluice::http
