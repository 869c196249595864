// The dynamic batcher on a ManualClock: full batches, window expiry, adaptive flush of a lone
// request, deadline-aware flush, per-class batches (no head-of-line blocking) and the
// done/absorb contract.
#include "nodes/admission/dynamic_batcher.h"

#include <gtest/gtest.h>

#include "tests/nodes/admission/admission_test_support.h"

namespace sluice {
namespace {

using testing::AdmissionFixture;

struct BatcherHarness : AdmissionFixture {
  explicit BatcherHarness(bool adaptive = false, std::vector<std::uint32_t> caps = {2, 4, 8}, std::uint32_t max_outstanding = 0) {
    DynamicBatcherConfig c;
    c.mutable_window()->set_nanos(10'000'000);
    for (auto cap : caps) c.add_max_batch(cap);
    c.set_adaptive(adaptive);
    c.mutable_deadline_margin()->set_nanos(5'000'000);
    c.set_max_outstanding(max_outstanding);
    c.set_per_class(true);  // the schema default (files get it from the loader)
    batcher = std::make_unique<DynamicBatcher>(c, context("batcher"));
  }
  void put(const RequestPtr& r) {
    batcher->start_batch(batch_of(r), [this](BatchPtr b) {
      if (b) emitted.push_back(b);
      else ++absorbed;
    });
  }
  std::vector<int> sizes() const {
    std::vector<int> out;
    for (const auto& b : emitted) out.push_back(static_cast<int>(b->requests.size()));
    return out;
  }
  std::vector<BatchPtr> emitted;  // declared first: the batcher's stop() still emits into it
  int absorbed = 0;
  std::unique_ptr<DynamicBatcher> batcher;
};

TEST(DynamicBatcher, FullBatchFlushesAtOnceAndReleasesTheOtherDones) {
  BatcherHarness h;
  auto [a, sa] = h.request(1);
  auto [b, sb] = h.request(1);
  auto [c, sc] = h.request(1);
  auto [d, sd] = h.request(1);
  for (auto& r : {a, b, c}) h.put(r);
  EXPECT_TRUE(h.emitted.empty());
  h.put(d);
  EXPECT_EQ(h.sizes(), (std::vector<int>{4}));
  EXPECT_EQ(h.absorbed, 3);  // one done carried the batch, three were released empty
  EXPECT_EQ(h.emitted[0]->requests, (std::vector<RequestPtr>{a, b, c, d}));
}

TEST(DynamicBatcher, WindowExpiryFlushesAPartialBatch) {
  BatcherHarness h;
  auto [a, sa] = h.request(2);
  h.put(a);
  h.clock.advance(9 * kNanosPerMilli);
  auto [b, sb] = h.request(2);
  h.put(b);
  h.batcher->tick(h.clock.now());
  EXPECT_TRUE(h.emitted.empty());
  EXPECT_EQ(h.batcher->next_flush(), h.clock.now() + kNanosPerMilli);  // the window counts from the first request
  h.clock.advance(kNanosPerMilli);
  h.batcher->tick(h.clock.now());
  EXPECT_EQ(h.sizes(), (std::vector<int>{2}));
  auto& wait = h.metrics.histogram("sluice_batch_wait_seconds", "", {{"stage", "batcher"}, {"class", "P2"}});
  EXPECT_EQ(wait.count(), 1u);
  EXPECT_NEAR(wait.sum(), 0.010, 1e-9);
}

TEST(DynamicBatcher, AdaptiveFlushSendsALoneRequestOnAnIdleSystemAtOnce) {
  BatcherHarness h(/*adaptive=*/true);
  auto [a, sa] = h.request(0);
  h.put(a);
  EXPECT_EQ(h.sizes(), (std::vector<int>{1}));
}

TEST(DynamicBatcher, AdaptiveHoldsWhenArrivalsAreFrequent) {
  BatcherHarness h(/*adaptive=*/true, {64, 64, 64});
  // 1000 requests/s for a second: the measured rate says more are coming within the window.
  for (int i = 0; i < 1000; ++i) {
    auto [r, s] = h.request(1);
    h.put(r);
    h.clock.advance(kNanosPerMilli);
    h.batcher->tick(h.clock.now());
  }
  std::size_t late_sizes = 0;
  for (std::size_t i = h.emitted.size() - 10; i < h.emitted.size(); ++i) late_sizes += h.emitted[i]->requests.size();
  EXPECT_GE(late_sizes / 10, 8u);  // ~10 per 10ms window once the rate is known
}

TEST(DynamicBatcher, NeverWaitsPastTheTightestDeadline) {
  BatcherHarness h;
  auto [a, sa] = h.request(2);
  h.put(a);
  auto [b, sb] = h.request(2, false, h.clock.now() + 7 * kNanosPerMilli);  // 7ms budget, 5ms margin
  h.put(b);
  EXPECT_EQ(h.batcher->next_flush(), h.clock.now() + 2 * kNanosPerMilli);
  h.clock.advance(2 * kNanosPerMilli);
  h.batcher->tick(h.clock.now());
  EXPECT_EQ(h.sizes(), (std::vector<int>{2}));
  // A request already inside the margin is not held at all.
  auto [c, sc] = h.request(2, false, h.clock.now() + kNanosPerMilli);
  h.put(c);
  EXPECT_EQ(h.sizes(), (std::vector<int>{2, 1}));
}

TEST(DynamicBatcher, P0IsNeverStuckBehindAP2Batch) {
  BatcherHarness h;
  for (int i = 0; i < 5; ++i) {
    auto [r, s] = h.request(2);
    h.put(r);
  }
  auto [p0a, s1] = h.request(0);
  auto [p0b, s2] = h.request(0);
  h.put(p0a);
  h.put(p0b);  // P0's cap is 2: flushes now, while P2's batch keeps filling
  ASSERT_EQ(h.sizes(), (std::vector<int>{2}));
  EXPECT_EQ(h.emitted[0]->requests, (std::vector<RequestPtr>{p0a, p0b}));
  // When both are due together the urgent class leaves first.
  auto [p0c, s3] = h.request(0);
  h.put(p0c);
  h.clock.advance(10 * kNanosPerMilli);
  h.batcher->tick(h.clock.now());
  EXPECT_EQ(h.sizes(), (std::vector<int>{2, 1, 5}));
  EXPECT_EQ(h.emitted[1]->requests.front()->priority, 0);
}

// With max_outstanding 1 (an accelerator with one stream): requests keep queueing while the next
// stage is busy, and when it answers, the most urgent class leaves first.
TEST(DynamicBatcher, WhileTheNextStageIsBusyBatchesFillAndTheUrgentClassLeavesFirst) {
  BatcherHarness h(/*adaptive=*/true, {2, 4, 8}, /*max_outstanding=*/1);
  auto [first, s0] = h.request(2);
  h.put(first);  // idle: sent at once
  ASSERT_EQ(h.sizes(), (std::vector<int>{1}));
  std::vector<RequestPtr> p2;
  for (int i = 0; i < 5; ++i) {
    p2.push_back(h.request(2).first);
    h.put(p2.back());
  }
  h.clock.advance(20 * kNanosPerMilli);  // P2's window has passed, but the stage is busy
  auto [p0, s1] = h.request(0);
  h.put(p0);
  h.batcher->tick(h.clock.now());
  EXPECT_EQ(h.sizes(), (std::vector<int>{1}));
  first->complete(Status::Ok(), h.clock.now());  // the stage answers
  h.batcher->tick(h.clock.now());
  EXPECT_EQ(h.sizes(), (std::vector<int>{1}));  // not full: up to one window for stragglers
  h.clock.advance(10 * kNanosPerMilli);
  h.batcher->tick(h.clock.now());
  // P0 first, though P2 waited longer, then P2 up to the largest cap (8): one batch of six.
  ASSERT_EQ(h.sizes(), (std::vector<int>{1, 6}));
  EXPECT_EQ(h.emitted[1]->requests.front(), p0);
  EXPECT_EQ(h.emitted[1]->requests.back(), p2.back());
}

TEST(DynamicBatcher, AnIncomingBatchOfSeveralIsPassedOnUnchanged) {
  BatcherHarness h;
  auto b = std::make_shared<Batch>();
  for (int i = 0; i < 3; ++i) b->requests.push_back(h.request(2).first);
  BatchPtr out;
  h.batcher->start_batch(b, [&](BatchPtr x) { out = x; });
  EXPECT_EQ(out, b);
}

TEST(DynamicBatcher, StopFlushesWhatIsOpen) {
  BatcherHarness h;
  auto [a, sa] = h.request(1);
  h.put(a);
  h.batcher->stop();
  EXPECT_EQ(h.sizes(), (std::vector<int>{1}));
}

TEST(DynamicBatcher, RefusesAWindowOutOfRange) {
  AdmissionFixture f;
  DynamicBatcherConfig c;
  c.mutable_window()->set_seconds(5);
  EXPECT_THROW(DynamicBatcher(c, f.context()), std::invalid_argument);
}

}  // namespace
}  // namespace sluice
