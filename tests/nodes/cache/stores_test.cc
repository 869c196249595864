#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nodes/cache/exact_store.h"
#include "nodes/cache/semantic_store.h"

namespace sluice::cache {
namespace {

std::shared_ptr<const CachedAnswer> answer(const std::string& text, Nanos created, std::vector<std::string> cited = {}) {
  auto a = std::make_shared<CachedAnswer>();
  a->parts.push_back({false, "", text});
  a->created = created;
  a->cited = std::move(cited);
  return a;
}

std::string text_of(const std::shared_ptr<const CachedAnswer>& a) { return a ? a->parts.at(0).text : "<miss>"; }

TEST(ExactStore, EntriesExpireAfterTheTtl) {
  ManualClock clock;
  ExactStore store({10 * kNanosPerSecond, 1 << 20}, clock);
  store.put("k", "", answer("a", clock.now()));
  clock.advance(9 * kNanosPerSecond);
  EXPECT_EQ(text_of(store.find("k")), "a");
  clock.advance(kNanosPerSecond);
  EXPECT_EQ(store.find("k"), nullptr);
  EXPECT_EQ(store.counts().expired, 1u);
  EXPECT_EQ(store.counts().entries, 0u);
}

TEST(ExactStore, TheByteBudgetEvictsTheLeastRecentlyUsed) {
  ManualClock clock;
  const std::size_t one = answer(std::string(1000, 'x'), 0)->bytes() + 2 + sizeof(void*) * 16 + 64 + 2;
  ExactStore store({0, 3 * one + one / 2}, clock);
  for (const char* k : {"a", "b", "c"}) store.put(k, "", answer(std::string(1000, k[0]), clock.now()));
  ASSERT_NE(store.find("a"), nullptr);  // a is now the most recently used
  store.put("d", "", answer(std::string(1000, 'd'), clock.now()));
  EXPECT_EQ(store.find("b"), nullptr) << "b was the least recently used";
  EXPECT_NE(store.find("a"), nullptr);
  EXPECT_NE(store.find("c"), nullptr);
  EXPECT_NE(store.find("d"), nullptr);
  EXPECT_EQ(store.counts().evicted, 1u);
  EXPECT_LE(store.counts().bytes, 3 * one + one / 2);
}

TEST(ExactStore, AForcedHashCollisionNeverServesTheOtherKeysAnswer) {
  ManualClock clock;
  ExactStore store({0, 1 << 20}, clock, [](const std::string&) { return std::size_t{42}; });
  store.put("question one", "", answer("one", clock.now()));
  store.put("question two", "", answer("two", clock.now()));
  EXPECT_EQ(text_of(store.find("question one")), "one");
  EXPECT_EQ(text_of(store.find("question two")), "two");
  EXPECT_EQ(store.find("question three"), nullptr);
}

TEST(ExactStore, PutIfStoresOnlyWhenItsConditionHolds) {
  ManualClock clock;
  ExactStore store({0, 1 << 20}, clock);
  EXPECT_FALSE(store.put_if("k", "", answer("a", clock.now()), [] { return false; }));
  EXPECT_EQ(store.find("k"), nullptr);
  EXPECT_TRUE(store.put_if("k", "", answer("b", clock.now()), [] { return true; }));
  EXPECT_EQ(text_of(store.find("k")), "b");
  EXPECT_FALSE(store.put_if("k", "", answer("c", clock.now()), [] { return false; }));
  EXPECT_EQ(text_of(store.find("k")), "b") << "a refused put leaves the entry there";
}

TEST(ExactStore, RemoveIfSelectsByTenantAndAnswer) {
  ManualClock clock;
  ExactStore store({0, 1 << 20}, clock);
  store.put("a", "acme", answer("a", 0));
  store.put("b", "", answer("b", 0));
  EXPECT_EQ(store.remove_if([](const EntryInfo& e) { return e.tenant == "acme"; }), 1u);
  EXPECT_EQ(store.find("a"), nullptr);
  EXPECT_NE(store.find("b"), nullptr);
  EXPECT_EQ(store.counts().invalidated, 1u);
}

// Unit vectors in 8 dimensions at a chosen cosine from e0.
std::vector<float> at_cosine(double c, int other_axis = 1) {
  std::vector<float> v(8, 0.f);
  v[0] = static_cast<float>(c);
  v[other_axis] = static_cast<float>(std::sqrt(1 - c * c));
  return v;
}

TEST(SemanticStore, AHitNeedsTheThresholdAndTheGuards) {
  ManualClock clock;
  SemanticStore store({0, 1 << 22}, clock, 8);
  const auto e0 = at_cosine(1.0);
  store.put("scope", "", "How do I enable dark mode?", e0.data(), answer("enable", clock.now()));
  // Above the threshold and agreeing: a hit.
  auto q = at_cosine(0.95);
  auto hit = store.find("scope", q.data(), question_features("How can I turn on dark mode?"), 0.93f, 8);
  EXPECT_EQ(text_of(hit.answer), "enable");
  EXPECT_NEAR(hit.similarity, 0.95, 1e-5);
  // Just below the threshold: a miss with no guard involved.
  q = at_cosine(0.92);
  auto below = store.find("scope", q.data(), question_features("How can I turn on dark mode?"), 0.93f, 8);
  EXPECT_EQ(below.answer, nullptr);
  EXPECT_FALSE(below.rejected_by.has_value());
  // Above the threshold but the opposite verb: refused by the antonym guard.
  q = at_cosine(0.948);
  auto opposite = store.find("scope", q.data(), question_features("How do I disable dark mode?"), 0.93f, 8);
  EXPECT_EQ(opposite.answer, nullptr);
  ASSERT_TRUE(opposite.rejected_by.has_value());
  EXPECT_EQ(*opposite.rejected_by, Guard::kAntonym);
  // Another scope sees nothing.
  EXPECT_EQ(store.find("other", e0.data(), question_features("How do I enable dark mode?"), 0.5f, 8).answer, nullptr);
}

TEST(SemanticStore, ARejectedNearestCandidateDoesNotHideAGoodOneBehindIt) {
  ManualClock clock;
  SemanticStore store({0, 1 << 22}, clock, 8);
  const auto near = at_cosine(0.99, 1), farther = at_cosine(0.95, 2);
  store.put("s", "", "How do I disable dark mode?", near.data(), answer("disable", 0));
  store.put("s", "", "How do I enable dark mode?", farther.data(), answer("enable", 0));
  const auto q = at_cosine(1.0);
  auto found = store.find("s", q.data(), question_features("How do I enable dark mode?"), 0.93f, 8);
  EXPECT_EQ(text_of(found.answer), "enable");
}

TEST(SemanticStore, ExpiryEvictionAndRemovalKeepTheIndexConsistent) {
  ManualClock clock;
  SemanticStore store({10 * kNanosPerSecond, 1 << 24}, clock, 8);
  std::vector<std::vector<float>> vs;
  for (int i = 0; i < 200; ++i) {
    std::vector<float> v(8, 0.f);
    v[i % 8] = 1.f;
    v[(i + 1) % 8] = 0.01f * static_cast<float>(i);
    float n = 0;
    for (float x : v) n += x * x;
    for (float& x : v) x /= std::sqrt(n);
    vs.push_back(v);
    store.put("s", i % 2 ? "acme" : "", "question " + std::to_string(i), v.data(), answer(std::to_string(i), clock.now()));
  }
  EXPECT_EQ(store.counts().entries, 200u);
  // Removing most entries rebuilds the scope's index; the survivors still answer.
  EXPECT_EQ(store.remove_if([](const EntryInfo& e) { return e.tenant == "acme"; }), 100u);
  auto found = store.find("s", vs[4].data(), question_features("question 4"), 0.999f, 8);
  EXPECT_EQ(text_of(found.answer), "4");
  EXPECT_EQ(store.find("s", vs[5].data(), question_features("question 5"), 0.999f, 8).answer, nullptr);
  clock.advance(10 * kNanosPerSecond);
  EXPECT_EQ(store.find("s", vs[4].data(), question_features("question 4"), 0.999f, 8).answer, nullptr);
  EXPECT_GT(store.counts().expired, 0u);
}

}  // namespace
}  // namespace sluice::cache
