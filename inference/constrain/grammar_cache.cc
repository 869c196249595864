#include "inference/constrain/grammar_cache.h"

#include <nlohmann/json.hpp>

namespace sluice::constrain {

GrammarCache& GrammarCache::shared() {
  static GrammarCache cache(256);
  return cache;
}

std::shared_ptr<const JsonGrammar> GrammarCache::get(const nlohmann::ordered_json& schema, const std::string& path,
                                                     GrammarError* error) {
  // The key is the schema's compact text, property order kept (it is the order written).
  std::string key = schema.dump();
  {
    MutexLock lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++stats_.hits;
      return it->second->second;
    }
    ++stats_.misses;
  }
  std::shared_ptr<const JsonGrammar> grammar = JsonGrammar::compile(schema, path, error);  // outside the lock
  if (!grammar) return nullptr;
  MutexLock lock(mu_);
  if (index_.count(key)) return grammar;  // another thread compiled it meanwhile
  lru_.emplace_front(key, grammar);
  index_.emplace(std::move(key), lru_.begin());
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
    ++stats_.evictions;
  }
  return grammar;
}

GrammarCache::Stats GrammarCache::stats() const {
  MutexLock lock(mu_);
  Stats s = stats_;
  s.size = lru_.size();
  return s;
}

}  // namespace sluice::constrain
