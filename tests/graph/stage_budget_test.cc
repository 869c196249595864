// Latency budgets (graph/stage_budget.h): the measured expected cost, the budgets later stages
// reserve, the degradations applied (skip, shrink) and recorded, class deadlines, the
// over-budget alert, and the validator's refusals. Time is a ManualClock that the test nodes
// advance, so every decision here is exact.
#include "graph/stage_budget.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "graph/pipeline.h"
#include "graph/spec_validator.h"
#include "graph/stage.h"
#include "tests/graph/test_support.h"
#include "tests/support/error_message.h"
#include "tests/support/loopback_receiver.h"

namespace sluice {
namespace {

using testing::RecordingSink;
constexpr Nanos kMs = kNanosPerSecond / 1000;

// "work<N>": takes N ms of the manual clock per batch (half that when the budget shrank every
// request of it) and marks each request it serves with its name, or "<name>-shrunk". "async_work<N>": the same as an async
// node that hands its batch on at once.
Nanos work_ms(const std::string& name) { return std::stoll(name.substr(name.find_first_of("0123456789"))) * kMs; }

void mark(Batch& b, const std::string& name, std::uint16_t stage) {
  for (auto& r : b.requests) {
    const bool shrunk = r->trace().degradation(stage) == Degradation::kShrink;
    r->attach("mark." + name, std::make_shared<std::string>(shrunk ? name + "-shrunk" : name));
  }
}

class WorkNode : public SyncNode {
 public:
  WorkNode(std::string name, ManualClock* clock, std::uint16_t stage) : name_(std::move(name)), clock_(clock), stage_(stage) {}
  void process(Batch& b) override {
    bool all_shrunk = true;
    for (auto& r : b.requests) all_shrunk &= r->trace().degradation(stage_) == Degradation::kShrink;
    clock_->advance(all_shrunk ? work_ms(name_) / 2 : work_ms(name_));
    mark(b, name_, stage_);
  }

 private:
  std::string name_;
  ManualClock* clock_;
  std::uint16_t stage_;
};

class AsyncWorkNode : public AsyncNode {
 public:
  AsyncWorkNode(std::string name, ManualClock* clock, std::uint16_t stage) : name_(std::move(name)), clock_(clock), stage_(stage) {}
  void start_batch(BatchPtr b, Done done) override {
    clock_->advance(work_ms(name_));
    mark(*b, name_, stage_);
    done(std::move(b));
  }

 private:
  std::string name_;
  ManualClock* clock_;
  std::uint16_t stage_;
};

// Answers with the marks it finds, in the order of `names`.
class AnswerWorkNode : public SyncNode {
 public:
  explicit AnswerWorkNode(Clock* clock) : clock_(clock) {}
  void process(Batch& b) override {
    for (auto& r : b.requests) {
      if (!r->active()) continue;
      std::string out;
      for (const char* n : {"first20", "fast1", "async_first20", "second5", "gen50", "left3", "right30"}) {
        if (auto v = r->attachment<std::string>(std::string("mark.") + n)) out += *v + ";";
      }
      r->emit_token(out, clock_->now());
      r->complete(Status::Ok(), clock_->now());
    }
  }

 private:
  Clock* clock_;
};

struct Harness {
  explicit Harness(const std::string& yaml) : reg(testing::test_registry()) {
    ManualClock* c = &clock;
    reg.add(NodeKind{"work", "test", {"request"}, {"request"}, false, [c](const NodeSpec& s, const NodeContext& ctx) {
                       return std::make_unique<WorkNode>(s.name(), c, ctx.stage_index);
                     }});
    reg.add(NodeKind{"async_work", "test", {"request"}, {"request"}, true, [c](const NodeSpec& s, const NodeContext& ctx) {
                       return std::make_unique<AsyncWorkNode>(s.name(), c, ctx.stage_index);
                     }});
    reg.add(NodeKind{"answer_work", "test", {"request"}, {"answer"}, false,
                     [](const NodeSpec&, const NodeContext& ctx) { return std::make_unique<AnswerWorkNode>(ctx.clock); }});
    reg.set_degradations("work", "the next node makes do", "does a part of its work");
    reg.set_degradations("async_work", "the next node makes do", "");
    spec = load_and_validate_text(yaml, "t.yaml", reg);
    pipeline = Pipeline::build(spec, reg, {&clock, &metrics});
    pipeline->start();
  }
  ~Harness() { pipeline->drain(kNanosPerSecond); }
  // Runs one request with `budget` (0: the pipeline's default deadline); returns its answer.
  std::string run(Nanos budget = 0, RequestPtr* out = nullptr, std::uint8_t priority = Request::kDefaultPriority) {
    auto sink = std::make_shared<RecordingSink>();
    RequestInput in;
    in.kind = RequestInput::Kind::kCompletion;
    in.prompt = "q";
    auto r = std::make_shared<Request>(pipeline->next_request_id(), in, sink);
    r->arrival = clock.now();
    r->priority = priority;
    if (budget > 0) r->deadline = r->arrival + budget;
    EXPECT_TRUE(pipeline->submit("api", r).ok());
    EXPECT_TRUE(sink->wait());
    if (out) *out = r;
    return sink->status.ok() ? sink->text() : "error: " + sink->status.message;
  }
  // Requests with the default (60 s) deadline, so `node`'s window learns its service time.
  void warm(int n = static_cast<int>(ServiceTimeWindow::kMinSamples)) {
    for (int i = 0; i < n; ++i) run();
  }
  double counter(const std::string& node, const std::string& action) {
    return metrics.counter("sluice_degradations_total", "", {{"node", node}, {"action", action}}).value();
  }
  ManualClock clock;
  NodeRegistry reg;
  LoadedSpec spec;
  MetricsRegistry metrics;
  std::unique_ptr<Pipeline> pipeline;
};

// first20 (20 ms, skips when short) -> gen50 (50 ms, budget 100ms) -> answer.
const char* kSkipFirst = R"(name: budgets
sources: [{name: api, kind: http}]
nodes:
  - {name: first20, kind: work, degrade: skip}
  - {name: gen50, kind: work, budget: 100ms}
  - {name: answer, kind: answer_work}
edges:
  - {from: api, to: first20}
  - {from: first20, to: gen50}
  - {from: gen50, to: answer}
)";

TEST(ServiceTimeWindow, QuantilesOfTheWindowOnceEnoughSamples) {
  ServiceTimeWindow w;
  for (Nanos i = 1; i < static_cast<Nanos>(ServiceTimeWindow::kMinSamples); ++i) w.observe(i * kMs);
  EXPECT_EQ(w.p90(), 0) << "too few samples to estimate";
  for (Nanos i = ServiceTimeWindow::kMinSamples; i <= 96; ++i) w.observe(i * kMs);  // 1..96 ms, refreshed at 96
  EXPECT_EQ(w.p90(), 87 * kMs);
  EXPECT_EQ(w.p95(), 92 * kMs);
  // The window forgets: after kWindow samples of 1 ms, the quantiles are 1 ms.
  for (std::size_t i = 0; i < ServiceTimeWindow::kWindow; ++i) w.observe(kMs);
  EXPECT_EQ(w.p90(), kMs);
}

TEST(BudgetPaths, KeepsOnlyTotalsNoOtherBeatsOnBothParts) {
  std::vector<BudgetAmount> set;
  add_budget_path(set, {100 * kMs, 0});
  add_budget_path(set, {50 * kMs, 0});    // dominated
  add_budget_path(set, {10 * kMs, 0.2});  // larger for long budgets: kept
  add_budget_path(set, {100 * kMs, 0.3}); // dominates both
  ASSERT_EQ(set.size(), 1u);
  EXPECT_EQ(set[0].fixed, 100 * kMs);
  EXPECT_DOUBLE_EQ(set[0].share, 0.3);
  add_budget_path(set, {200 * kMs, 0});
  EXPECT_EQ(set.size(), 2u);
}

TEST(StageBudget, SkipsWhenTheRestOfTheBudgetCannotCoverTheStageAndWhatFollows) {
  Harness h(kSkipFirst);
  h.warm();  // first20's p90 is now 20 ms
  // 20 ms (first20's p90) + 100 ms (gen50's budget) > 110 ms: first20 skips; gen50 still runs.
  RequestPtr r;
  EXPECT_EQ(h.run(110 * kMs, &r), "gen50;");
  EXPECT_EQ(r->trace().degradation(0), Degradation::kSkip);
  EXPECT_EQ(r->trace().degradation(1), Degradation::kNone);
  EXPECT_EQ(h.counter("first20", "skip"), 1);
  // 130 ms covers both: nothing degraded.
  EXPECT_EQ(h.run(130 * kMs, &r), "first20;gen50;");
  EXPECT_FALSE(r->trace().degraded());
  EXPECT_EQ(h.counter("first20", "skip"), 1);
}

TEST(StageBudget, BeforeEnoughSamplesTheStagesOwnBudgetIsItsExpectedCost) {
  Harness h(R"(name: cold
sources: [{name: api, kind: http}]
nodes:
  - {name: first20, kind: work, budget: 30ms, degrade: skip}
  - {name: answer, kind: answer_work}
edges: [{from: api, to: first20}, {from: first20, to: answer}]
)");
  EXPECT_EQ(h.run(25 * kMs), "");        // 30 ms > 25 ms: skipped, though never measured
  EXPECT_EQ(h.run(35 * kMs), "first20;");
}

TEST(StageBudget, ShareOfTheWholeBudgetIsReserved) {
  Harness h(R"(name: share
sources: [{name: api, kind: http}]
nodes:
  - {name: first20, kind: work, degrade: skip}
  - {name: second5, kind: work, budget_share: 0.5}
  - {name: answer, kind: answer_work}
edges: [{from: api, to: first20}, {from: first20, to: second5}, {from: second5, to: answer}]
)");
  h.warm();
  EXPECT_EQ(h.run(36 * kMs), "second5;");          // 20 + 36 / 2 > 36
  EXPECT_EQ(h.run(44 * kMs), "first20;second5;");  // 20 + 44 / 2 <= 44
}

TEST(StageBudget, AShrunkRequestGetsLessWorkFromTheNode) {
  Harness h(R"(name: shrink
sources: [{name: api, kind: http}]
nodes:
  - {name: first20, kind: work, degrade: {action: shrink, factor: 0.5}}
  - {name: answer, kind: answer_work}
edges: [{from: api, to: first20}, {from: first20, to: answer}]
)");
  h.warm();
  RequestPtr r;
  EXPECT_EQ(h.run(15 * kMs, &r), "first20-shrunk;");  // 20 > 15: shrunk (and done in 10)
  EXPECT_EQ(r->trace().degradation(0), Degradation::kShrink);
  EXPECT_EQ(h.counter("first20", "shrink"), 1);
  EXPECT_EQ(h.run(25 * kMs), "first20;");
}

TEST(StageBudget, AsyncStageSkipsAndTheBatchStillMovesOn) {
  Harness h(R"(name: async
sources: [{name: api, kind: http}]
nodes:
  - {name: async_first20, kind: async_work, degrade: skip}
  - {name: gen50, kind: work, budget: 100ms}
  - {name: answer, kind: answer_work}
edges: [{from: api, to: async_first20}, {from: async_first20, to: gen50}, {from: gen50, to: answer}]
)");
  h.warm();
  EXPECT_EQ(h.run(110 * kMs), "gen50;");
  EXPECT_EQ(h.run(), "async_first20;gen50;");
}

TEST(StageBudget, ReserveIsTheLargestPathAfterTheStage) {
  // fast1 -> {left3 (budget 10ms), right30 (budget 40ms)} -> answer: fast1 keeps 40 ms back.
  Harness h(R"(name: paths
sources: [{name: api, kind: http}]
nodes:
  - {name: fast1, kind: work, degrade: skip}
  - {name: left3, kind: work, budget: 10ms}
  - {name: right30, kind: work, budget: 40ms}
  - {name: answer, kind: answer_work}
edges:
  - {from: api, to: fast1}
  - {from: fast1, to: left3}
  - {from: fast1, to: right30}
  - {from: left3, to: answer}
  - {from: right30, to: answer}
)");
  h.warm();
  EXPECT_EQ(h.run(40 * kMs), "left3;right30;");  // 1 + 40 > 40
  EXPECT_EQ(h.run(100 * kMs), "fast1;left3;right30;");
}

TEST(StageBudget, ABatchWhereSomeSkipGivesTheNodeTheOthers) {
  Batch b;
  b.id = 7;
  for (int i = 0; i < 3; ++i) {
    auto r = std::make_shared<Request>(static_cast<std::uint64_t>(i + 1), RequestInput{}, std::make_shared<RecordingSink>());
    r->trace().start(2, 0, 0);
    if (i == 1) r->trace().degrade(2, Degradation::kSkip);
    if (i == 2) r->trace().degrade(2, Degradation::kShrink);
    b.requests.push_back(r);
  }
  const BatchPtr part = without_skipped(b, 2);
  EXPECT_EQ(part->id, 7u);
  ASSERT_EQ(part->requests.size(), 2u);
  EXPECT_EQ(part->requests[0]->id(), 1u);
  EXPECT_EQ(part->requests[1]->id(), 3u);
  EXPECT_EQ(b.requests.size(), 3u) << "the shared batch is not edited";
}

TEST(StageBudget, ClassDeadlineIsTheBudgetOfRequestsWithoutOne) {
  Harness h(R"(name: classes
runtime: {classes: [{name: P0, deadline: 110ms}, {name: P1}], default_class: P1}
sources: [{name: api, kind: http}]
nodes:
  - {name: first20, kind: work, degrade: skip}
  - {name: gen50, kind: work, budget: 100ms}
  - {name: answer, kind: answer_work}
edges: [{from: api, to: first20}, {from: first20, to: gen50}, {from: gen50, to: answer}]
)");
  h.warm();  // P1: the 60 s default deadline
  RequestPtr r;
  EXPECT_EQ(h.run(0, &r, 0), "gen50;");
  EXPECT_EQ(r->deadline - r->arrival, 110 * kMs);
  EXPECT_EQ(h.run(0, &r, 1), "first20;gen50;");
  EXPECT_EQ(r->deadline - r->arrival, 60 * kNanosPerSecond);
}

TEST(StageBudget, SpentBudgetFailsAtOnceWithoutWork) {
  Harness h(kSkipFirst);
  RequestPtr r;
  const Nanos before = h.clock.now();
  auto sink = std::make_shared<RecordingSink>();
  r = std::make_shared<Request>(h.pipeline->next_request_id(), RequestInput{}, sink);
  r->arrival = before;
  r->deadline = before;  // nothing left
  ASSERT_TRUE(h.pipeline->submit("api", r).ok());
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->status.code, StatusCode::kDeadlineExceeded);
  EXPECT_EQ(h.clock.now(), before) << "no stage spent time on it";
  EXPECT_EQ(r->trace().size(), 0u);
}

TEST(StageBudget, P95OverTheBudgetRaisesTheGauge) {
  Harness h(R"(name: alert
sources: [{name: api, kind: http}]
nodes:
  - {name: first20, kind: work, budget: 10ms}
  - {name: answer, kind: answer_work}
edges: [{from: api, to: first20}, {from: first20, to: answer}]
)");
  Gauge& over = h.metrics.gauge("sluice_stage_over_budget", "", {{"node", "first20"}});
  EXPECT_EQ(over.value(), 0);
  h.warm();
  EXPECT_EQ(over.value(), 1);
  EXPECT_DOUBLE_EQ(h.metrics.gauge("sluice_stage_service_p95_seconds", "", {{"node", "first20"}}).value(), 0.020);
  EXPECT_DOUBLE_EQ(h.metrics.gauge("sluice_stage_budget_seconds", "", {{"node", "first20"}}).value(), 0.010);
}

// A stage with only a budget_share is held to its share of runtime.default_deadline.
TEST(StageBudget, AShareOnlyBudgetIsHeldToItsShareOfTheDefaultDeadline) {
  Harness h(R"(name: alert_share
runtime: {default_deadline: 100ms}
sources: [{name: api, kind: http}]
nodes:
  - {name: first20, kind: work, budget_share: 0.1}
  - {name: answer, kind: answer_work}
edges: [{from: api, to: first20}, {from: first20, to: answer}]
)");
  Gauge& over = h.metrics.gauge("sluice_stage_over_budget", "", {{"node", "first20"}});
  h.warm();
  EXPECT_EQ(over.value(), 1) << "p95 20 ms > 0.1 x 100 ms";
  EXPECT_DOUBLE_EQ(h.metrics.gauge("sluice_stage_budget_seconds", "", {{"node", "first20"}}).value(), 0.010);
}

// The same change reaches alerts.webhook as a JSON post (a real receiver on loopback).
TEST(StageBudget, P95OverTheBudgetIsPostedToTheWebhook) {
  testing::LoopbackReceiver receiver;
  Harness h("name: alert\nalerts: {webhook: '" + receiver.url() + R"('}
sources: [{name: api, kind: http}]
nodes:
  - {name: first20, kind: work, budget: 10ms}
  - {name: answer, kind: answer_work}
edges: [{from: api, to: first20}, {from: first20, to: answer}]
)");
  h.warm();
  const auto bodies = receiver.wait_for(1);
  ASSERT_EQ(bodies.size(), 1u);
  const auto j = nlohmann::json::parse(bodies[0]);
  EXPECT_EQ(j["status"], "firing");
  EXPECT_EQ(j["pipeline"], "alert");
  EXPECT_EQ(j["stage"], "first20");
  EXPECT_DOUBLE_EQ(j["p95_seconds"].get<double>(), 0.020);
  EXPECT_DOUBLE_EQ(j["budget_seconds"].get<double>(), 0.010);
}

TEST(StageBudget, ValidatorRefusesDegradationsTheKindOrPlaceCannotTake) {
  NodeRegistry reg = testing::test_registry();
  reg.add(NodeKind{"work", "test", {"request"}, {"request"}, false, nullptr});
  reg.set_degradations("work", "the next node makes do", "");
  // The errors of a file whose nodes are `a` then `b` (as YAML flow maps) with the edge a -> b.
  auto errors_of = [&](const std::string& a, const std::string& b) {
    std::string out;
    try {
      load_and_validate_text("name: v\nsources: [{name: api, kind: http}]\nnodes:\n  - " + a + "\n  - " + b +
                                 "\nedges:\n  - {from: api, to: a}\n  - {from: a, to: b}\n",
                             "v.yaml", reg);
    } catch (const SpecErrors& e) {
      out = e.what();
    }
    return out;
  };
  const std::string answer_b = "{name: b, kind: answer_marks}";
  EXPECT_EQ(errors_of("{name: a, kind: work, degrade: skip}", answer_b), "");
  // none: the same as unset, on any kind (a file switching it off through a variable)
  EXPECT_EQ(errors_of("{name: a, kind: mark, degrade: none}", answer_b), "");
  for (const auto& [a, b, expected] : std::initializer_list<std::tuple<std::string, std::string, std::string>>{
           {"{name: a, kind: mark, degrade: skip}", answer_b, "node kind 'mark' cannot skip under a latency budget (kinds that can: "},
           {"{name: a, kind: work, degrade: shrink}", answer_b, "cannot shrink"},
           {"{name: a, kind: answer_marks}", "{name: b, kind: work, degrade: skip}", "a node with no successor cannot skip"},
           {"{name: a, kind: work, degrade: {action: skip, factor: 2}}", answer_b, "factor"},
           {"{name: a, kind: work, degrade: drop}", answer_b, "drop"}}) {
    EXPECT_NE(errors_of(a, b).find(expected), std::string::npos) << a << " / " << b << ": " << errors_of(a, b);
  }
}

}  // namespace
}  // namespace sluice
