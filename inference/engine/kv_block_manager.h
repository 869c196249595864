// KvBlockManager: the serving engine's KV memory. Reference-counted blocks of a KvBlockPool
// plus a verified prefix cache, so requests that share a prefix (a byte-stable system prompt,
// a multi-turn history) share its keys and values instead of recomputing them.
//
// Contract:
// - A sequence owns a block table (std::vector<int32_t>) and one reference per entry. Blocks
//   come from allocate() or match(); release() drops a reference.
// - A full block (block_size positions computed) may be published: it is then found by the
//   chain hash of (scope, parent block's hash, its tokens). Scope is the caller's (model,
//   tenant) key, so tenants never share KV. Published blocks are immutable.
// - Reuse is verified: a hash hit counts only when the candidate's scope, its parent block (the
//   block just matched) and every one of its tokens equal the request's. A forged or accidental
//   hash collision is refused (counted), never served.
// - Copy-on-write: a block that is shared (more than one reference) or published is copied to a
//   private block before anything writes into it (make_writable). A request that matches only
//   the first k tokens of a cached block gets a private copy holding those k positions.
// - Eviction: a published block whose last reference goes stays cached, idle; allocate() takes
//   free blocks first, then evicts idle cached blocks least recently used first. Evicting a
//   block also drops its cached descendants (which are idle too: whoever holds a child holds
//   its parent), so a chain is never reachable through a recycled block.
// - One thread at a time (the engine's step thread); stats() is a plain snapshot.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <unordered_map>
#include <vector>

#include "inference/llama/kv_cache.h"

namespace sluice::inference {

struct KvBlockStats {
  int total = 0;        // blocks in the pool
  int free = 0;         // never used or evicted
  int in_use = 0;       // referenced by at least one sequence
  int shared = 0;       // referenced by more than one sequence
  int cached_idle = 0;  // published, unreferenced, evictable
  uint64_t prefix_hits = 0;          // match() calls that reused at least one position
  uint64_t prefix_reused_tokens = 0;  // positions not recomputed thanks to the cache
  uint64_t evictions = 0;            // cached blocks evicted to make room
  uint64_t cow_copies = 0;           // blocks copied before a write (or for a partial match)
  uint64_t collisions_refused = 0;   // hash hits whose content did not verify
};

struct PrefixMatch {
  std::vector<int32_t> blocks;  // the start of the sequence's block table (references held)
  int64_t tokens = 0;           // positions whose keys and values are already computed
};

class KvBlockManager {
 public:
  // (parent_hash, tokens of one block) -> chain hash. Injectable so tests can force collisions.
  using ChainHash = std::function<uint64_t(uint64_t, const int32_t*, int)>;
  static uint64_t default_hash(uint64_t parent_hash, const int32_t* tokens, int n);

  explicit KvBlockManager(KvBlockPool& pool, ChainHash hash = default_hash);

  int block_size() const { return pool_.block_size(); }
  // Replaces the chain hash; only before anything is published (tests force collisions).
  void set_chain_hash(ChainHash hash);
  KvBlockPool& pool() { return pool_; }

  // The longest verified cached prefix of tokens[0, n), at most max_tokens positions. May
  // allocate one block for a partial match; returns no blocks when nothing matches.
  PrefixMatch match(uint64_t scope, const int32_t* tokens, int64_t n, int64_t max_tokens);

  int32_t allocate();  // -1 when every block is referenced
  void release(int32_t block);
  void release_all(std::vector<int32_t>& table);  // last entry first, so chains' tails evict first
  // Blocks allocate() could hand out now (free plus idle cached).
  int available() const { return pool_.free_blocks() + int(lru_.size()); }

  // Ensures table[index] is private to its holder (copying it if shared or published). False
  // when no block is available for the copy.
  bool make_writable(std::vector<int32_t>& table, size_t index);

  // Publishes table[index], which holds block_size computed positions for `block_tokens`, as a
  // cached prefix block. Its parent, table[index - 1], must be published (else nothing
  // happens). When an identical block is already cached, table[index] is switched to that one
  // and this copy freed (deduplication). A colliding hash with different content is counted and
  // left unpublished.
  void publish(uint64_t scope, std::vector<int32_t>& table, size_t index, const int32_t* block_tokens);

  bool is_published(int32_t block) const { return meta_[size_t(block)].published; }
  int references(int32_t block) const { return meta_[size_t(block)].refs; }
  KvBlockStats stats() const;

 private:
  struct Meta {
    int refs = 0;
    bool published = false;
    uint64_t scope = 0;
    uint64_t hash = 0;
    int32_t parent = -1;
    std::vector<int32_t> tokens;    // the block's tokens, for verification (published only)
    std::vector<int32_t> children;  // published blocks whose parent this is
    std::list<int32_t>::iterator lru;  // valid while published and idle
  };
  bool verifies(int32_t block, uint64_t scope, int32_t parent, const int32_t* tokens) const;
  const std::vector<int32_t>& children_of(uint64_t scope, int32_t parent) const;
  std::vector<int32_t>& children_of(uint64_t scope, int32_t parent);
  void retain(int32_t block);
  void unpublish(int32_t block);  // drops it (and its descendants) from the cache; idle ones go free
  int32_t take_free();

  KvBlockPool& pool_;
  ChainHash hash_;
  std::vector<Meta> meta_;
  std::unordered_map<uint64_t, int32_t> by_hash_;
  std::unordered_map<uint64_t, std::vector<int32_t>> roots_;  // scope -> published first blocks
  std::list<int32_t> lru_;  // idle published blocks, least recently used first
  KvBlockStats counters_;
};

}  // namespace sluice::inference
