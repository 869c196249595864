#include <gtest/gtest.h>

#include "nodes/cache/kb_change_log.h"
#include "nodes/retrieval/kb/knowledge_base.h"

namespace sluice::cache {
namespace {

TEST(KbChangeLog, CitedPolicyKeepsAnswersThatCitedNothingRetired) {
  KbChangeLog log(InvalidationPolicy::kCited, 3);
  log.record(4, {"a.md#1"});
  EXPECT_FALSE(log.valid(3, {"a.md#1", "b.md#2"}));
  EXPECT_TRUE(log.valid(3, {"b.md#2"}));
  EXPECT_TRUE(log.valid(4, {"a.md#1"})) << "built on the new version";
  EXPECT_TRUE(log.valid(0, {})) << "no retrieval, nothing to go stale";
  EXPECT_FALSE(log.valid(2, {"b.md#2"})) << "older than the log knows";
}

TEST(KbChangeLog, AllPolicyDropsEveryOlderAnswer) {
  KbChangeLog log(InvalidationPolicy::kAll, 3);
  log.record(4, {});
  EXPECT_FALSE(log.valid(3, {"b.md#2"}));
  EXPECT_TRUE(log.valid(4, {"b.md#2"}));
  EXPECT_THROW(invalidation_policy("some"), std::invalid_argument);
}

TEST(KnowledgeBaseChanges, ListenersHearTheRetiredChunksBeforeTheSwap) {
  retrieval::KnowledgeBaseOptions o;
  o.lsa.dimensions = 4;
  retrieval::KnowledgeBase kb(o);
  kb.upsert({{"a.md", "A", "Alpha text about caches and keys.", {}, {}},
             {"b.md", "B", "Bravo text about batching and queues.", {}, {}},
             {"c.md", "C", "Charlie text about tokens and kernels.", {}, {}}});
  std::vector<retrieval::KbChange> heard;
  std::uint64_t live_when_heard = 0;
  kb.add_change_listener([&](const retrieval::KbChange& c) {
    heard.push_back(c);
    live_when_heard = kb.current()->version();
  });
  const auto before = kb.current();
  std::string a_key, b_key;
  for (const auto& c : before->chunks()) {
    if (c.doc_id == "a.md") a_key = retrieval::chunk_key(c);
    if (c.doc_id == "b.md") b_key = retrieval::chunk_key(c);
  }
  kb.update({{"a.md", "A", "Alpha text, rewritten: caches, keys and scopes.", {}, {}}}, {"b.md"});
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].version, 2u);
  EXPECT_EQ(live_when_heard, 1u) << "heard before the new snapshot serves";
  EXPECT_EQ(heard[0].retired, (std::vector<std::string>{a_key, b_key}));
  // An unchanged re-ingest retires nothing (and commits nothing).
  kb.upsert({{"c.md", "C", "Charlie text about tokens and kernels.", {}, {}}});
  EXPECT_EQ(heard.size(), 1u);
}

}  // namespace
}  // namespace sluice::cache
