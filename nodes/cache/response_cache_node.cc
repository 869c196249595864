#include "nodes/cache/response_cache_node.h"

#include <cstdio>

#include "graph/fnv1a.h"
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
      identity_{ctx.pipeline_name, ctx.pipeline_fingerprint, ""},
      cache_sampled_(config.cache_sampled()),
      max_answer_bytes_(config.max_bytes() / 8) {
  if (config.store() == "off") {
    std::fprintf(stderr, "sluice: response_cache node '%s' is off (store: off): requests pass on uncached\n", ctx.name.c_str());
    return;
  }
  StoreLimits& limits = store_limits_;
  limits.ttl = duration_nanos(config.ttl());
  limits.max_bytes = config.max_bytes();
  store_ = std::make_shared<ExactStore>(limits, clock_);
  auto store = store_;
  tier_ = std::make_shared<AnswerCacheTier>(
      ctx, "exact",
      AnswerCacheTier::Store{[store](const EntryPredicate& p) { return store->remove_if(p); },
                             [store] { return store->counts(); }},
      optional_kb(config.knowledge_base(), ctx), invalidation_policy(config.invalidate()));
  if (config.store() == "redis") {
    std::weak_ptr<AnswerCacheTier> tier = tier_;
    shared_ = node_redis_tier(ctx, "exact", config.redis_url(), duration_nanos(config.redis_timeout()), limits.ttl,
                              /*mirror=*/false,
                              RedisTier::Handlers{nullptr,
                                                  [tier](const SharedInvalidation& what) {
                                                    if (auto t = tier.lock()) t->apply_remote(what);
                                                  },
                                                  nullptr});
    tier_->set_shared(shared_);
  }
}

// The Redis id of a key: its hash (the record holds the whole key, compared on a hit).
std::string ResponseCacheNode::shared_id(const std::string& key) {
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(fnv1a64(key)));
  return id;
}

std::shared_ptr<const CachedAnswer> ResponseCacheNode::find(const std::string& key, const std::string& tenant) {
  if (auto answer = store_->find(key)) return answer;
  if (!shared_) return nullptr;
  const std::uint64_t fill = tier_->begin_fill();  // before the read (fill_epoch.h)
  auto record = shared_->get(shared_id(key));
  if (!record || record->key() != key) return nullptr;
  auto answer = answer_from_record(*record, clock_);
  if (!answer || (store_limits_.ttl > 0 && clock_.now() - answer->created >= store_limits_.ttl)) return nullptr;
  shared_->count_hit();
  // L1 keeps it for the next lookup here, unless an invalidation ran since the read.
  if (store_->put_if(key, tenant, answer, [&] { return tier_->fill_current(fill); })) tier_->publish();
  return answer;
}

void ResponseCacheNode::process(Batch& batch) {
  if (!store_) return;  // store: off
  for (auto& r : batch.requests) {
    if (!r->active()) continue;
    if (!not_cacheable(r->input(), cache_sampled_).empty()) {
      tier_->count_uncacheable();
      continue;
    }
    std::string key = request_cache_key(*r, identity_);
    const Nanos now = clock_.now();
    if (auto answer = find(key, r->tenant); answer && tier_->valid(*answer)) {
      tier_->count_hit(*answer);
      replay(*answer, *r, now);
      continue;
    }
    tier_->count_miss();
    r->add_tap(std::make_shared<AnswerRecorder>(
        [store = store_, tier = tier_, shared = shared_, clock = &clock_, key = std::move(key),
         tenant = r->tenant](std::shared_ptr<const CachedAnswer> a) {
          if (!tier->valid(*a)) return;  // the knowledge base changed what it cited meanwhile
          if (shared) {
            v1::CachedAnswerRecord record = answer_record(*a, *clock);
            record.set_key(key);
            record.set_tenant(tenant);
            shared->put(shared_id(key), record);
          }
          store->put(key, tenant, std::move(a));
          tier->publish();
        },
        max_answer_bytes_, now));
  }
}

}  // namespace sluice::cache
