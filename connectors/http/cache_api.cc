#include "connectors/http/cache_api.h"

#include <nlohmann/json.hpp>

#include "connectors/http/json_body.h"
#include "connectors/http/openai_response.h"

namespace sluice::http {

HttpResponse cache_response(std::string_view method, std::string_view body, const std::vector<CacheTier*>& tiers) {
  nlohmann::json out;
  if (method == "GET") {
    out = {{"object", "list"}, {"data", nlohmann::json::array()}};
    for (const CacheTier* t : tiers) out["data"].push_back(nlohmann::json::parse(t->stats_json()));
    return HttpResponse{200, "application/json", {}, out.dump()};
  }
  CacheInvalidation what;
  if (!body.empty()) {
    // The same reading as every API body: depth bound, NUL, the place of a syntax error.
    nlohmann::json j;
    if (auto e = parse_json_object(body, &j)) {
      e->message += "; DELETE /v1/cache takes a JSON object, e.g. {\"tenant\": \"acme\"}, or no body";
      return HttpResponse{e->status, "application/json", {}, error_body(*e)};
    }
    for (const auto& [key, value] : j.items()) {
      if (key != "tenant") {
        return HttpResponse{400, "application/json", {},
                            error_body(ApiError{400, "unknown field '" + key + "'; DELETE /v1/cache takes only tenant",
                                                "invalid_request_error", key, "unknown_parameter"})};
      }
      if (!value.is_string()) {
        return HttpResponse{400, "application/json", {},
                            error_body(ApiError{400, "tenant must be a string", "invalid_request_error", "tenant",
                                                "invalid_type"})};
      }
      what.tenant = value.get<std::string>();
      what.all_tenants = false;
    }
  }
  std::size_t total = 0;
  out = {{"data", nlohmann::json::array()}};
  for (CacheTier* t : tiers) {
    const std::size_t n = t->invalidate(what);
    total += n;
    out["data"].push_back({{"node", t->node()}, {"tier", t->tier()}, {"invalidated", n}});
  }
  out["invalidated"] = total;
  return HttpResponse{200, "application/json", {}, out.dump()};
}

}  // namespace sluice::http
