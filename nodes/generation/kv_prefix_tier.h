// KvPrefixTier: the serving engine's KV prefix cache as one of the pipeline's cache tiers
// (graph/cache_tier.h), so GET /v1/cache shows it beside the exact and semantic answer caches:
// blocks cached and in use, prefix hits, tokens not recomputed, evictions, and hash hits refused
// because their tokens differed. Its entries are verified token by token when reused and never
// stale, so DELETE /v1/cache drops none of them.
// Thread-safety: every method from any thread (the engine publishes its counts).
#pragma once

#include <memory>
#include <string>

#include "graph/cache_tier.h"
#include "inference/engine/serving_engine.h"

namespace sluice::generation {

class KvPrefixTier final : public CacheTier {
 public:
  KvPrefixTier(std::string node, std::shared_ptr<inference::ServingEngine> engine)
      : node_(std::move(node)), engine_(std::move(engine)) {}
  std::string node() const override { return node_; }
  std::string tier() const override { return "kv_prefix"; }
  std::size_t invalidate(const CacheInvalidation&) override { return 0; }
  std::string stats_json() const override;

 private:
  std::string node_;
  std::shared_ptr<inference::ServingEngine> engine_;
};

}  // namespace sluice::generation
