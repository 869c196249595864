#include "nodes/cache/exact_store.h"

namespace sluice::cache {

ExactStore::ExactStore(StoreLimits limits, const Clock& clock, Hash hash)
    : limits_(limits),
      clock_(clock),
      hash_(hash ? std::move(hash) : Hash([](const std::string& k) { return std::hash<std::string>{}(k); })),
      index_(16, KeyHash{&hash_}) {}

bool ExactStore::expired(const Entry& e, Nanos now) const {
  return limits_.ttl > 0 && now - e.answer->created >= limits_.ttl;
}

void ExactStore::erase(Lru::iterator it) {
  counts_.bytes -= it->bytes;
  --counts_.entries;
  index_.erase(it->key);
  lru_.erase(it);
}

std::shared_ptr<const CachedAnswer> ExactStore::find(const std::string& key) {
  const Nanos now = clock_.now();
  MutexLock lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  if (expired(*it->second, now)) {
    ++counts_.expired;
    erase(it->second);
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->answer;
}

void ExactStore::put(const std::string& key, const std::string& tenant, std::shared_ptr<const CachedAnswer> answer) {
  put_if(key, tenant, std::move(answer), nullptr);
}

bool ExactStore::put_if(const std::string& key, const std::string& tenant, std::shared_ptr<const CachedAnswer> answer,
                        const std::function<bool()>& condition) {
  const std::size_t bytes = answer->bytes() + 2 * key.size() + tenant.size() + sizeof(Entry) + 64;
  if (bytes > limits_.max_bytes) return false;
  const Nanos now = clock_.now();
  MutexLock lock(mu_);
  if (condition && !condition()) return false;
  if (auto it = index_.find(key); it != index_.end()) erase(it->second);
  lru_.push_front(Entry{key, tenant, std::move(answer), bytes});
  index_.emplace(key, lru_.begin());
  counts_.bytes += bytes;
  ++counts_.entries;
  // Room for the budget: expired entries at the cold end go as expiries, the rest as evictions.
  while (counts_.bytes > limits_.max_bytes && !lru_.empty()) {
    auto last = std::prev(lru_.end());
    if (expired(*last, now)) {
      ++counts_.expired;
    } else {
      ++counts_.evicted;
    }
    erase(last);
  }
  return true;
}

std::size_t ExactStore::remove_if(const EntryPredicate& predicate) {
  MutexLock lock(mu_);
  std::size_t removed = 0;
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (predicate(EntryInfo{it->tenant, *it->answer})) {
      erase(it);
      ++removed;
    }
    it = next;
  }
  counts_.invalidated += removed;
  return removed;
}

StoreCounts ExactStore::counts() const {
  MutexLock lock(mu_);
  return counts_;
}

}  // namespace sluice::cache
