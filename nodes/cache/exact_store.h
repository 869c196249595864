// ExactStore: the response cache's entries, in process: full key -> CachedAnswer, bounded by a
// byte budget with least-recently-used eviction and by a time to live, read with the
// injectable Clock.
//
// A lookup hashes the key to find its bucket and then compares the whole key (the map's key
// equality), so two keys that hash alike are two entries; the hash is injectable so tests can
// force every key into one bucket. Expired entries are dropped when met and when the budget
// needs room. remove_if serves invalidation (DELETE /v1/cache, knowledge-base updates).
//
// Thread-safety: every method from any thread (one mutex; a lookup holds it for a hash, a
// compare and a list splice).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "graph/clock.h"
#include "graph/mutex.h"
#include "nodes/cache/cached_answer.h"

namespace sluice::cache {

struct StoreLimits {
  Nanos ttl = 0;                           // 0: no expiry
  std::size_t max_bytes = 64u << 20;
};

struct StoreCounts {
  std::size_t entries = 0, bytes = 0;
  std::uint64_t evicted = 0;      // for the byte budget
  std::uint64_t expired = 0;
  std::uint64_t invalidated = 0;  // by remove_if
};

// What an entry is, for invalidation predicates.
struct EntryInfo {
  const std::string& tenant;
  const CachedAnswer& answer;
};
using EntryPredicate = std::function<bool(const EntryInfo&)>;

class ExactStore {
 public:
  using Hash = std::function<std::size_t(const std::string&)>;
  ExactStore(StoreLimits limits, const Clock& clock, Hash hash = {});

  // The live entry stored under exactly `key`, made most recently used; nullptr otherwise.
  std::shared_ptr<const CachedAnswer> find(const std::string& key) EXCLUDES(mu_);
  // Stores (or replaces) the entry, then evicts least recently used entries past the budget.
  // An answer larger than the whole budget is not stored.
  void put(const std::string& key, const std::string& tenant, std::shared_ptr<const CachedAnswer> answer) EXCLUDES(mu_);
  // put() only if `condition` holds, asked inside the store's critical section (so an
  // invalidation's remove_if comes wholly before or after it: fill_epoch.h). Returns whether
  // the entry was stored.
  bool put_if(const std::string& key, const std::string& tenant, std::shared_ptr<const CachedAnswer> answer,
              const std::function<bool()>& condition) EXCLUDES(mu_);
  // Removes every entry the predicate selects; returns how many.
  std::size_t remove_if(const EntryPredicate& predicate) EXCLUDES(mu_);
  StoreCounts counts() const EXCLUDES(mu_);

 private:
  struct Entry {
    std::string key, tenant;
    std::shared_ptr<const CachedAnswer> answer;
    std::size_t bytes = 0;
  };
  using Lru = std::list<Entry>;  // most recently used first
  struct KeyHash {
    const Hash* hash;
    std::size_t operator()(const std::string& k) const { return (*hash)(k); }
  };
  void erase(Lru::iterator it) REQUIRES(mu_);
  bool expired(const Entry& e, Nanos now) const;

  const StoreLimits limits_;
  const Clock& clock_;
  const Hash hash_;
  mutable Mutex mu_;
  Lru lru_ GUARDED_BY(mu_);
  std::unordered_map<std::string, Lru::iterator, KeyHash> index_ GUARDED_BY(mu_);
  StoreCounts counts_ GUARDED_BY(mu_);
};

}  // namespace sluice::cache
