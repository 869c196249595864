// The admission nodes inside a real Pipeline: intake-time admission through Pipeline::submit
// (429 returned to the connector before any stage runs), the readiness detail, and a
// concurrency stress test (many producers, all classes) proving every request completes
// exactly once and the router's books balance. Runs under TSan too (-DSLUICE_SANITIZE=thread).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "graph/admission.h"
#include "graph/pipeline.h"
#include "graph/spec_validator.h"
#include "nodes/admission/priority_router.h"
#include "tests/graph/test_support.h"

namespace sluice {

void register_admission_nodes(NodeRegistry& registry);

namespace {

using testing::RecordingSink;

// The admission kinds plus the graph tests' fixtures, without the other capabilities, so this
// binary stays small enough to build under TSan quickly.
NodeRegistry admission_registry() {
  NodeRegistry reg;
  register_admission_nodes(reg);
  reg.add(NodeKind{"mark", "test", {"request"}, {"mark"}, false,
                   [](const NodeSpec& s, const NodeContext&) { return std::make_unique<testing::MarkNode>(s.name()); }});
  reg.add(NodeKind{"answer_marks", "test", {"request"}, {"answer"}, false,
                   [](const NodeSpec&, const NodeContext& c) { return std::make_unique<testing::AnswerMarksNode>(c.clock); }});
  reg.add(NodeKind{"hold", "test", {"request"}, {}, true,
                   [](const NodeSpec&, const NodeContext&) { return std::make_unique<testing::HoldNode>(); }});
  return reg;
}

struct PipelineHarness {
  explicit PipelineHarness(const std::string& yaml) : reg(admission_registry()) {
    spec = load_and_validate_text(yaml, "t.yaml", reg);
    pipeline = Pipeline::build(spec, reg, {&SteadyClock::instance(), &metrics});
    pipeline->start();
  }
  std::pair<RequestPtr, std::shared_ptr<RecordingSink>> make(int priority) {
    auto sink = std::make_shared<RecordingSink>();
    RequestInput in;
    in.kind = RequestInput::Kind::kCompletion;
    in.prompt = "q";
    auto r = std::make_shared<Request>(pipeline->next_request_id(), in, sink);
    r->priority = static_cast<std::uint8_t>(priority);
    return {r, sink};
  }
  NodeRegistry reg;
  LoadedSpec spec;
  MetricsRegistry metrics;
  std::unique_ptr<Pipeline> pipeline;
};

TEST(AdmissionPipeline, IntakeRefusesAFullClassBeforeAnyStageRuns) {
  PipelineHarness h(R"(name: adm
sources: [{name: api, kind: http}]
nodes:
  - name: router
    kind: priority_router
    config: {max_running: 1, classes: [{name: P0, max_queue: 1}]}
  - {name: slow, kind: hold}
edges:
  - {from: api, to: router}
  - {from: router, to: slow}
)");
  ASSERT_NE(h.pipeline->admission("api"), nullptr);
  auto [a, sa] = h.make(0);
  auto [b, sb] = h.make(0);
  auto [c, sc] = h.make(0);
  int held_before = testing::HoldNode::count_.load();
  ASSERT_TRUE(h.pipeline->submit("api", a).ok());
  // a holds the only slot once it reaches the hold node; until then it still counts as queued.
  for (int i = 0; i < 10000 && testing::HoldNode::count_.load() == held_before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(testing::HoldNode::count_.load(), held_before + 1);
  ASSERT_TRUE(h.pipeline->submit("api", b).ok());
  held_before = testing::HoldNode::count_.load();
  Status s = h.pipeline->submit("api", c);
  EXPECT_EQ(s.code, StatusCode::kOverloaded);
  EXPECT_GE(s.retry_after_seconds, 1.0);
  EXPECT_EQ(sc->completions, 1);
  EXPECT_EQ(sc->status.code, StatusCode::kOverloaded);
  EXPECT_EQ(testing::HoldNode::count_.load(), held_before);  // c never reached a stage
  EXPECT_NE(h.pipeline->admission_detail().find("\"api\":{\"node\":\"router\",\"shed_level\":0"), std::string::npos)
      << h.pipeline->admission_detail();
  auto report = h.pipeline->drain(0);
  EXPECT_EQ(sa->completions, 1);
  EXPECT_EQ(sb->completions, 1);
}

TEST(AdmissionPipeline, TwoRoutersOnOnePathAreRefused) {
  NodeRegistry reg = admission_registry();
  MetricsRegistry metrics;
  auto spec = load_and_validate_text(R"(name: two
sources: [{name: api, kind: http}]
nodes:
  - {name: r1, kind: priority_router}
  - {name: r2, kind: priority_router}
  - {name: answer, kind: hold}
edges:
  - {from: api, to: r1}
  - {from: r1, to: r2}
  - {from: r2, to: answer}
)",
                                     "t.yaml", reg);
  try {
    Pipeline::build(spec, reg, {&SteadyClock::instance(), &metrics});
    FAIL();
  } catch (const SpecErrors& e) {
    EXPECT_NE(std::string(e.what()).find("a request may pass one priority_router"), std::string::npos) << e.what();
  }
}

TEST(AdmissionPipeline, ManyProducersAllClassesEveryRequestCompletesExactlyOnce) {
  PipelineHarness h(R"(name: stress
runtime: {max_in_flight: 100000, threads: 4}
sources: [{name: api, kind: http}]
nodes:
  - name: router
    kind: priority_router
    config: {max_running: 16, classes: [{name: P0, max_queue: 8}, {name: P1, max_queue: 32}, {name: P2, max_queue: 64}]}
  - name: batch
    kind: dynamic_batcher
    config: {window: 1ms, max_batch: [4, 8, 16]}
  - name: harness
    kind: service_curve
    config: {base_time: 50us, slots: 2}
edges:
  - {from: api, to: router}
  - {from: router, to: batch}
  - {from: batch, to: harness}
)");
  constexpr int kProducers = 8;
  constexpr int kPerProducer = 300;
  std::vector<std::vector<std::pair<RequestPtr, std::shared_ptr<RecordingSink>>>> made(kProducers);
  std::atomic<int> refused{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        auto rs = h.make((p + i) % 3);
        if (i % 7 == 3) rs.first->cancel(AbortCause::kClientDisconnect);  // some clients leave
        if (!h.pipeline->submit("api", rs.first).ok()) refused.fetch_add(1);
        made[p].push_back(std::move(rs));
      }
    });
  }
  for (auto& t : producers) t.join();
  auto* router = dynamic_cast<PriorityRouter*>(h.pipeline->admission("api"));
  ASSERT_NE(router, nullptr);
  auto books = [&] {
    std::string out;
    for (std::size_t c = 0; c < 3; ++c) {
      auto n = router->counts(c);
      out += " class " + std::to_string(c) + ": admitted " + std::to_string(n.admitted) + " queued " + std::to_string(n.queued) +
             " running " + std::to_string(n.running) + " dispatched " + std::to_string(n.dispatched) + ";";
    }
    return out;
  };
  for (auto& list : made) {
    for (auto& [r, sink] : list) {
      ASSERT_TRUE(sink->wait(std::chrono::seconds(30)))
          << "request " << r->id() << " never completed; stages seen " << r->trace().size() << books();
    }
  }
  int ok = 0;
  for (auto& list : made) {
    for (auto& [r, sink] : list) {
      std::lock_guard lock(sink->mu);
      EXPECT_EQ(sink->completions, 1) << "request " << r->id();
      ok += sink->status.ok() ? 1 : 0;
    }
  }
  EXPECT_GT(ok, 0);
  auto report = h.pipeline->drain(0);
  EXPECT_TRUE(report.abandoned.empty());
  std::uint64_t admitted = 0, shed = 0;
  for (std::size_t c = 0; c < 3; ++c) {
    auto counts = router->counts(c);
    EXPECT_EQ(counts.queued, 0) << c;
    EXPECT_EQ(counts.running, 0) << c;
    admitted += counts.admitted;
    shed += counts.shed;
  }
  EXPECT_EQ(admitted + shed, static_cast<std::uint64_t>(kProducers * kPerProducer));
  EXPECT_EQ(shed, static_cast<std::uint64_t>(refused.load()));
}

// Regression: async nodes (router, batcher) hand their batches on to the next stage; the
// runtime once attached successors to async_node's sender interface, which drops them.
TEST(AdmissionPipeline, AsyncNodesHandTheirBatchesOnToTheNextStage) {
  for (const char* kind : {"priority_router", "dynamic_batcher"}) {
    PipelineHarness h(std::string("name: s\nsources: [{name: api, kind: http}]\nnodes: [{name: a, kind: ") + kind +
                      "}, {name: m, kind: mark}, {name: b, kind: answer_marks}]\n"
                      "edges: [{from: api, to: a}, {from: a, to: m}, {from: m, to: b}]\n");
    auto [r, sink] = h.make(1);
    ASSERT_TRUE(h.pipeline->submit("api", r).ok());
    ASSERT_TRUE(sink->wait()) << kind;
    EXPECT_TRUE(sink->status.ok()) << kind << ": " << sink->status.message;
    EXPECT_EQ(r->trace().size(), 3u) << kind;
  }
}

}  // namespace
}  // namespace sluice
