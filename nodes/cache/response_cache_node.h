// ResponseCacheNode (`response_cache`): the exact answer cache. For each chat or completion
// request that may be cached (cache_key.h: not_cacheable), the key of everything that decides
// its answer is looked up; a hit replays the stored answer into the request at once (a stream
// gets the same SSE framing as a live answer) and completes it, so the nodes behind it skip
// the request; a miss puts an AnswerRecorder on the request, which stores the answer when it
// completes successfully, unless the knowledge base changed what it cited meanwhile.
// With store: redis, Redis is L2 behind the in-process store: an L1 miss reads it (the whole
// key compared), a stored answer is written to both (redis_tier.h). With store: off the node
// passes every request on and has no store and no cache tier.
// docs/caching.md has the keys, the knobs and the invalidation rules.
//
// Thread-safety: process() may run on several workers; the store serialises.
#pragma once

#include <memory>

#include "graph/clock.h"
#include "graph/node.h"
#include "graph/schema.h"
#include "graph/system_fingerprint.h"
#include "nodes/cache/answer_cache_tier.h"
#include "nodes/cache/cache_key.h"
#include "nodes/cache/exact_store.h"
#include "nodes/cache/redis_tier.h"

namespace sluice::cache {

class ResponseCacheNode final : public SyncNode {
 public:
  // Throws std::invalid_argument naming the setting (knowledge_base, invalidate).
  ResponseCacheNode(const ResponseCacheConfig& config, const NodeContext& ctx);

  // Reads the system fingerprint: the generate node has loaded its model by now.
  void start() override { identity_.system_fingerprint = system_fingerprint(); }
  void process(Batch& batch) override;
  CacheTier* cache_tier() override { return tier_.get(); }
  ExactStore& store() { return *store_; }  // not with store: off

 private:
  static std::string shared_id(const std::string& key);
  // L1, then (store: redis) L2, which fills L1 on a hit.
  std::shared_ptr<const CachedAnswer> find(const std::string& key, const std::string& tenant);

  const Clock& clock_;
  StoreLimits store_limits_;
  CacheIdentity identity_;
  bool cache_sampled_;
  std::size_t max_answer_bytes_;
  std::shared_ptr<ExactStore> store_;
  std::shared_ptr<RedisTier> shared_;  // store: redis
  std::shared_ptr<AnswerCacheTier> tier_;
};

}  // namespace sluice::cache
