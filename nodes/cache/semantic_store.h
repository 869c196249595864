// SemanticStore: the semantic cache's entries, in process. Each scope (cache_key.h: tenant,
// pipeline, fingerprints, sampling, the conversation before the question) has its own HNSW
// index (retrieval's HnswIndex) over its questions' unit vectors, so a lookup searches only
// questions whose answers could be served, at a cost that grows with log(entries).
//
// find() takes the `candidates` nearest cached questions of the scope, best first; the first
// whose similarity reaches the threshold and which every verification guard accepts
// (semantic_guards.h) is the hit. The guard that rejected the best candidate above the threshold
// is reported, so rejections are counted per guard. Entries expire after the ttl and are
// evicted least recently used past the byte budget (the vector and its index links count);
// a removed entry is marked removed in its index, and a scope's index is rebuilt from its live
// vectors once half of it is removed.
//
// Thread-safety: every method from any thread; one mutex (a lookup holds it for one HNSW
// search; its cost at 100,000 entries is not benchmarked yet).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/clock.h"
#include "graph/mutex.h"
#include "nodes/cache/cached_answer.h"
#include "nodes/cache/exact_store.h"
#include "nodes/cache/semantic_guards.h"
#include "nodes/retrieval/dense/hnsw_index.h"

namespace sluice::cache {

struct SemanticLookup {
  std::shared_ptr<const CachedAnswer> answer;  // the hit, or null
  float similarity = 0;                        // the hit's, or the best candidate's
  std::string matched_question;                // the hit's cached question
  std::optional<Guard> rejected_by;            // set when a candidate above the threshold failed a guard
};

class SemanticStore {
 public:
  SemanticStore(StoreLimits limits, const Clock& clock, std::size_t dimension);

  SemanticLookup find(const std::string& scope, const float* vector, const QuestionFeatures& features,
                      float threshold, std::size_t candidates) EXCLUDES(mu_);
  // Stores the entry, then evicts past the budget; with a `condition`, only if it holds when
  // asked inside the store's critical section (fill_epoch.h). Returns whether it was stored.
  bool put(const std::string& scope, const std::string& tenant, const std::string& question, const float* vector,
           std::shared_ptr<const CachedAnswer> answer, const std::function<bool()>& condition = {}) EXCLUDES(mu_);
  // The same with question_features(question) already made (the lookup that missed made them).
  bool put(const std::string& scope, const std::string& tenant, const std::string& question, QuestionFeatures features,
           const float* vector, std::shared_ptr<const CachedAnswer> answer,
           const std::function<bool()>& condition = {}) EXCLUDES(mu_);
  std::size_t remove_if(const EntryPredicate& predicate) EXCLUDES(mu_);
  StoreCounts counts() const EXCLUDES(mu_);
  std::size_t dimension() const { return dim_; }

 private:
  struct Entry;
  using Lru = std::list<std::uint64_t>;  // entry ids, most recently used first
  struct Entry {
    std::string scope, tenant, question;
    QuestionFeatures features;
    std::vector<float> vector;
    std::shared_ptr<const CachedAnswer> answer;
    std::size_t bytes = 0;
    std::size_t label = 0;  // its position in the scope's index
    Lru::iterator lru;
  };
  struct Scope {
    std::unique_ptr<retrieval::HnswIndex> index;
    std::vector<std::uint64_t> ids;  // label -> entry id (0: removed)
    std::size_t removed = 0;
  };
  void erase(std::uint64_t id) REQUIRES(mu_);
  void rebuild(Scope& scope) REQUIRES(mu_);
  std::unique_ptr<retrieval::HnswIndex> new_index() const;
  bool expired(const Entry& e, Nanos now) const;

  const StoreLimits limits_;
  const Clock& clock_;
  const std::size_t dim_;
  mutable Mutex mu_;
  std::unordered_map<std::uint64_t, Entry> entries_ GUARDED_BY(mu_);
  std::map<std::string, Scope> scopes_ GUARDED_BY(mu_);
  Lru lru_ GUARDED_BY(mu_);
  std::uint64_t next_id_ GUARDED_BY(mu_) = 1;
  StoreCounts counts_ GUARDED_BY(mu_);
};

}  // namespace sluice::cache
