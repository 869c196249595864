#include "connectors/http/models_api.h"

#include <algorithm>

#include "connectors/http/openai_response.h"

namespace sluice::http {
namespace {

void append_model(std::string& out, const std::string& id, std::int64_t created) {
  out += "{\"id\":";
  append_json_string(out, id);
  out += ",\"object\":\"model\",\"created\":" + std::to_string(created) + ",\"owned_by\":\"sluice\"}";
}

}  // namespace

HttpResponse models_response(std::string_view path, const std::vector<std::string>& models, std::int64_t created) {
  std::string body;
  if (path.size() <= kModelsPath.size() + 1) {  // "/v1/models" (or "/v1/models/")
    body = "{\"object\":\"list\",\"data\":[";
    for (std::size_t i = 0; i < models.size(); ++i) {
      if (i) body += ',';
      append_model(body, models[i], created);
    }
    body += "]}";
    return HttpResponse{200, "application/json", {}, std::move(body)};
  }
  const std::string id(path.substr(kModelsPath.size() + 1));
  if (std::find(models.begin(), models.end(), id) == models.end()) {
    std::string served;
    for (const auto& m : models) served += (served.empty() ? "" : ", ") + m;
    ApiError e{404, "the model '" + id + "' does not exist; this server serves: " + served, "invalid_request_error", "model",
               "model_not_found"};
    return HttpResponse{404, "application/json", {}, error_body(e)};
  }
  append_model(body, id, created);
  return HttpResponse{200, "application/json", {}, std::move(body)};
}

}  // namespace sluice::http
