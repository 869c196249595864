#include "nodes/cache/answer_cache_tier.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "nodes/retrieval/kb/knowledge_base.h"

namespace sluice::cache {

AnswerCacheTier::AnswerCacheTier(const NodeContext& ctx, std::string tier, Store store,
                                 std::shared_ptr<retrieval::KnowledgeBase> kb, InvalidationPolicy policy)
    : node_(ctx.name), tier_(std::move(tier)), store_(std::move(store)), log_(policy, kb ? kb->version() : 0),
      kb_(std::move(kb)) {
  if (ctx.metrics) {
    MetricsRegistry& m = *ctx.metrics;
    const Labels l{{"pipeline", ctx.pipeline_name}, {"node", node_}, {"tier", tier_}};
    auto with = [&](const char* key, const char* value) {
      Labels x = l;
      x.emplace_back(key, value);
      return x;
    };
    const char* lookups = "Answer cache lookups by result: hit, miss, uncacheable (not a cacheable request)";
    hits_ = &m.counter("sluice_cache_lookups_total", lookups, with("result", "hit"));
    misses_ = &m.counter("sluice_cache_lookups_total", lookups, with("result", "miss"));
    uncacheable_ = &m.counter("sluice_cache_lookups_total", lookups, with("result", "uncacheable"));
    saved_ = &m.counter("sluice_cache_seconds_saved_total",
                        "Seconds the cached answers took to make when they were made, summed over hits", l);
    entries_ = &m.gauge("sluice_cache_entries", "Entries an answer cache holds", l);
    bytes_ = &m.gauge("sluice_cache_bytes", "Bytes an answer cache's entries hold (its budget's measure)", l);
    const char* removals = "Answer cache entries removed, by reason: evicted (byte budget), expired (ttl), invalidated";
    evicted_ = &m.counter("sluice_cache_removals_total", removals, with("reason", "evicted"));
    expired_ = &m.counter("sluice_cache_removals_total", removals, with("reason", "expired"));
    invalidated_ = &m.counter("sluice_cache_removals_total", removals, with("reason", "invalidated"));
    if (tier_ == "semantic") {
      for (int g = 0; g < kGuardCount; ++g) {
        Labels x{{"pipeline", ctx.pipeline_name}, {"node", node_}, {"guard", guard_name(static_cast<Guard>(g))}};
        rejections_[g] = &m.counter("sluice_cache_guard_rejections_total",
                                    "Semantic cache candidates above the threshold that a verification guard refused", x);
      }
    }
  }
  if (kb_) {
    listener_ = kb_->add_change_listener(
        [this](const retrieval::KbChange& change) { on_change(change.version, change.retired); });
  }
}

AnswerCacheTier::~AnswerCacheTier() {
  if (kb_) kb_->remove_change_listener(listener_);
}

void AnswerCacheTier::on_change(std::uint64_t version, const std::vector<std::string>& retired) {
  log_.record(version, retired);
  // Redis first, then L1: a lookup here that read the entry from Redis before it went cannot
  // put it back into L1 afterwards (fill_epoch.h).
  if (shared_) {
    SharedInvalidation what;
    what.all = log_.policy() == InvalidationPolicy::kAll;
    if (!what.all) what.chunks = retired;
    if (what.all || !what.chunks.empty()) shared_->invalidate(what);
  }
  remove_local([&](const EntryInfo& e) { return log_.retires(e.answer.kb_version, e.answer.cited, version, retired); });
}

std::size_t AnswerCacheTier::invalidate(const CacheInvalidation& what) {
  if (shared_) {
    SharedInvalidation shared;
    shared.all = what.all_tenants;
    if (!what.all_tenants) shared.tenant = what.tenant;
    shared_->invalidate(shared);
  }
  return remove_local([&](const EntryInfo& e) { return what.all_tenants || e.tenant == what.tenant; });
}

void AnswerCacheTier::apply_remote(const SharedInvalidation& what) {
  remove_local([&](const EntryInfo& e) {
    if (what.all || (what.tenant && e.tenant == *what.tenant)) return true;
    for (const auto& c : what.chunks) {
      if (std::binary_search(e.answer.cited.begin(), e.answer.cited.end(), c)) return true;
    }
    return false;
  });
}

std::size_t AnswerCacheTier::remove_local(const EntryPredicate& predicate) {
  fill_epoch_.bump();
  const std::size_t n = store_.remove_if(predicate);
  publish();
  return n;
}

void AnswerCacheTier::count_hit(const CachedAnswer& answer) {
  hit_count_.fetch_add(1, std::memory_order_relaxed);
  if (hits_) hits_->inc();
  if (saved_) saved_->inc(answer.seconds);
}

void AnswerCacheTier::count_rejection(Guard guard) {
  rejection_count_.fetch_add(1, std::memory_order_relaxed);
  if (Counter* c = rejections_[static_cast<int>(guard)]) c->inc();
}

void AnswerCacheTier::publish() {
  const StoreCounts now = store_.counts();
  MutexLock lock(publish_mu_);
  if (entries_) entries_->set(static_cast<double>(now.entries));
  if (bytes_) bytes_->set(static_cast<double>(now.bytes));
  auto delta = [](Counter* c, std::uint64_t was, std::uint64_t is) {
    if (c && is > was) c->inc(static_cast<double>(is - was));
  };
  delta(evicted_, published_.evicted, now.evicted);
  delta(expired_, published_.expired, now.expired);
  delta(invalidated_, published_.invalidated, now.invalidated);
  published_ = now;
}

std::string AnswerCacheTier::stats_json() const {
  const StoreCounts c = store_.counts();
  nlohmann::json j{{"node", node_},
                   {"tier", tier_},
                   {"entries", c.entries},
                   {"bytes", c.bytes},
                   {"hits", hit_count_.load(std::memory_order_relaxed)},
                   {"misses", miss_count_.load(std::memory_order_relaxed)},
                   {"evicted", c.evicted},
                   {"expired", c.expired},
                   {"invalidated", c.invalidated},
                   {"invalidate", log_.policy() == InvalidationPolicy::kAll ? "all" : "cited"}};
  if (tier_ == "semantic") j["guard_rejections"] = rejection_count_.load(std::memory_order_relaxed);
  return j.dump();
}

}  // namespace sluice::cache
