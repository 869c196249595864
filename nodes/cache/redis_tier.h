// RedisTier: the answer caches' optional shared tier (store: redis; docs/caching.md, "Shared
// across instances"). The in-process store stays in front as L1; Redis holds every instance's
// entries as L2 so that instances behind one load balancer share hits.
//
//   exact     an entry is the value <prefix>e:<hash of the key>, a CachedAnswerRecord with the
//             whole key inside: get() returns it and the caller compares the key (a hash
//             collision is a miss, never a wrong answer). Expires with the tier's ttl (PX).
//   semantic  Redis (Debian 12's 7.0) has no vector search, so entries are mirrored: put()
//             also publishes the entry's id on <prefix>events and every other instance loads
//             it into its own index (Handlers::added); a (re)connecting instance loads all of
//             them (SCAN pages, each page's values in one MGET), within its L1 byte budget.
//   both      sorted sets <prefix>i:t:<tenant>, <prefix>i:c:<chunk key> and <prefix>i:all index
//             the entries, each member scored by its entry's expiry on the server's clock
//             (+inf without a ttl), and the list <prefix>m:<id> names an entry's indexes. A put
//             writes the entry, its list and its index members in one script (never one
//             without the others) and drops each index's members already expired, so an index
//             holds about the live entries. invalidate() deletes what DELETE /v1/cache or a
//             knowledge-base update selects: the index read in pages with ZSCAN (a large one
//             never arrives as one reply), each page one script that deletes its entries and
//             takes them out of every index their lists name, never an index as a whole (an
//             entry put meanwhile stays indexed); then publishes it, and the other instances
//             drop the same from their L1 (Handlers::invalidated). The scripts touch keys they
//             derive (an entry's indexes), so the tier needs one Redis, not a cluster.
//
// Outages: while Redis is unreachable, lookups miss L2 at once (RedisConnection fails fast),
// puts are dropped, and invalidations are queued (up to 64; more collapse into "all") and
// applied when it is back: by the next call that reaches it (a lookup applies them before it
// reads), or on resubscribing. An instance whose subscription broke may have missed others'
// invalidations, so on reconnecting it drops its whole L1 (the safe side) and, for the
// semantic tier, reloads the entries from Redis. No restart is needed either way.
//
// Metrics: sluice_cache_redis_up{pipeline,node,tier} (gauge), sluice_cache_redis_errors_total,
// sluice_cache_redis_hits_total (lookups L2 answered), sluice_cache_redis_mirrored_total
// (entries loaded from other instances).
//
// The record and event formats are cache_wire.h's.
//
// Thread-safety: every method from any thread; the handlers run on the subscriber thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "graph/metrics.h"
#include "graph/mutex.h"
#include "graph/node.h"
#include "nodes/cache/cache_wire.h"
#include "nodes/cache/cached_answer.h"
#include "nodes/cache/redis_connection.h"
#include "sluice/cache_record.pb.h"

namespace sluice::cache {

class RedisTier {
 public:
  struct Options {
    RedisAddress address;
    std::chrono::milliseconds timeout{50};
    std::string prefix;   // "sluice:cache:<pipeline>:<node>:"
    Nanos ttl = 0;        // 0: entries do not expire
    bool mirror = false;  // semantic: load every entry into L1
  };
  struct Handlers {
    // mirror: an entry to load; `fill` is what begin_fill returned before its Redis read, for
    // the store's condition (fill_epoch.h: an invalidation here since the read wins).
    std::function<void(const v1::CachedAnswerRecord&, std::uint64_t fill)> added;
    std::function<void(const SharedInvalidation&)> invalidated;  // drop these from L1
    std::function<std::uint64_t()> begin_fill;                    // null: fill 0
  };
  RedisTier(Options options, Handlers handlers, MetricsRegistry* metrics, const Labels& labels);
  ~RedisTier();
  RedisTier(const RedisTier&) = delete;
  RedisTier& operator=(const RedisTier&) = delete;

  // The record stored under `id`, or nullopt (absent, undecodable, or Redis down).
  std::optional<v1::CachedAnswerRecord> get(const std::string& id);
  // Stores the record under `id` with the ttl, indexes it, and (mirror) announces it.
  void put(const std::string& id, const v1::CachedAnswerRecord& record);
  // Deletes the selected entries from Redis and tells the other instances.
  void invalidate(const SharedInvalidation& what);
  void count_hit() { if (hits_) hits_->inc(); }
  bool up() const { return commands_.up(); }
  // Whether this instance is subscribed to the others' events now (what it misses meanwhile,
  // it makes up for by dropping L1 when the subscription comes back). The first subscription
  // comes up a few milliseconds after construction; an invalidation published before it is not
  // seen here, so the caches copy nothing from Redis into L1 until it is up (fill_epoch.h).
  bool subscribed() const { return subscribed_.load(std::memory_order_acquire); }
  // A new entry id for a semantic entry: unique across instances.
  std::string new_id();

 private:
  void subscribe_loop();
  void on_connected(bool after_outage);
  void load_all();
  // A GET's reply as a record: nullopt when absent, or (logged, counted) not a record of ours.
  std::optional<v1::CachedAnswerRecord> decode(const std::string& key, const RedisReply& value);
  // <prefix>e:<id> (an entry), <prefix>i:<kind>[:<name>] (an index), <prefix>m:<id> (the list
  // of an entry's indexes)
  std::string entry_key(std::string_view id) const;
  std::string index_key(std::string_view kind, std::string_view name = {}) const;
  std::string index_list_key(std::string_view id) const;
  bool delete_indexed(const std::string& index);
  bool apply(const SharedInvalidation& what);
  // Applies the queued invalidations: called once Redis has answered (a successful call, a
  // resubscription), so recovery does not wait for the subscription to break and come back.
  void retry_pending();
  void error();

  const Options options_;
  const Handlers handlers_;
  const std::string instance_;  // random: tells this instance's own messages apart
  RedisConnection commands_;
  std::atomic<std::uint64_t> next_id_{1};
  std::atomic<bool> subscribed_{false};
  std::atomic<bool> put_refused_{false};  // the first refused put was logged
  Gauge* up_ = nullptr;
  Counter* errors_ = nullptr;
  Counter* hits_ = nullptr;
  Counter* mirrored_ = nullptr;

  Mutex pending_mu_;
  std::vector<SharedInvalidation> pending_ GUARDED_BY(pending_mu_);  // not yet applied to Redis (<= 64)
  std::atomic<bool> has_pending_{false};  // pending_ is not empty: the hot path's lock-free check

  Mutex stop_mu_;
  CondVar stop_cv_;
  bool stop_ GUARDED_BY(stop_mu_) = false;
  int subscriber_fd_ GUARDED_BY(stop_mu_) = -1;  // shut down to wake the subscriber
  std::thread subscriber_;
};

// The shared tier of a cache node with store: redis: prefix "sluice:cache:<pipeline>:<node>:",
// labels pipeline/node/tier. Throws std::invalid_argument naming redis_url when it is not one.
std::shared_ptr<RedisTier> node_redis_tier(const NodeContext& ctx, const std::string& tier, const std::string& url,
                                           Nanos timeout, Nanos ttl, bool mirror, RedisTier::Handlers handlers);

}  // namespace sluice::cache
