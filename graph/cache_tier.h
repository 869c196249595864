// CacheTier: one of a pipeline's caches as a connector sees it (GET and DELETE /v1/cache):
// the exact response cache, the semantic cache (nodes/cache/) and the serving engine's KV
// prefix cache (nodes/generation/). Here in graph/ because connectors may not include nodes/;
// a node that has one answers Node::cache_tier(), Pipeline::cache_tiers() collects them.
//
// Thread-safety: every method from any thread.
#pragma once

#include <cstddef>
#include <string>

namespace sluice {

// Which entries DELETE /v1/cache drops.
struct CacheInvalidation {
  std::string tenant;        // only this tenant's entries ("" = the default tenant) ...
  bool all_tenants = true;   // ... unless set
};

class CacheTier {
 public:
  virtual ~CacheTier() = default;
  virtual std::string node() const = 0;  // the node's name in the pipeline file
  virtual std::string tier() const = 0;  // "exact", "semantic" or "kv_prefix"
  // Drops the selected entries; returns how many. A tier whose entries are not answers (the
  // KV prefix cache, which the engine verifies token by token) drops none.
  virtual std::size_t invalidate(const CacheInvalidation& what) = 0;
  // A JSON object: entries, bytes, hits, misses and what the tier counts besides.
  virtual std::string stats_json() const = 0;
};

}  // namespace sluice
