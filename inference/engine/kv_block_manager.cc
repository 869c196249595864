#include "inference/engine/kv_block_manager.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace sluice::inference {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A root block's parent hash: the scope, mixed so scopes 0 and 1 land far apart.
uint64_t root_seed(uint64_t scope) { return mix(scope ^ 0x5eed5eed5eed5eedULL); }

}  // namespace

uint64_t KvBlockManager::default_hash(uint64_t parent_hash, const int32_t* tokens, int n) {
  uint64_t h = mix(parent_hash + 0x9e3779b97f4a7c15ULL);
  for (int i = 0; i < n; ++i) h = mix(h ^ (uint64_t(uint32_t(tokens[i])) + 0x9e3779b97f4a7c15ULL + (h << 6)));
  return h;
}

KvBlockManager::KvBlockManager(KvBlockPool& pool, ChainHash hash)
    : pool_(pool), hash_(std::move(hash)), meta_(size_t(pool.num_blocks())) {}

void KvBlockManager::set_chain_hash(ChainHash hash) {
  if (!by_hash_.empty()) throw std::logic_error("KvBlockManager::set_chain_hash after blocks were published");
  hash_ = std::move(hash);
}

const std::vector<int32_t>& KvBlockManager::children_of(uint64_t scope, int32_t parent) const {
  static const std::vector<int32_t> kNone;
  if (parent >= 0) return meta_[size_t(parent)].children;
  auto it = roots_.find(scope);
  return it == roots_.end() ? kNone : it->second;
}

std::vector<int32_t>& KvBlockManager::children_of(uint64_t scope, int32_t parent) {
  return parent >= 0 ? meta_[size_t(parent)].children : roots_[scope];
}

bool KvBlockManager::verifies(int32_t block, uint64_t scope, int32_t parent, const int32_t* tokens) const {
  const Meta& m = meta_[size_t(block)];
  return m.published && m.scope == scope && m.parent == parent &&
         std::memcmp(m.tokens.data(), tokens, sizeof(int32_t) * size_t(block_size())) == 0;
}

void KvBlockManager::retain(int32_t block) {
  Meta& m = meta_[size_t(block)];
  if (m.refs++ == 0 && m.published) lru_.erase(m.lru);
}

int32_t KvBlockManager::take_free() {
  const int32_t b = pool_.allocate();
  if (b >= 0) meta_[size_t(b)].refs = 1;
  return b;
}

int32_t KvBlockManager::allocate() {
  if (pool_.free_blocks() == 0) {
    if (lru_.empty()) return -1;
    ++counters_.evictions;
    unpublish(lru_.front());
  }
  return take_free();
}

void KvBlockManager::unpublish(int32_t block) {
  Meta& m = meta_[size_t(block)];
  if (!m.published) return;
  // Descendants first: they are idle whenever this block is (see the header).
  std::vector<int32_t> children;
  children.swap(m.children);
  for (int32_t c : children) unpublish(c);
  auto h = by_hash_.find(m.hash);
  if (h != by_hash_.end() && h->second == block) by_hash_.erase(h);
  auto& siblings = children_of(m.scope, m.parent);
  siblings.erase(std::remove(siblings.begin(), siblings.end(), block), siblings.end());
  if (m.parent < 0 && siblings.empty()) roots_.erase(m.scope);
  m.published = false;
  m.tokens.clear();
  m.parent = -1;
  if (m.refs == 0) {
    lru_.erase(m.lru);
    pool_.release(block);
  }
}

void KvBlockManager::release(int32_t block) {
  Meta& m = meta_[size_t(block)];
  if (--m.refs > 0) return;
  if (m.published) {
    m.lru = lru_.insert(lru_.end(), block);
  } else {
    pool_.release(block);
  }
}

void KvBlockManager::release_all(std::vector<int32_t>& table) {
  for (auto it = table.rbegin(); it != table.rend(); ++it) release(*it);
  table.clear();
}

PrefixMatch KvBlockManager::match(uint64_t scope, const int32_t* tokens, int64_t n, int64_t max_tokens) {
  PrefixMatch out;
  const int bs = block_size();
  const int64_t limit = std::min(n, max_tokens);
  uint64_t h = root_seed(scope);
  int32_t parent = -1;
  // Whole blocks, found by chain hash and verified token by token.
  while (out.tokens + bs <= limit) {
    const int32_t* block_tokens = tokens + out.tokens;
    h = hash_(h, block_tokens, bs);
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) break;
    if (!verifies(it->second, scope, parent, block_tokens)) {
      ++counters_.collisions_refused;
      break;
    }
    retain(it->second);
    out.blocks.push_back(it->second);
    out.tokens += bs;
    parent = it->second;
  }
  // Then the cached continuation sharing the longest run of leading tokens, copied (its first
  // k positions are ours; the rest will be overwritten).
  const int64_t room = std::min<int64_t>(bs, limit - out.tokens);
  if (room > 0) {
    int32_t best = -1;
    int64_t best_k = 0;
    for (int32_t c : children_of(scope, parent)) {
      const Meta& m = meta_[size_t(c)];
      int64_t k = 0;
      while (k < room && m.tokens[size_t(k)] == tokens[out.tokens + k]) ++k;
      if (k > best_k) best = c, best_k = k;
    }
    if (best >= 0) {
      retain(best);  // keeps it from being evicted by the allocation below
      const int32_t copy = allocate();
      if (copy >= 0) {
        pool_.copy_block(best, copy);
        ++counters_.cow_copies;
        out.blocks.push_back(copy);
        out.tokens += best_k;
      }
      release(best);
    }
  }
  if (out.tokens > 0) {
    ++counters_.prefix_hits;
    counters_.prefix_reused_tokens += uint64_t(out.tokens);
  }
  return out;
}

bool KvBlockManager::make_writable(std::vector<int32_t>& table, size_t index) {
  const int32_t b = table[index];
  const Meta& m = meta_[size_t(b)];
  if (m.refs == 1 && !m.published) return true;
  const int32_t copy = allocate();
  if (copy < 0) return false;
  pool_.copy_block(b, copy);
  ++counters_.cow_copies;
  table[index] = copy;
  release(b);
  return true;
}

void KvBlockManager::publish(uint64_t scope, std::vector<int32_t>& table, size_t index, const int32_t* block_tokens) {
  const int32_t b = table[index];
  Meta& m = meta_[size_t(b)];
  if (m.published) return;
  const int32_t parent = index == 0 ? -1 : table[index - 1];
  if (parent >= 0 && !meta_[size_t(parent)].published) return;  // chain broken: stays private
  const uint64_t h = hash_(parent >= 0 ? meta_[size_t(parent)].hash : root_seed(scope), block_tokens, block_size());
  auto it = by_hash_.find(h);
  if (it != by_hash_.end()) {
    if (verifies(it->second, scope, parent, block_tokens)) {  // same content computed twice
      retain(it->second);
      table[index] = it->second;
      release(b);
    } else {
      ++counters_.collisions_refused;
    }
    return;
  }
  m.published = true;
  m.scope = scope;
  m.hash = h;
  m.parent = parent;
  m.tokens.assign(block_tokens, block_tokens + block_size());
  by_hash_.emplace(h, b);
  children_of(scope, parent).push_back(b);
}

KvBlockStats KvBlockManager::stats() const {
  KvBlockStats s = counters_;
  s.total = pool_.num_blocks();
  s.free = pool_.free_blocks();
  s.cached_idle = int(lru_.size());
  for (const Meta& m : meta_) {
    if (m.refs > 0) ++s.in_use;
    if (m.refs > 1) ++s.shared;
  }
  return s;
}

}  // namespace sluice::inference
