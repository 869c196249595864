// The priority router, driven directly on a ManualClock: admission and its 429 Retry-After,
// queue timeouts (504), strict priority, weighted fair share, aging, heartbeats, the shedding
// ladder, cancellation and the deferral hook.
#include "nodes/admission/priority_router.h"

#include <gtest/gtest.h>

#include "tests/nodes/admission/admission_test_support.h"

namespace sluice {
namespace {

using testing::AdmissionFixture;

struct RouterHarness : AdmissionFixture {
  explicit RouterHarness(PriorityRouterConfig config = {}) {
    if (config.max_running() == 0) config.set_max_running(1);
    if (!config.has_aging()) config.mutable_aging()->set_seconds(10);
    if (!config.has_heartbeat_interval()) config.mutable_heartbeat_interval()->set_seconds(10);
    if (!config.has_retry_after_max()) config.mutable_retry_after_max()->set_seconds(120);
    if (config.strict_above() == 0) config.set_strict_above(0.9);
    if (!config.shedding().has_sustain()) testing::set_schema_shedding(*config.mutable_shedding());
    router = std::make_unique<PriorityRouter>(config, context("router"));
  }
  // Admits and hands the request to the router; returns the admission status.
  Status submit(const RequestPtr& r, const std::string& source = "api") {
    Status s = router->admit(r, source, clock.now());
    if (!s.ok()) {
      r->complete(s, clock.now());
      return s;
    }
    router->start_batch(batch_of(r), [this](BatchPtr b) {
      if (b) dispatched.push_back(b->requests.front());
    });
    return s;
  }
  // What the pipeline does when a request completes.
  void finish(RequestPtr r, Status s = Status::Ok()) {
    r->complete(s, clock.now());
    router->on_complete(*r, clock.now());
  }
  std::vector<RequestPtr> dispatched;  // declared first: the router's stop() still reports into it
  std::unique_ptr<PriorityRouter> router;
};

PriorityRouterConfig with_class(const std::string& name, std::uint32_t max_queue, int timeout_s = -1) {
  PriorityRouterConfig c;
  auto* cc = c.add_classes();
  cc->set_name(name);
  cc->set_max_queue(max_queue);
  if (timeout_s >= 0) cc->mutable_queue_timeout()->set_seconds(timeout_s);
  return c;
}

TEST(PriorityRouter, DefaultsFollowClassPosition) {
  RouterHarness h;
  const auto& p = h.router->policies();
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].max_queue, 20u);
  EXPECT_EQ(p[0].queue_timeout, 30 * kNanosPerSecond);
  EXPECT_EQ(p[1].max_queue, 100u);
  EXPECT_EQ(p[1].queue_timeout, 60 * kNanosPerSecond);
  EXPECT_EQ(p[2].max_queue, 0u);  // unbounded
  EXPECT_EQ(p[2].queue_timeout, 0);
}

TEST(PriorityRouter, UnknownClassIsRefusedWithItsName) {
  PriorityRouterConfig c = with_class("P9", 1);
  AdmissionFixture f;
  try {
    PriorityRouter r(c, f.context());
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'P9' is not a priority class"), std::string::npos) << e.what();
  }
}

TEST(PriorityRouter, FullClassAnswers429WithRetryAfterFromDrainRateAndDepth) {
  RouterHarness h(with_class("P0", 2));
  auto [a, sa] = h.request(0);
  auto [b, sb] = h.request(0);
  auto [c, sc] = h.request(0);
  auto [d, sd] = h.request(0);
  ASSERT_TRUE(h.submit(a).ok());
  EXPECT_EQ(h.dispatched.size(), 1u);  // the one slot
  ASSERT_TRUE(h.submit(b).ok());
  ASSERT_TRUE(h.submit(c).ok());
  EXPECT_EQ(h.router->counts(0).queued, 2);
  Status s = h.submit(d);
  EXPECT_EQ(s.code, StatusCode::kOverloaded);
  EXPECT_EQ(s.cause, AbortCause::kShed);
  EXPECT_NE(s.message.find("queue of class 'P0' is full"), std::string::npos) << s.message;
  // One request drained so far: rate = 1 / tau(5s) = 0.2/s; (depth 2 + 1) / 0.2 = 15s.
  EXPECT_NEAR(s.retry_after_seconds, 15.0, 1e-9);
  EXPECT_EQ(sd->completions, 1);
  // Faster drain, shorter Retry-After.
  h.finish(a);
  h.finish(h.dispatched[1]);
  auto [e, se] = h.request(0);
  ASSERT_TRUE(h.submit(e).ok());
  auto [e2, se2] = h.request(0);
  ASSERT_TRUE(h.submit(e2).ok());
  auto [f, sf] = h.request(0);
  Status s2 = h.submit(f);
  EXPECT_EQ(s2.code, StatusCode::kOverloaded);
  EXPECT_NEAR(s2.retry_after_seconds, 3.0 / 0.6, 1e-9);  // three drained: 0.6/s
  EXPECT_EQ(h.router->counts(0).shed, 2u);
  EXPECT_EQ(h.router->counts(0).admitted, 5u);
}

TEST(PriorityRouter, RetryAfterIsCappedWhenTheClassHasNotDrained) {
  RouterHarness h(with_class("P1", 1));
  auto [a, sa] = h.request(0);
  ASSERT_TRUE(h.submit(a).ok());  // P0 holds the slot
  auto [b, sb] = h.request(1);
  ASSERT_TRUE(h.submit(b).ok());
  auto [c, sc] = h.request(1);
  EXPECT_DOUBLE_EQ(h.submit(c).retry_after_seconds, 120.0);
}

TEST(PriorityRouter, QueueTimeoutCompletesWith504AndAClearMessage) {
  RouterHarness h;
  auto [a, sa] = h.request(0);
  ASSERT_TRUE(h.submit(a).ok());
  auto [b, sb] = h.request(1);
  ASSERT_TRUE(h.submit(b).ok());
  h.clock.advance(59 * kNanosPerSecond);
  h.router->tick(h.clock.now());
  EXPECT_EQ(sb->completions, 0);
  h.clock.advance(1 * kNanosPerSecond);
  h.router->tick(h.clock.now());
  h.router->on_complete(*b, h.clock.now());
  ASSERT_EQ(sb->completions, 1);
  EXPECT_EQ(sb->status.code, StatusCode::kDeadlineExceeded);
  EXPECT_NE(sb->status.message.find("in the queue of class 'P1' (queue_timeout 60.0s)"), std::string::npos) << sb->status.message;
  EXPECT_EQ(h.router->counts(1).timed_out, 1u);
  EXPECT_EQ(h.router->counts(1).queued, 0);
  // The batch moved on (to be passed through the graph already answered).
  EXPECT_EQ(h.dispatched.size(), 2u);
}

TEST(PriorityRouter, OwnDeadlineWhileQueuedCompletesWith504) {
  RouterHarness h;
  auto [a, sa] = h.request(0);
  ASSERT_TRUE(h.submit(a).ok());
  auto [b, sb] = h.request(2, false, h.clock.now() + 2 * kNanosPerSecond);
  ASSERT_TRUE(h.submit(b).ok());
  h.clock.advance(2 * kNanosPerSecond);
  h.router->tick(h.clock.now());
  EXPECT_EQ(sb->status.code, StatusCode::kDeadlineExceeded);
  EXPECT_NE(sb->status.message.find("deadline passed after waiting 2.0s"), std::string::npos) << sb->status.message;
}

// Utilisation at the strict threshold: queued lower classes yield to higher ones.
TEST(PriorityRouter, StrictPriorityWhenCapacityIsScarce) {
  PriorityRouterConfig c;
  c.set_strict_above(0.5);
  RouterHarness h(c);
  auto [a, sa] = h.request(2);
  ASSERT_TRUE(h.submit(a).ok());
  // A full interval at 1/1 busy.
  h.clock.advance(300 * kNanosPerMilli);
  h.router->tick(h.clock.now());
  EXPECT_GE(h.router->busy_fraction(), 0.99);
  std::vector<RequestPtr> order;
  for (int cls : {2, 2, 1, 0, 2, 0}) {
    auto [r, s] = h.request(cls);
    ASSERT_TRUE(h.submit(r).ok());
  }
  while (h.dispatched.size() < 7) h.finish(h.dispatched.back());
  std::vector<int> classes;
  for (std::size_t i = 1; i < h.dispatched.size(); ++i) classes.push_back(h.dispatched[i]->priority);
  EXPECT_EQ(classes, (std::vector<int>{0, 0, 1, 2, 2, 2}));
}

// Below the threshold, classes share the slots by weight (6:3:1 by default).
TEST(PriorityRouter, WeightedFairShareWhenCapacityIsFree) {
  RouterHarness h;
  auto [first, s0] = h.request(0);
  ASSERT_TRUE(h.submit(first).ok());
  for (int i = 0; i < 10; ++i) {
    for (int cls : {0, 1, 2}) {
      auto [r, s] = h.request(cls);
      ASSERT_TRUE(h.submit(r).ok());
    }
  }
  for (int i = 0; i < 10; ++i) h.finish(h.dispatched.back());
  int per_class[3] = {0, 0, 0};
  for (std::size_t i = 1; i < h.dispatched.size(); ++i) ++per_class[h.dispatched[i]->priority];
  EXPECT_EQ(per_class[0], 6);
  EXPECT_EQ(per_class[1], 3);
  EXPECT_EQ(per_class[2], 1);
}

// keep_free (trunk reservation): P2 with keep_free 1 of 4 slots never takes the last free one,
// so a P0 arriving beside a P2 backlog is let on at once; P2 still gets the other three, and a
// keep_free that leaves the class no slot is refused with its name.
TEST(PriorityRouter, KeepFreeLeavesSlotsForTheClassesAhead) {
  PriorityRouterConfig c;
  c.set_max_running(4);
  auto* p2 = c.add_classes();
  p2->set_name("P2");
  p2->set_keep_free(1);
  RouterHarness h(c);
  for (int i = 0; i < 10; ++i) {
    auto [r, s] = h.request(2);
    ASSERT_TRUE(h.submit(r).ok());
  }
  ASSERT_EQ(h.dispatched.size(), 3u) << "P2 takes 3 of 4 slots, leaving one";
  auto [urgent, s0] = h.request(0);
  ASSERT_TRUE(h.submit(urgent).ok());
  ASSERT_EQ(h.dispatched.size(), 4u);
  EXPECT_EQ(h.dispatched.back(), urgent) << "P0 found the kept slot free";
  h.finish(urgent);  // the kept slot is free again: P2 still may not take it
  EXPECT_EQ(h.dispatched.size(), 4u);
  h.finish(h.dispatched[0]);  // a P2 slot frees: the next P2 takes it
  ASSERT_EQ(h.dispatched.size(), 5u);
  EXPECT_EQ(h.dispatched.back()->priority, 2);

  p2->set_keep_free(4);
  EXPECT_THROW(
      {
        try {
          RouterHarness bad(c);
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("classes[0].keep_free: 4 leaves none of max_running's 4 slots"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      std::invalid_argument);
}

// The one slot taken and the router measured busy: strict priority from now on.
RequestPtr hold_the_slot_until_strict(RouterHarness& h) {
  auto hold = h.request(0).first;
  EXPECT_TRUE(h.submit(hold).ok());
  h.clock.advance(300 * kNanosPerMilli);
  h.router->tick(h.clock.now());
  return hold;
}

TEST(PriorityRouter, AgingKeepsTheLowestClassFromStarving) {
  PriorityRouterConfig c;
  c.set_strict_above(0.01);
  RouterHarness h(c);
  RequestPtr hold = hold_the_slot_until_strict(h);
  auto [old, s1] = h.request(2);
  ASSERT_TRUE(h.submit(old).ok());
  h.clock.advance(20 * kNanosPerSecond);  // two aging steps: P2 now ranks as P0
  auto [fresh, s2] = h.request(0);
  ASSERT_TRUE(h.submit(fresh).ok());
  h.finish(hold);
  ASSERT_EQ(h.dispatched.size(), 2u);
  EXPECT_EQ(h.dispatched[1], old);  // equal rank: the older one goes first
}

TEST(PriorityRouter, AgedWorkPassesWaitingP0OnlyWithinItsShareOfSlots) {
  PriorityRouterConfig c;
  c.set_strict_above(0.01);
  c.set_aging_share(0.25);
  RouterHarness h(c);
  hold_the_slot_until_strict(h);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(h.submit(h.request(2).first).ok());
  h.clock.advance(20 * kNanosPerSecond);  // the P2 now rank as P0, and are older
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(h.submit(h.request(0).first).ok());
  std::vector<int> order;
  for (int i = 0; i < 9; ++i) {
    h.finish(h.dispatched.back());
    order.push_back(h.dispatched.back()->priority);
  }
  // One banked pass, then one pass per 1 / 0.25 = 4 requests let on.
  EXPECT_EQ(order, (std::vector<int>{2, 0, 0, 0, 2, 0, 0, 0, 2}));
}

TEST(PriorityRouter, QueuedStreamsGetHeartbeats) {
  RouterHarness h;
  auto [hold, s0] = h.request(0);
  ASSERT_TRUE(h.submit(hold).ok());
  auto [stream, ss] = h.request(1, /*stream=*/true);
  auto [plain, sp] = h.request(1, /*stream=*/false);
  ASSERT_TRUE(h.submit(stream).ok());
  ASSERT_TRUE(h.submit(plain).ok());
  for (int i = 0; i < 40; ++i) {  // 10s in 250ms steps
    h.clock.advance(250 * kNanosPerMilli);
    h.router->tick(h.clock.now());
  }
  EXPECT_EQ(ss->events, (std::vector<std::string>{"heartbeat"}));
  EXPECT_TRUE(sp->events.empty());  // a JSON answer would carry them in its body
}

TEST(PriorityRouter, CancelledWhileQueuedFreesItsPlaceAndIsCounted) {
  RouterHarness h(with_class("P0", 1));
  auto [hold, s0] = h.request(0);
  ASSERT_TRUE(h.submit(hold).ok());
  auto [a, sa] = h.request(0);
  ASSERT_TRUE(h.submit(a).ok());
  auto [b, sb] = h.request(0);
  EXPECT_FALSE(h.submit(b).ok());
  h.finish(a, Status::Error(StatusCode::kCancelled, "gone", AbortCause::kClientDisconnect));
  EXPECT_EQ(h.router->counts(0).cancelled, 1u);
  EXPECT_EQ(h.router->counts(0).queued, 0);
  auto [c, sc] = h.request(0);
  EXPECT_TRUE(h.submit(c).ok());
  // The cancelled one is passed on without taking the slot; c gets it after hold.
  h.finish(hold);
  ASSERT_EQ(h.dispatched.size(), 3u);
  EXPECT_EQ(h.dispatched[2], c);
  EXPECT_EQ(h.router->counts(0).running, 1);
}

// Full slots and a backlog that would take longer than max_backlog: level 1 after 2s sheds
// P2 (429), level 2 after another 2s also P1; P0 is never shed by the ladder.
TEST(PriorityRouter, LadderShedsLowClassesAndShowsTheLevel) {
  RouterHarness h;
  auto [hold, s0] = h.request(0);
  ASSERT_TRUE(h.submit(hold).ok());
  for (int i = 0; i < 5; ++i) {
    auto [r, s] = h.request(2);
    ASSERT_TRUE(h.submit(r).ok());
  }
  for (int i = 0; i < 9; ++i) {
    h.clock.advance(250 * kNanosPerMilli);
    h.router->tick(h.clock.now());
  }
  EXPECT_EQ(h.router->shed_level(), 1);
  EXPECT_NE(h.router->readiness_detail().find("\"shed_level\":1"), std::string::npos) << h.router->readiness_detail();
  auto [p2, s2] = h.request(2);
  Status s = h.submit(p2);
  EXPECT_EQ(s.code, StatusCode::kOverloaded);
  EXPECT_NE(s.message.find("class 'P2' is shed"), std::string::npos) << s.message;
  auto [p1, s1] = h.request(1);
  EXPECT_TRUE(h.submit(p1).ok());
  for (int i = 0; i < 8; ++i) {
    h.clock.advance(250 * kNanosPerMilli);
    h.router->tick(h.clock.now());
  }
  EXPECT_EQ(h.router->shed_level(), 2);
  auto [p1b, s1b] = h.request(1);
  EXPECT_EQ(h.submit(p1b).code, StatusCode::kOverloaded);
  auto [p0, sp0] = h.request(0);
  EXPECT_TRUE(h.submit(p0).ok());
  EXPECT_DOUBLE_EQ(h.metrics.gauge("sluice_shed_level", "", {{"node", "router"}}).value(), 2.0);
}

TEST(PriorityRouter, ShedWorkFromAQueueFedSourceGoesToItsDeferralHook) {
  PriorityRouterConfig c = with_class("P2", 1);
  c.add_deferrable_sources("jobs");
  RouterHarness h(c);
  std::vector<std::uint64_t> deferred;
  h.router->set_deferral_hook("jobs", [&](const RequestPtr& r, double retry) {
    deferred.push_back(r->id());
    EXPECT_GE(retry, 1.0);
    return true;
  });
  auto [hold, s0] = h.request(0);
  ASSERT_TRUE(h.submit(hold).ok());
  auto [a, sa] = h.request(2);
  ASSERT_TRUE(h.submit(a, "jobs").ok());
  auto [b, sb] = h.request(2);
  Status s = h.submit(b, "jobs");
  EXPECT_EQ(s.code, StatusCode::kOverloaded);
  EXPECT_NE(s.message.find("deferred"), std::string::npos);
  EXPECT_EQ(deferred, (std::vector<std::uint64_t>{b->id()}));
  auto [c2, sc] = h.request(2);
  EXPECT_EQ(h.submit(c2, "api").message.find("deferred"), std::string::npos);  // HTTP work is not deferrable
  EXPECT_EQ(h.router->counts(2).deferred, 1u);
}

// ---- token budget

TEST(PriorityRouter, PromptTokensAreEstimatedFromTheTextBytes) {
  RequestInput in;
  in.prompt = "hello world!";  // 12 bytes
  EXPECT_EQ(estimate_prompt_tokens(in, 4.0), 3);
  in.messages = {{"system", "be brief"}, {"user", "hi"}};  // + 10 bytes
  EXPECT_EQ(estimate_prompt_tokens(in, 4.0), 6);          // ceil(22 / 4)
  EXPECT_EQ(estimate_prompt_tokens(RequestInput{}, 4.0), 1);  // never 0
}

PriorityRouterConfig token_budget_config() {
  PriorityRouterConfig c;
  c.mutable_token_budget()->set_enabled(true);
  c.mutable_token_budget()->mutable_rate_memory()->set_seconds(1);
  c.mutable_token_budget()->set_chars_per_token(4);
  auto* p0 = c.add_classes();
  p0->set_name("P0");
  p0->set_max_queue(0);  // unbounded count: the budget decides
  p0->mutable_target_ttft()->set_seconds(1);
  auto* p1 = c.add_classes();
  p1->set_name("P1");
  p1->mutable_target_ttft()->set_seconds(2);
  return c;
}

// Keeps the one slot busy with P2 requests of 25 tokens, one completing every 250ms (one per
// ladder interval), for `intervals`: a measured prefill rate of exactly 100 tokens/s.
void run_saturated(RouterHarness& h, int intervals) {
  for (int i = 0; i < intervals + 1; ++i) {
    if (h.dispatched.empty()) {
      ASSERT_TRUE(h.submit(h.request_with_prompt(2, 100)).ok());
    }
    ASSERT_TRUE(h.submit(h.request_with_prompt(2, 100)).ok());  // keeps one queued behind
  }
  for (int i = 0; i < intervals; ++i) {
    h.clock.advance(250 * kNanosPerMilli);
    h.finish(h.dispatched.back());
    h.router->tick(h.clock.now());
  }
}

TEST(PriorityRouter, TokenBudgetRefusesPastTargetTtftTimesMeasuredRateWithRetryAfterFromIt) {
  RouterHarness h(token_budget_config());
  // No rate measured yet: the budget refuses nothing.
  auto early = h.request_with_prompt(0, 4000);
  ASSERT_TRUE(h.submit(early).ok());
  h.finish(early);
  run_saturated(h, 4);
  EXPECT_DOUBLE_EQ(h.router->prefill_rate(), 0.0);  // the first completion starts the clock: 0.75s < 1s warm-up
  run_saturated(h, 2);
  EXPECT_NEAR(h.router->prefill_rate(), 100.0, 1e-6);
  // P0: target 1s x 100 tokens/s = 100 tokens queued at most (the slot is busy: they queue).
  ASSERT_TRUE(h.submit(h.request_with_prompt(0, 200)).ok());  // 50
  ASSERT_TRUE(h.submit(h.request_with_prompt(0, 196)).ok());  // 99, inside the budget
  EXPECT_EQ(h.router->queued_tokens(0), 99);
  auto big = h.request_with_prompt(0, 1000);  // 250 more
  Status s = h.submit(big);
  EXPECT_EQ(s.code, StatusCode::kOverloaded);
  EXPECT_EQ(s.cause, AbortCause::kShed);
  EXPECT_NE(s.message.find("token budget"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("class 'P0'"), std::string::npos) << s.message;
  EXPECT_NEAR(s.retry_after_seconds, (349.0 - 100.0) / 100.0, 1e-6);  // the excess at the measured rate
  EXPECT_EQ(h.router->counts(0).shed, 1u);
  // P1 (2s: 200 tokens) counts the P0 tokens ahead of it.
  ASSERT_TRUE(h.submit(h.request_with_prompt(1, 400)).ok());  // 99 P0 + 100 P1
  Status s1 = h.submit(h.request_with_prompt(1, 12));          // + 3
  EXPECT_EQ(s1.code, StatusCode::kOverloaded);
  EXPECT_NEAR(s1.retry_after_seconds, 1.0, 1e-9);  // 2 tokens over: the 1s floor
  // P0 leaves first (strict priority): room for 50 more P0 tokens.
  h.finish(h.dispatched.back());
  EXPECT_EQ(h.router->queued_tokens(0), 49);
  Status more = h.submit(h.request_with_prompt(0, 200));  // 99
  EXPECT_TRUE(more.ok()) << more.message;
  EXPECT_EQ(h.submit(h.request_with_prompt(0, 4)).code, StatusCode::kOverloaded);
}

TEST(PriorityRouter, TokenBudgetAlwaysAdmitsIntoAnEmptyQueueAndIsOffByDefault) {
  RouterHarness h(token_budget_config());
  run_saturated(h, 6);
  ASSERT_NEAR(h.router->prefill_rate(), 100.0, 1e-6);
  EXPECT_TRUE(h.submit(h.request_with_prompt(0, 4000)).ok());  // 1000 tokens, but nothing ahead

  PriorityRouterConfig off = token_budget_config();
  off.mutable_token_budget()->set_enabled(false);
  RouterHarness g(off);
  run_saturated(g, 6);
  EXPECT_DOUBLE_EQ(g.router->prefill_rate(), 0.0);  // not measured
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(g.submit(g.request_with_prompt(0, 4000)).ok());
}

TEST(PriorityRouter, TokenBudgetRateIsKeptWhileIdle) {
  RouterHarness h(token_budget_config());
  run_saturated(h, 6);
  for (int i = 0; i < 2; ++i) {  // the queue empties: saturation ends
    h.clock.advance(250 * kNanosPerMilli);
    h.finish(h.dispatched.back());
    h.router->tick(h.clock.now());
  }
  for (int i = 0; i < 40; ++i) {  // 10s idle
    h.clock.advance(250 * kNanosPerMilli);
    h.router->tick(h.clock.now());
  }
  EXPECT_NEAR(h.router->prefill_rate(), 100.0, 1e-6);
}

TEST(PriorityRouter, TokenBudgetKnobsOutOfRangeAreRefusedWithTheirName) {
  AdmissionFixture f;
  PriorityRouterConfig c = token_budget_config();
  c.mutable_token_budget()->set_chars_per_token(100);
  try {
    PriorityRouter r(c, f.context());
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("token_budget.chars_per_token"), std::string::npos) << e.what();
  }
  PriorityRouterConfig d = token_budget_config();
  d.mutable_classes(0)->mutable_target_ttft()->set_seconds(-1);
  try {
    PriorityRouter r(d, f.context());
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("classes[0].target_ttft"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sluice
