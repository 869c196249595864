#include "nodes/cache/response_cache_node.h"

#include "graph/proto_duration.h"
#include "nodes/retrieval/kb/shared_knowledge_bases.h"

namespace sluice::cache {
namespace {

std::shared_ptr<retrieval::KnowledgeBase> optional_kb(const std::string& dir, const NodeContext& ctx) {
  return dir.empty() ? nullptr : retrieval::node_knowledge_base(dir, ctx.base_dir);
}

}  // namespace

ResponseCacheNode::ResponseCacheNode(const ResponseCacheConfig& config, const NodeContext& ctx)
    : clock_(*ctx.clock),
      identity_{ctx.pipeline_name, ctx.pipeline_fingerprint},
      cache_sampled_(config.cache_sampled()),
      max_answer_bytes_(config.max_bytes() / 8) {
  StoreLimits limits;
  limits.ttl = duration_nanos(config.ttl());
  limits.max_bytes = config.max_bytes();
  store_ = std::make_shared<ExactStore>(limits, clock_);
  auto store = store_;
  tier_ = std::make_shared<AnswerCacheTier>(
      ctx, "exact",
      AnswerCacheTier::Store{[store](const EntryPredicate& p) { return store->remove_if(p); },
                             [store] { return store->counts(); }},
      optional_kb(config.knowledge_base(), ctx), invalidation_policy(config.invalidate()));
}

void ResponseCacheNode::process(Batch& batch) {
  for (auto& r : batch.requests) {
    if (!r->active()) continue;
    if (!not_cacheable(r->input(), cache_sampled_).empty()) {
      tier_->count_uncacheable();
      continue;
    }
    std::string key = request_cache_key(*r, identity_);
    const Nanos now = clock_.now();
    if (auto answer = store_->find(key); answer && tier_->valid(*answer)) {
      tier_->count_hit(*answer);
      replay(*answer, *r, now);
      continue;
    }
    tier_->count_miss();
    r->add_tap(std::make_shared<AnswerRecorder>(
        [store = store_, tier = tier_, key = std::move(key), tenant = r->tenant](std::shared_ptr<const CachedAnswer> a) {
          if (!tier->valid(*a)) return;  // the knowledge base changed what it cited meanwhile
          store->put(key, tenant, std::move(a));
          tier->publish();
        },
        max_answer_bytes_, now));
  }
}

}  // namespace sluice::cache
