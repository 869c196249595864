// The answer caches under concurrency, as the nodes use them: requests storing answers (after
// KbChangeLog::valid), requests looking up and serving (valid again), knowledge-base commits
// recording retired chunks and dropping the entries that cited them, and the byte budget
// evicting, all at once on several threads. Run under ThreadSanitizer (docs/testing.md) it
// checks the locking; in every build it checks the one promise that matters: no answer citing a
// chunk retired before the lookup began is ever served, and the budget holds.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "graph/clock.h"
#include "nodes/cache/exact_store.h"
#include "nodes/cache/kb_change_log.h"
#include "nodes/cache/semantic_store.h"

namespace sluice::cache {
namespace {

constexpr int kChunks = 16;
constexpr std::size_t kDim = 16;

std::string chunk(int k) { return "doc" + std::to_string(k) + "#c"; }

std::shared_ptr<const CachedAnswer> answer_citing(int k, std::uint64_t version) {
  auto a = std::make_shared<CachedAnswer>();
  a->parts.push_back({false, "", std::string(200, static_cast<char>('a' + k))});
  a->kb_version = version;
  a->cited = {chunk(k)};
  return a;
}

// A unit vector per key, a little apart from its neighbours, so lookups find candidates.
std::array<float, kDim> vector_of(int key) {
  std::array<float, kDim> v{};
  v[static_cast<std::size_t>(key) % kDim] = 1.0f;
  v[static_cast<std::size_t>(key * 7 + 3) % kDim] += 0.25f;
  return v;
}

// The shared state a knowledge base and its listeners keep: the version, the log, and when
// each chunk was last retired (stored after the log recorded it, so a reader that sees it knows
// the log knows).
struct Knowledge {
  KbChangeLog log{InvalidationPolicy::kCited, 1};
  std::atomic<std::uint64_t> version{1};
  std::array<std::atomic<std::uint64_t>, kChunks> retired_at{};
};

TEST(CacheConcurrency, NoStaleAnswerIsServedWhileCommitsPutsFindsAndEvictionsInterleave) {
  const Clock& clock = SteadyClock::instance();
  const StoreLimits limits{0, 64 * 1024};  // small: puts evict all the time
  ExactStore exact(limits, clock);
  SemanticStore semantic(limits, clock, kDim);
  Knowledge kb;
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> served{0}, stale{0}, stored{0}, commits{0};

  // Requests: store an answer built now (if still valid), then look one up and serve it if valid.
  auto request_thread = [&](unsigned seed) {
    std::mt19937 rng(seed);
    const QuestionFeatures features = question_features("How do I do it?");
    while (!stop.load(std::memory_order_relaxed)) {
      const int key = static_cast<int>(rng() % 64), k = key % kChunks;
      const std::string exact_key = "q" + std::to_string(key);
      const auto v = vector_of(key);
      auto made = answer_citing(k, kb.version.load());
      if (kb.log.valid(made->kb_version, made->cited)) {
        exact.put(exact_key, "tenant", made);
        semantic.put("scope", "tenant", "How do I do it?", v.data(), made);
        stored.fetch_add(1, std::memory_order_relaxed);
      }
      const int look = static_cast<int>(rng() % 64), lk = look % kChunks;
      const std::uint64_t retired_before = kb.retired_at[static_cast<std::size_t>(lk)].load();
      const auto lv = vector_of(look);
      for (auto found : {exact.find("q" + std::to_string(look)), semantic.find("scope", lv.data(), features, 0.99f, 4).answer}) {
        if (!found || !kb.log.valid(found->kb_version, found->cited)) continue;
        served.fetch_add(1, std::memory_order_relaxed);
        // Served: it must not cite a chunk retired (and logged) after it was made, before we looked.
        if (found->cited == std::vector<std::string>{chunk(lk)} && retired_before > found->kb_version) stale.fetch_add(1);
      }
    }
  };
  // Commits: a new version retiring one chunk, logged, then the entries citing it dropped.
  auto commit_thread = [&] {
    std::mt19937 rng(99);
    while (!stop.load(std::memory_order_relaxed)) {
      const int k = static_cast<int>(rng() % kChunks);
      const std::uint64_t v = kb.version.load() + 1;
      kb.log.record(v, {chunk(k)});
      kb.version.store(v);
      kb.retired_at[static_cast<std::size_t>(k)].store(v);
      auto cites = [&](const EntryInfo& e) { return kb.log.retires(e.answer.kb_version, e.answer.cited, v, {chunk(k)}); };
      exact.remove_if(cites);
      semantic.remove_if(cites);
      commits.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::yield();
    }
  };
  // An operator watching the gauges.
  auto counts_thread = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      EXPECT_LE(exact.counts().bytes, limits.max_bytes);
      EXPECT_LE(semantic.counts().bytes, limits.max_bytes);
      std::this_thread::yield();
    }
  };
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < 3; ++i) threads.emplace_back(request_thread, i + 1);
  threads.emplace_back(commit_thread);
  threads.emplace_back(counts_thread);
  // Enough for thousands of each operation, short enough for a sanitizer build.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop = true;
  for (auto& t : threads) t.join();

  EXPECT_EQ(stale.load(), 0u) << "answers served that cited a chunk retired before the lookup";
  EXPECT_GT(served.load(), 100u) << "the test must serve answers to mean anything";
  EXPECT_GT(commits.load(), 10u);
  EXPECT_GT(exact.counts().evicted + semantic.counts().evicted, 0u) << "the budget must have been exercised";
  EXPECT_GT(exact.counts().invalidated + semantic.counts().invalidated, 0u);
  std::printf("stored %zu, served %zu, commits %zu, evicted %llu + %llu, invalidated %llu + %llu\n", stored.load(), served.load(),
              commits.load(), static_cast<unsigned long long>(exact.counts().evicted),
              static_cast<unsigned long long>(semantic.counts().evicted), static_cast<unsigned long long>(exact.counts().invalidated),
              static_cast<unsigned long long>(semantic.counts().invalidated));
}

}  // namespace
}  // namespace sluice::cache
