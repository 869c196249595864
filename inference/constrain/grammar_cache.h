// GrammarCache: compiled grammars by schema text, so a schema a client sends with every request
// (the usual case: one structured-output schema per application) compiles once. Bounded (LRU,
// `capacity` schemas) and measured (hits, misses, evictions). Schemas that fail to compile are
// not cached: the error is cheap to find again and a client fixes it.
//
// Thread-safe: HTTP intake threads share the process's one cache (shared()).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include <nlohmann/json_fwd.hpp>

#include "graph/mutex.h"
#include "inference/constrain/json_grammar.h"

namespace sluice::constrain {

class GrammarCache {
 public:
  explicit GrammarCache(std::size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  static GrammarCache& shared();  // 256 schemas

  // The grammar of `schema` (compiled now or found), or null with *error filled.
  std::shared_ptr<const JsonGrammar> get(const nlohmann::ordered_json& schema, const std::string& path, GrammarError* error);

  struct Stats {
    std::uint64_t hits = 0, misses = 0, evictions = 0;
    std::size_t size = 0;
  };
  Stats stats() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const JsonGrammar>>;
  const std::size_t capacity_;
  mutable Mutex mu_;
  std::list<Entry> lru_ GUARDED_BY(mu_);  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_ GUARDED_BY(mu_);
  Stats stats_ GUARDED_BY(mu_);
};

}  // namespace sluice::constrain
