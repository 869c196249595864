// KvBlockManager: block accounting, verified prefix sharing, copy-on-write, deduplication,
// LRU eviction (tails first, descendants with their parent), tenant scopes, and refusal of a
// forged hash collision.
#include "inference/engine/kv_block_manager.h"

#include <gtest/gtest.h>

#include <numeric>

namespace sluice::inference {
namespace {

constexpr int kBs = 4;

struct Fixture : ::testing::Test {
  KvBlockPool pool{1, 2, kBs, 8};  // 1 layer, kv_dim 2, 8 blocks of 4 positions
  KvBlockManager blocks{pool};

  // A sequence that computed `tokens` (whole blocks) and published them.
  std::vector<int32_t> computed_sequence(uint64_t scope, const std::vector<int32_t>& tokens) {
    std::vector<int32_t> table;
    for (size_t i = 0; i * kBs < tokens.size(); ++i) {
      const int32_t b = blocks.allocate();
      EXPECT_GE(b, 0);
      table.push_back(b);
      // Distinct key values per block so copies can be checked.
      float* k = static_cast<float*>(pool.layer(0).k) + size_t(b) * kBs * 2;
      for (int j = 0; j < kBs * 2; ++j) k[j] = float(tokens[i * kBs] * 100 + j);
    }
    for (size_t i = 0; (i + 1) * kBs <= tokens.size(); ++i) blocks.publish(scope, table, i, tokens.data() + i * kBs);
    return table;
  }
};

std::vector<int32_t> seq(int from, int n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), from);
  return t;
}

TEST_F(Fixture, AllocateAndReleaseAccountForEveryBlock) {
  std::vector<int32_t> table;
  for (int i = 0; i < 8; ++i) table.push_back(blocks.allocate());
  EXPECT_EQ(blocks.allocate(), -1);
  EXPECT_EQ(blocks.stats().in_use, 8);
  EXPECT_EQ(blocks.stats().free, 0);
  blocks.release_all(table);
  EXPECT_EQ(blocks.stats().free, 8);
  EXPECT_EQ(blocks.stats().in_use, 0);
  EXPECT_EQ(blocks.available(), 8);
}

TEST_F(Fixture, FullBlocksOfAPublishedPrefixAreSharedNotRecomputed) {
  const auto tokens = seq(10, 12);
  auto a = computed_sequence(7, tokens);
  PrefixMatch m = blocks.match(7, tokens.data(), 12, 12);
  EXPECT_EQ(m.tokens, 12);
  EXPECT_EQ(m.blocks, a);
  EXPECT_EQ(blocks.references(a[0]), 2);
  EXPECT_EQ(blocks.stats().shared, 3);
  EXPECT_EQ(blocks.stats().prefix_hits, 1u);
  EXPECT_EQ(blocks.stats().prefix_reused_tokens, 12u);
  blocks.release_all(m.blocks);
  blocks.release_all(a);
  EXPECT_EQ(blocks.stats().cached_idle, 3);  // kept for the next request
}

TEST_F(Fixture, APartialMatchInsideABlockGetsAPrivateCopy) {
  const auto tokens = seq(10, 8);
  auto a = computed_sequence(7, tokens);
  std::vector<int32_t> other = tokens;
  other[6] = 99;  // diverges inside the second block, after 2 of its tokens
  PrefixMatch m = blocks.match(7, other.data(), 8, 8);
  ASSERT_EQ(m.blocks.size(), 2u);
  EXPECT_EQ(m.tokens, 6);
  EXPECT_EQ(m.blocks[0], a[0]);
  EXPECT_NE(m.blocks[1], a[1]);  // copy-on-write
  EXPECT_EQ(blocks.stats().cow_copies, 1u);
  const float* src = static_cast<const float*>(pool.layer(0).k) + size_t(a[1]) * kBs * 2;
  const float* dst = static_cast<const float*>(pool.layer(0).k) + size_t(m.blocks[1]) * kBs * 2;
  EXPECT_TRUE(std::equal(src, src + kBs * 2, dst));
  EXPECT_FALSE(blocks.is_published(m.blocks[1]));
}

TEST_F(Fixture, WritingASharedOrPublishedBlockCopiesItFirst) {
  const auto tokens = seq(10, 4);
  auto a = computed_sequence(7, tokens);
  PrefixMatch m = blocks.match(7, tokens.data(), 4, 4);
  ASSERT_EQ(m.blocks.size(), 1u);
  ASSERT_TRUE(blocks.make_writable(m.blocks, 0));
  EXPECT_NE(m.blocks[0], a[0]);
  EXPECT_EQ(blocks.references(a[0]), 1);
  std::vector<int32_t> priv = {blocks.allocate()};
  const int32_t before = priv[0];
  ASSERT_TRUE(blocks.make_writable(priv, 0));
  EXPECT_EQ(priv[0], before);  // private and unpublished: written in place
}

TEST_F(Fixture, IdenticalBlocksPublishedTwiceAreDeduplicated) {
  const auto tokens = seq(10, 4);
  auto a = computed_sequence(7, tokens);
  std::vector<int32_t> b = {blocks.allocate()};
  blocks.publish(7, b, 0, tokens.data());
  EXPECT_EQ(b[0], a[0]);
  EXPECT_EQ(blocks.references(a[0]), 2);
  EXPECT_EQ(blocks.stats().free, 7);  // the duplicate went back
}

TEST_F(Fixture, TenantsNeverShareBlocks) {
  const auto tokens = seq(10, 8);
  auto a = computed_sequence(1, tokens);
  PrefixMatch m = blocks.match(2, tokens.data(), 8, 8);
  EXPECT_EQ(m.tokens, 0);
  EXPECT_TRUE(m.blocks.empty());
}

TEST_F(Fixture, EvictionTakesIdleBlocksLeastRecentlyUsedAndTailsFirst) {
  auto a = computed_sequence(7, seq(10, 12));  // 3 blocks
  blocks.release_all(a);                        // idle, cached; tail released first
  std::vector<int32_t> held;
  for (int i = 0; i < 5; ++i) held.push_back(blocks.allocate());  // the 5 free ones
  EXPECT_EQ(blocks.stats().evictions, 0u);
  held.push_back(blocks.allocate());  // evicts the chain's tail
  EXPECT_EQ(blocks.stats().evictions, 1u);
  const auto tokens = seq(10, 12);
  PrefixMatch m = blocks.match(7, tokens.data(), 12, 12);
  EXPECT_EQ(m.tokens, 8);  // the first two blocks survived
  blocks.release_all(m.blocks);
}

TEST_F(Fixture, EvictingAParentDropsItsCachedDescendants) {
  const auto tokens = seq(10, 12);
  auto a = computed_sequence(7, tokens);
  // Released root first (unlike release_all), so the root is the least recently used.
  for (int32_t b : a) blocks.release(b);
  std::vector<int32_t> held;
  for (int i = 0; i < 5; ++i) held.push_back(blocks.allocate());
  held.push_back(blocks.allocate());  // evicts the root, and with it blocks 1 and 2
  EXPECT_EQ(blocks.stats().cached_idle, 0);
  EXPECT_EQ(blocks.stats().free, 2);
  PrefixMatch m = blocks.match(7, tokens.data(), 12, 12);
  EXPECT_EQ(m.tokens, 0);
}

TEST(KvBlockManagerCollision, AForgedHashCollisionIsRefusedNotServed) {
  KvBlockPool pool(1, 2, kBs, 8);
  KvBlockManager blocks(pool, [](uint64_t, const int32_t*, int) { return uint64_t(42); });  // every block collides
  const auto tokens = seq(10, 4);
  std::vector<int32_t> a = {blocks.allocate()};
  blocks.publish(7, a, 0, tokens.data());
  ASSERT_TRUE(blocks.is_published(a[0]));
  const auto other = seq(50, 4);
  PrefixMatch m = blocks.match(7, other.data(), 4, 4);
  EXPECT_EQ(m.tokens, 0);
  EXPECT_TRUE(m.blocks.empty());
  EXPECT_EQ(blocks.stats().collisions_refused, 1u);
  // Publishing different content under the same hash is refused too; it stays private.
  std::vector<int32_t> b = {blocks.allocate()};
  blocks.publish(7, b, 0, other.data());
  EXPECT_FALSE(blocks.is_published(b[0]));
  EXPECT_EQ(blocks.stats().collisions_refused, 2u);
  // The genuine content still matches.
  PrefixMatch genuine = blocks.match(7, tokens.data(), 4, 4);
  EXPECT_EQ(genuine.tokens, 4);
}

}  // namespace
}  // namespace sluice::inference
