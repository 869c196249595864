// SearchCoalescer over the real exact index: merged searches answer each caller exactly as its
// own search would, within the group bound, and failures reach every caller of a group.
// Groups are made deterministic with a long window and a max_queries the callers fill, so no
// test depends on timing: the group starts when it is full.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "nodes/retrieval/dense/exact_index.h"
#include "nodes/retrieval/dense/search_coalescer.h"
#include "tests/support/unit_rows.h"

namespace sluice::retrieval {
namespace {

constexpr std::size_t kDim = 48;

std::vector<float> random_unit_rows(std::size_t n, std::uint64_t seed) { return testing::unit_rows(n, kDim, seed); }

void expect_same(const std::vector<ScoredDoc>& a, const std::vector<ScoredDoc>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].doc, b[i].doc) << "rank " << i;
    EXPECT_EQ(a[i].score, b[i].score) << "rank " << i;
  }
}

class Coalescing : public ::testing::Test {
 protected:
  Coalescing() : index_(kDim), queries_(random_unit_rows(64, 2)) {
    const auto data = random_unit_rows(3000, 1);
    index_.add(data.data(), 3000);
  }
  SearchCoalescer::BatchSearch batch() {
    return [this](const float* q, std::size_t nq, std::size_t k) { return index_.search(q, nq, k); };
  }
  const float* query(std::size_t i) const { return queries_.data() + i * kDim; }

  ExactIndex index_;
  std::vector<float> queries_;
};

TEST_F(Coalescing, ConcurrentSingleQueriesShareOneCallAndGetTheirOwnAnswers) {
  constexpr int kCallers = 8;
  SearchCoalescer c(kDim, batch(), CoalescerOptions(10 * kNanosPerSecond, kCallers));
  std::vector<std::vector<std::vector<ScoredDoc>>> got(kCallers);
  std::vector<std::thread> threads;
  for (int t = 0; t < kCallers; ++t) threads.emplace_back([&, t] { got[t] = c.search(query(t), 1, 10); });
  for (auto& t : threads) t.join();
  for (int t = 0; t < kCallers; ++t) {
    ASSERT_EQ(got[t].size(), 1u);
    expect_same(got[t][0], index_.search(query(t), 1, 10)[0]);
  }
  const auto st = c.stats();
  EXPECT_EQ(st.calls, 8u);
  EXPECT_EQ(st.batches, 1u);  // the group started when the eighth query filled it
  EXPECT_EQ(st.queries, 8u);
  EXPECT_EQ(st.largest, 8u);
}

TEST_F(Coalescing, EachCallerGetsItsOwnDepthOfTheDeepestSearch) {
  SearchCoalescer c(kDim, batch(), CoalescerOptions(10 * kNanosPerSecond, 3));
  std::vector<std::vector<ScoredDoc>> shallow, deep;
  std::thread a([&] { shallow = c.search(query(0), 1, 3); });
  std::thread b([&] { deep = c.search(query(1), 2, 25); });
  a.join();
  b.join();
  ASSERT_EQ(shallow.size(), 1u);
  ASSERT_EQ(deep.size(), 2u);
  expect_same(shallow[0], index_.search(query(0), 1, 3)[0]);
  const auto alone = index_.search(query(1), 2, 25);
  expect_same(deep[0], alone[0]);
  expect_same(deep[1], alone[1]);
  EXPECT_EQ(c.stats().batches, 1u);
}

TEST_F(Coalescing, ACallerWithMoreQueriesThanAGroupRunsAloneInGroupSizedCalls) {
  SearchCoalescer c(kDim, batch(), CoalescerOptions(10 * kNanosPerSecond, 8));
  const auto got = c.search(query(0), 20, 10);
  const auto alone = index_.search(query(0), 20, 10);
  ASSERT_EQ(got.size(), 20u);
  for (std::size_t q = 0; q < 20; ++q) expect_same(got[q], alone[q]);
  EXPECT_EQ(c.stats().batches, 3u);  // 8 + 8 + 4, without waiting for the window
  EXPECT_EQ(c.stats().largest, 8u);
}

TEST_F(Coalescing, WithoutAWindowALoneCallerIsAnsweredAtOnce) {
  SearchCoalescer c(kDim, batch(), CoalescerOptions(0, 64));
  for (std::size_t q = 0; q < 5; ++q) expect_same(c.search(query(q), 1, 7)[0], index_.search(query(q), 1, 7)[0]);
  EXPECT_EQ(c.stats().batches, 5u);
  EXPECT_TRUE(c.search(query(0), 0, 7).empty());
}

TEST_F(Coalescing, AFailedCallReachesEveryCallerOfItsGroupAndTheNextGroupRuns) {
  std::atomic<int> calls{0};
  SearchCoalescer c(
      kDim,
      [&](const float* q, std::size_t nq, std::size_t k) {
        if (calls++ == 0) throw std::runtime_error("device lost");
        return index_.search(q, nq, k);
      },
      CoalescerOptions(10 * kNanosPerSecond, 2));
  std::atomic<int> failures{0};
  std::thread a([&] {
    try {
      c.search(query(0), 1, 5);
    } catch (const std::runtime_error& e) {
      failures += std::string(e.what()) == "device lost";
    }
  });
  std::thread b([&] {
    try {
      c.search(query(1), 1, 5);
    } catch (const std::runtime_error& e) {
      failures += std::string(e.what()) == "device lost";
    }
  });
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 2);
  std::vector<std::vector<ScoredDoc>> after;
  std::thread d([&] { after = c.search(query(2), 1, 5); });
  std::thread e([&] { c.search(query(3), 1, 5); });
  d.join();
  e.join();
  expect_same(after[0], index_.search(query(2), 1, 5)[0]);
}

TEST_F(Coalescing, TheObserverHearsOfEveryCallUntilItsOwnerDetaches) {
  std::vector<std::pair<std::size_t, std::size_t>> calls;  // (queries, callers)
  auto observer = std::make_shared<BatchObserver>();
  const std::uint64_t ticket = observer->attach([&](std::size_t q, std::size_t c, double s) {
    EXPECT_GE(s, 0.0);
    calls.emplace_back(q, c);
  });
  CoalescerOptions options(10 * kNanosPerSecond, 3);
  options.observer = observer;
  SearchCoalescer c(kDim, batch(), options);
  std::thread a([&] { c.search(query(0), 1, 3); });
  std::thread b([&] { c.search(query(1), 2, 3); });
  a.join();
  b.join();
  c.search(query(0), 5, 3);  // alone, in calls of 3 and 2
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0], std::make_pair(std::size_t{3}, std::size_t{2}));
  EXPECT_EQ(calls[1], std::make_pair(std::size_t{3}, std::size_t{1}));
  EXPECT_EQ(calls[2], std::make_pair(std::size_t{2}, std::size_t{1}));
  // A later attach wins, and the earlier owner's detach leaves it in place.
  int later = 0;
  const std::uint64_t second = observer->attach([&](std::size_t, std::size_t, double) { ++later; });
  observer->detach(ticket);
  c.search(query(0), 3, 3);  // fills its group: no window to wait out
  EXPECT_EQ(later, 1);
  observer->detach(second);
  c.search(query(0), 4, 3);
  EXPECT_EQ(calls.size(), 3u);
  EXPECT_EQ(later, 1);
}

TEST(CoalescerOptionsCheck, NonsenseIsRefused) {
  auto fn = [](const float*, std::size_t nq, std::size_t) { return std::vector<std::vector<ScoredDoc>>(nq); };
  EXPECT_THROW(SearchCoalescer(0, fn, {}), std::invalid_argument);
  EXPECT_THROW(SearchCoalescer(4, nullptr, {}), std::invalid_argument);
  EXPECT_THROW(SearchCoalescer(4, fn, CoalescerOptions(0, 0)), std::invalid_argument);
  EXPECT_THROW(SearchCoalescer(4, fn, CoalescerOptions(-1, 4)), std::invalid_argument);
}

}  // namespace
}  // namespace sluice::retrieval
