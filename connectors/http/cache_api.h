// The answer caches' endpoint of an HTTP source (admin scope; docs/caching.md):
//   GET /v1/cache      {"object": "list", "data": [one object per cache tier: node, tier,
//                      entries, bytes, hits, misses, ... (CacheTier::stats_json)]}
//   DELETE /v1/cache   drops cached answers: every tenant's, or with a body {"tenant": "t"} only
//                      that tenant's ("" is the default tenant); answers
//                      {"invalidated": N, "data": [{"node", "tier", "invalidated"}]}.
// A body that is not such an object is a 400 naming the field. Pure function; thread-safe as
// the tiers are.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "connectors/http/http_response.h"
#include "graph/cache_tier.h"

namespace sluice::http {

HttpResponse cache_response(std::string_view method, std::string_view body, const std::vector<CacheTier*>& tiers);

}  // namespace sluice::http
