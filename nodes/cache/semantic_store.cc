#include "nodes/cache/semantic_store.h"

#include <algorithm>

namespace sluice::cache {
namespace {

// hnswlib's per-element memory at m = 16: links of level 0 (2m) plus the upper levels' share.
constexpr std::size_t kIndexBytesPerEntry = 2 * 16 * 4 + 64;

}  // namespace

SemanticStore::SemanticStore(StoreLimits limits, const Clock& clock, std::size_t dimension)
    : limits_(limits), clock_(clock), dim_(dimension) {}

std::unique_ptr<retrieval::HnswIndex> SemanticStore::new_index() const {
  retrieval::HnswOptions o;
  o.ef_construction = 100;  // one insert per answer: half hnswlib's default build beam (recall not yet measured here)
  o.ef_search = 64;
  o.parallel_insert = false;
  return std::make_unique<retrieval::HnswIndex>(dim_, o);
}

bool SemanticStore::expired(const Entry& e, Nanos now) const {
  return limits_.ttl > 0 && now - e.answer->created >= limits_.ttl;
}

void SemanticStore::erase(std::uint64_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  auto s = scopes_.find(e.scope);
  if (s != scopes_.end()) {
    Scope& scope = s->second;
    scope.index->mark_removed(e.label);
    scope.ids[e.label] = 0;
    ++scope.removed;
    if (scope.removed == scope.ids.size()) {
      scopes_.erase(s);
    } else if (scope.removed * 2 > scope.ids.size() && scope.ids.size() >= 64) {
      lru_.erase(e.lru);
      counts_.bytes -= e.bytes;
      --counts_.entries;
      entries_.erase(it);
      rebuild(scope);
      return;
    }
  }
  lru_.erase(e.lru);
  counts_.bytes -= e.bytes;
  --counts_.entries;
  entries_.erase(it);
}

void SemanticStore::rebuild(Scope& scope) {
  auto index = new_index();
  std::vector<std::uint64_t> ids;
  std::vector<float> rows;
  for (std::uint64_t id : scope.ids) {
    if (id == 0) continue;
    Entry& e = entries_.at(id);
    e.label = ids.size();
    ids.push_back(id);
    rows.insert(rows.end(), e.vector.begin(), e.vector.end());
  }
  index->add(rows.data(), ids.size());
  scope.index = std::move(index);
  scope.ids = std::move(ids);
  scope.removed = 0;
}

SemanticLookup SemanticStore::find(const std::string& scope_key, const float* vector, const QuestionFeatures& features,
                                   float threshold, std::size_t candidates) {
  SemanticLookup out;
  const Nanos now = clock_.now();
  MutexLock lock(mu_);
  auto s = scopes_.find(scope_key);
  if (s == scopes_.end()) return out;
  const auto hits = s->second.index->search(vector, 1, candidates);
  bool best = true;
  std::vector<std::uint64_t> stale;
  for (const auto& hit : hits[0]) {
    const std::uint64_t id = s->second.ids[hit.doc];
    if (id == 0) continue;
    Entry& e = entries_.at(id);
    if (expired(e, now)) {
      stale.push_back(id);
      continue;
    }
    if (best) out.similarity = hit.score;
    if (hit.score < threshold) break;  // best first: none further reaches it
    if (auto guard = guard_mismatch(features, e.features)) {
      if (best) out.rejected_by = guard;
      best = false;
      continue;
    }
    out.answer = e.answer;
    out.similarity = hit.score;
    out.matched_question = e.question;
    out.rejected_by.reset();
    lru_.splice(lru_.begin(), lru_, e.lru);
    break;
  }
  for (std::uint64_t id : stale) {
    ++counts_.expired;
    erase(id);
  }
  return out;
}

bool SemanticStore::put(const std::string& scope_key, const std::string& tenant, const std::string& question,
                        const float* vector, std::shared_ptr<const CachedAnswer> answer,
                        const std::function<bool()>& condition) {
  return put(scope_key, tenant, question, question_features(question), vector, std::move(answer), condition);
}

bool SemanticStore::put(const std::string& scope_key, const std::string& tenant, const std::string& question,
                        QuestionFeatures features, const float* vector, std::shared_ptr<const CachedAnswer> answer,
                        const std::function<bool()>& condition) {
  Entry e;
  e.scope = scope_key;
  e.tenant = tenant;
  e.question = question;
  e.features = std::move(features);
  e.vector.assign(vector, vector + dim_);
  e.bytes = answer->bytes() + scope_key.size() + tenant.size() + 2 * question.size() + dim_ * sizeof(float) +
            kIndexBytesPerEntry + sizeof(Entry) + 64;
  if (e.bytes > limits_.max_bytes) return false;
  e.answer = std::move(answer);
  const Nanos now = clock_.now();
  MutexLock lock(mu_);
  if (condition && !condition()) return false;
  Scope& scope = scopes_[scope_key];
  if (!scope.index) scope.index = new_index();
  const std::uint64_t id = next_id_++;
  e.label = scope.ids.size();
  scope.ids.push_back(id);
  scope.index->add(e.vector.data(), 1);
  lru_.push_front(id);
  e.lru = lru_.begin();
  counts_.bytes += e.bytes;
  ++counts_.entries;
  entries_.emplace(id, std::move(e));
  while (counts_.bytes > limits_.max_bytes && !lru_.empty()) {
    const std::uint64_t last = lru_.back();
    if (expired(entries_.at(last), now)) {
      ++counts_.expired;
    } else {
      ++counts_.evicted;
    }
    erase(last);
  }
  return true;
}

std::size_t SemanticStore::remove_if(const EntryPredicate& predicate) {
  MutexLock lock(mu_);
  std::vector<std::uint64_t> doomed;
  for (const auto& [id, e] : entries_) {
    if (predicate(EntryInfo{e.tenant, *e.answer})) doomed.push_back(id);
  }
  for (std::uint64_t id : doomed) erase(id);
  counts_.invalidated += doomed.size();
  return doomed.size();
}

StoreCounts SemanticStore::counts() const {
  MutexLock lock(mu_);
  return counts_;
}

}  // namespace sluice::cache
