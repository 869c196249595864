#include "connectors/http/cors.h"

#include <algorithm>

#include "connectors/http/openai_response.h"
#include "graph/proto_duration.h"

namespace sluice::http {
namespace {

// What the API's handlers read; anything else a page asks to send is refused by the browser.
constexpr const char* kAllowedRequestHeaders =
    "Authorization, Content-Type, X-Priority, X-Request-Timeout, X-Sluice-Async, X-Sluice-Timings, X-Sluice-Resume, "
    "Last-Event-ID, traceparent, "
    "OpenAI-Organization, OpenAI-Project, X-Stainless-Arch, X-Stainless-Lang, X-Stainless-OS, "
    "X-Stainless-Package-Version, X-Stainless-Retry-Count, X-Stainless-Runtime, X-Stainless-Runtime-Version, "
    "X-Stainless-Timeout";

}  // namespace

CorsPolicy::CorsPolicy(const CorsConfig& config) {
  for (const std::string& o : config.allowed_origins()) {
    if (o == "*") any_ = true;
    else origins_.push_back(o);
  }
  if (config.has_max_age()) max_age_seconds_ = duration_nanos(config.max_age()) / kNanosPerSecond;
}

bool CorsPolicy::allows(const std::string& origin) const {
  return any_ || std::find(origins_.begin(), origins_.end(), origin) != origins_.end();
}

std::vector<HttpHeader> CorsPolicy::response_headers(const std::string& origin) const {
  if (!enabled() || !allows(origin)) return {};
  return {{"Access-Control-Allow-Origin", any_ ? "*" : origin},
          {"Vary", "Origin"},
          {"Access-Control-Expose-Headers", "X-Request-Id, Retry-After, X-Sluice-Timings, X-Sluice-Degraded, traceparent"}};
}

HttpResponse CorsPolicy::preflight(const HttpRequest& request) const {
  const std::string* origin = request.header("origin");
  if (!origin || !allows(*origin)) {
    ApiError e{403, "origin '" + (origin ? *origin : std::string()) + "' may not call this server (cors.allowed_origins)",
               "invalid_request_error", "Origin", "origin_not_allowed"};
    return HttpResponse{403, "application/json", {{"Vary", "Origin"}}, error_body(e)};
  }
  HttpResponse r{204, "", response_headers(*origin), ""};
  r.headers.push_back({"Access-Control-Allow-Methods", "GET, POST, OPTIONS"});
  r.headers.push_back({"Access-Control-Allow-Headers", kAllowedRequestHeaders});
  r.headers.push_back({"Access-Control-Max-Age", std::to_string(max_age_seconds_)});
  return r;
}

}  // namespace sluice::http
