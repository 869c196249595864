// AnswerCacheTier: what the two answer cache nodes (response_cache, semantic_cache) share
// besides their store: the CacheTier a connector sees (GET and DELETE /v1/cache), the
// knowledge-base listener that drops entries citing changed or deleted chunks before the
// ingest that changed them returns (kb_change_log.h), the hand-over of invalidations to the
// shared Redis tier when there is one (redis_tier.h), and the metrics:
//
//   sluice_cache_lookups_total{pipeline,node,tier,result}      hit, miss, uncacheable
//   sluice_cache_guard_rejections_total{pipeline,node,guard}   semantic candidates a guard refused
//   sluice_cache_seconds_saved_total{pipeline,node,tier}       the original answers' times, per hit
//   sluice_cache_entries / sluice_cache_bytes{pipeline,node,tier}         gauges
//   sluice_cache_removals_total{pipeline,node,tier,reason}     evicted (byte budget), expired, invalidated
//
// Held by shared_ptr: the recorders of requests still answering keep it alive past the node.
// Thread-safety: every method from any thread.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "graph/cache_tier.h"
#include "graph/metrics.h"
#include "graph/mutex.h"
#include "graph/node.h"
#include "nodes/cache/cached_answer.h"
#include "nodes/cache/exact_store.h"
#include "nodes/cache/fill_epoch.h"
#include "nodes/cache/kb_change_log.h"
#include "nodes/cache/redis_tier.h"
#include "nodes/cache/semantic_guards.h"

namespace sluice::retrieval {
class KnowledgeBase;
}

namespace sluice::cache {

class AnswerCacheTier final : public CacheTier {
 public:
  struct Store {
    std::function<std::size_t(const EntryPredicate&)> remove_if;
    std::function<StoreCounts()> counts;
  };
  // `kb` may be null (no invalidation by content). Registers the listener on it.
  AnswerCacheTier(const NodeContext& ctx, std::string tier, Store store, std::shared_ptr<retrieval::KnowledgeBase> kb,
                  InvalidationPolicy policy);
  ~AnswerCacheTier() override;

  std::string node() const override { return node_; }
  std::string tier() const override { return tier_; }
  std::size_t invalidate(const CacheInvalidation& what) override;
  std::string stats_json() const override;

  // Whether an answer may be stored or served now (KbChangeLog::valid).
  bool valid(const CachedAnswer& answer) const { return log_.valid(answer.kb_version, answer.cited); }
  void count_hit(const CachedAnswer& answer);
  void count_miss() {
    miss_count_.fetch_add(1, std::memory_order_relaxed);
    if (misses_) misses_->inc();
  }
  void count_uncacheable() { if (uncacheable_) uncacheable_->inc(); }
  void count_rejection(Guard guard);
  // Brings the gauges and removal counters up to the store's counts (after a put or removal).
  void publish() EXCLUDES(publish_mu_);

  // store: redis: invalidations made here also go to Redis and the other instances (set once,
  // before requests flow).
  void set_shared(std::shared_ptr<RedisTier> shared) { shared_ = std::move(shared); }
  // An invalidation another instance made: drops the same entries from this L1.
  void apply_remote(const SharedInvalidation& what);
  // A lookup about to fill L1 from the shared tier takes begin_fill() before its Redis read and
  // stores the entry only where fill_current(taken) holds under the store's lock (fill_epoch.h):
  // an invalidation since the read, or no subscription to the other instances' invalidations
  // (begin_fill() 0), leaves L1 alone. Every invalidation bumps it after Redis and before L1.
  std::uint64_t begin_fill() const { return shared_ && shared_->subscribed() ? fill_epoch_.begin() : 0; }
  bool fill_current(std::uint64_t taken) const { return fill_epoch_.current(taken); }
  // The epoch alone, for the subscriber thread's own reads (it is subscribed when it reads).
  std::uint64_t fill_epoch() const { return fill_epoch_.begin(); }

 private:
  void on_change(std::uint64_t version, const std::vector<std::string>& retired);
  // The L1 half of every invalidation, after its Redis half: bumps the fill epoch, then removes.
  std::size_t remove_local(const EntryPredicate& predicate);

  const std::string node_, tier_;
  const Store store_;
  KbChangeLog log_;
  std::shared_ptr<retrieval::KnowledgeBase> kb_;
  std::shared_ptr<RedisTier> shared_;
  FillEpoch fill_epoch_;
  std::uint64_t listener_ = 0;
  Counter* hits_ = nullptr;
  Counter* misses_ = nullptr;
  Counter* uncacheable_ = nullptr;
  Counter* saved_ = nullptr;
  std::array<Counter*, kGuardCount> rejections_{};
  Gauge* entries_ = nullptr;
  Gauge* bytes_ = nullptr;
  Counter* evicted_ = nullptr;
  Counter* expired_ = nullptr;
  Counter* invalidated_ = nullptr;
  std::atomic<std::uint64_t> hit_count_{0}, miss_count_{0}, rejection_count_{0};
  mutable Mutex publish_mu_;
  StoreCounts published_ GUARDED_BY(publish_mu_);
};

}  // namespace sluice::cache
