// CorsPolicy: which browser pages may call an HTTP source (the source's `cors` config), and the
// headers that say so (the Fetch standard's CORS protocol).
//
//  - A request whose Origin is allowed gets Access-Control-Allow-Origin (the origin itself, or
//    "*" when any is allowed), Vary: Origin, and Access-Control-Expose-Headers naming what a
//    client reads (X-Request-Id, Retry-After, X-Sluice-Timings).
//  - A preflight (OPTIONS with Origin and Access-Control-Request-Method) from an allowed origin
//    answers 204 with the methods and request headers the API takes and Access-Control-Max-Age;
//    from another origin, 403 naming it. Preflights carry no credentials, so they pass before
//    authentication.
//  - Disabled (no origins listed): no headers, and OPTIONS answers 405 as any other method.
//
// Thread-safety: immutable after construction.
#pragma once

#include <string>
#include <vector>

#include "connectors/http/http_parser.h"
#include "connectors/http/http_response.h"
#include "graph/schema.h"

namespace sluice::http {

class CorsPolicy {
 public:
  explicit CorsPolicy(const CorsConfig& config);

  bool enabled() const { return any_ || !origins_.empty(); }
  bool allows(const std::string& origin) const;
  // The headers every response to a request from `origin` carries (empty: not allowed, or off).
  std::vector<HttpHeader> response_headers(const std::string& origin) const;
  // The answer to a preflight `request` (OPTIONS with an Origin).
  HttpResponse preflight(const HttpRequest& request) const;

 private:
  bool any_ = false;
  std::vector<std::string> origins_;
  long long max_age_seconds_ = 600;
};

}  // namespace sluice::http
