// SemanticCacheNode (`semantic_cache`): serves a cached answer to a question that means the same
// as one answered before. Per batch, the questions (the last user message, or the prompt) of
// every cacheable request are embedded together with the pretrained sentence encoder
// (inference/encoder/, shared with other nodes naming the same file); each is looked up in its
// scope (cache_key.h: semantic_scope) among the `candidates` nearest cached questions; a
// candidate at or above `threshold` that every verification guard accepts
// (semantic_guards.h) is a hit and its answer is replayed; otherwise the request gets an
// AnswerRecorder that stores its answer under its question's vector when it completes.
// docs/caching.md has the scopes, the guards, the threshold guidance and the invalidation rules.
//
// With `optional` and no encoder file, or with store: off, the node is off: requests pass on
// uncached (store: off loads no encoder).
// Thread-safety: process() may run on several workers; the encoder and the store serialise.
#pragma once

#include <memory>

#include "graph/clock.h"
#include "graph/node.h"
#include "graph/schema.h"
#include "graph/system_fingerprint.h"
#include "inference/encoder/sentence_encoder.h"
#include "nodes/cache/answer_cache_tier.h"
#include "nodes/cache/cache_key.h"
#include "nodes/cache/redis_tier.h"
#include "nodes/cache/semantic_store.h"

namespace sluice::cache {

class SemanticCacheNode final : public SyncNode {
 public:
  // Throws std::invalid_argument naming the setting (model, knowledge_base, invalidate).
  SemanticCacheNode(const SemanticCacheConfig& config, const NodeContext& ctx);

  // Reads the system fingerprint: the generate node has loaded its model by now.
  void start() override { identity_.system_fingerprint = system_fingerprint(); }
  void process(Batch& batch) override;
  CacheTier* cache_tier() override { return tier_.get(); }
  SemanticStore* store() { return store_.get(); }

 private:
  const Clock& clock_;
  CacheIdentity identity_;
  bool cache_sampled_;
  float threshold_;
  std::size_t candidates_;
  std::size_t max_answer_bytes_;
  std::shared_ptr<inference::SentenceEncoder> encoder_;
  std::shared_ptr<SemanticStore> store_;
  std::shared_ptr<AnswerCacheTier> tier_;
  std::shared_ptr<RedisTier> shared_;  // store: redis
};

}  // namespace sluice::cache
