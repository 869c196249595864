// The graph runtime: wiring, fan-out/fan-in, exactly-once completion under concurrency,
// error propagation, deadlines, cancellation, admission limits and drain.
#include "graph/pipeline.h"

#include <gtest/gtest.h>

#include <thread>

#include "graph/spec_validator.h"
#include "tests/graph/test_support.h"

namespace sluice {
namespace {

using testing::RecordingSink;

using Harness = testing::PipelineHarness;

const char* kFanOutIn = R"(name: diamond
sources: [{name: api, kind: http}]
nodes:
  - {name: left, kind: mark}
  - {name: right, kind: mark}
  - {name: join, kind: answer_marks}
edges:
  - {from: api, to: left}
  - {from: api, to: right}
  - {from: left, to: join}
  - {from: right, to: join}
)";

TEST(Pipeline, FanOutRunsBothBranchesAndJoinSeesBoth) {
  Harness h(kFanOutIn);
  auto [r, sink] = h.make();
  ASSERT_TRUE(h.pipeline->submit("api", r).ok());
  ASSERT_TRUE(sink->wait());
  EXPECT_TRUE(sink->status.ok()) << sink->status.message;
  EXPECT_EQ(sink->text(), "left;right;");
  // Every stage stamped the request: two branches and the join. Traces are read once the
  // graph is done with the request (the completing stage stamps its finish afterwards).
  h.pipeline->drain(kNanosPerSecond);
  EXPECT_EQ(r->trace().size(), 3u);
}

// Two sources into one node (an HTTP and a Kafka source into one router): their edges merge,
// since no batch arrives on both; a join there would wait forever for the other source.
TEST(Pipeline, TwoSourcesIntoOneNodeMergeInsteadOfJoining) {
  Harness h(R"(name: two-sources
sources: [{name: api, kind: http}, {name: jobs, kind: http, config: {listen: "127.0.0.1:0"}}]
nodes:
  - {name: a, kind: mark}
  - {name: b, kind: mark}
  - {name: answer, kind: answer_marks}
edges:
  - {from: api, to: a}
  - {from: jobs, to: b}
  - {from: a, to: answer}
  - {from: b, to: answer}
)");
  for (const char* source : {"api", "jobs", "api"}) {
    auto [r, sink] = h.make();
    ASSERT_TRUE(h.pipeline->submit(source, r).ok());
    ASSERT_TRUE(sink->wait()) << source;
    EXPECT_TRUE(sink->status.ok()) << sink->status.message;
    EXPECT_EQ(sink->text(), std::string(source) == "api" ? "a;" : "b;");
  }
}

// A join of `branches` (3 or 4) marking branches: every arity the validator allows is built.
std::string wide_fan_in(int branches) {
  const char* names[] = {"a", "b", "c", "left"};
  std::string y = "name: wide\nsources: [{name: api, kind: http}]\nnodes:\n";
  for (int i = 0; i < branches; ++i) y += std::string("  - {name: ") + names[i] + ", kind: mark}\n";
  y += "  - {name: join, kind: answer_marks}\nedges:\n";
  for (int i = 0; i < branches; ++i) y += std::string("  - {from: api, to: ") + names[i] + "}\n";
  for (int i = 0; i < branches; ++i) y += std::string("  - {from: ") + names[i] + ", to: join}\n";
  return y;
}

TEST(Pipeline, JoinsOfThreeAndFourBranchesSeeEveryBranch) {
  for (int branches : {3, 4}) {
    Harness h(wide_fan_in(branches));
    std::vector<std::pair<RequestPtr, std::shared_ptr<RecordingSink>>> made;
    for (int i = 0; i < 50; ++i) {
      made.push_back(h.make());
      ASSERT_TRUE(h.pipeline->submit("api", made.back().first).ok());
    }
    for (auto& [r, sink] : made) {
      ASSERT_TRUE(sink->wait()) << branches;
      EXPECT_TRUE(sink->status.ok()) << sink->status.message;
      EXPECT_EQ(sink->text(), branches == 3 ? "a;b;c;" : "a;b;c;left;");
      EXPECT_EQ(sink->completions, 1);
    }
    h.pipeline->drain(kNanosPerSecond);
    EXPECT_EQ(made.front().first->trace().size(), static_cast<std::size_t>(branches + 1));
  }
}

TEST(Pipeline, ManyConcurrentRequestsEachCompleteExactlyOnce) {
  Harness h(kFanOutIn);
  constexpr int kThreads = 4, kPerThread = 500;
  std::vector<std::vector<std::shared_ptr<RecordingSink>>> sinks(kThreads);
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto [r, sink] = h.make();
        sinks[t].push_back(sink);
        h.pipeline->submit("api", r);
      }
    });
  }
  for (auto& p : producers) p.join();
  for (auto& per_thread : sinks) {
    for (auto& s : per_thread) {
      ASSERT_TRUE(s->wait());
      EXPECT_EQ(s->completions, 1);
      EXPECT_EQ(s->text(), "left;right;");
    }
  }
  DrainReport report = h.pipeline->drain(kNanosPerSecond);
  EXPECT_TRUE(report.abandoned.empty());
  EXPECT_EQ(h.pipeline->in_flight(), 0u);
}

TEST(Pipeline, FailingNodeCompletesWithAStructuredError) {
  Harness h(R"(name: f
sources: [{name: api, kind: http}]
nodes: [{name: broken, kind: fail}, {name: after, kind: answer_marks}]
edges: [{from: api, to: broken}, {from: broken, to: after}]
)");
  auto [r, sink] = h.make();
  h.pipeline->submit("api", r);
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->status.code, StatusCode::kInternal);
  EXPECT_EQ(sink->status.message, "node 'broken' failed: boom");
  EXPECT_EQ(sink->status.cause, AbortCause::kFailure);
  EXPECT_EQ(sink->completions, 1);
}

TEST(Pipeline, PipelineThatNeverAnswersStillCompletesTheRequest) {
  Harness h(R"(name: silent
sources: [{name: api, kind: http}]
nodes: [{name: p, kind: passthrough}]
edges: [{from: api, to: p}]
)");
  auto [r, sink] = h.make();
  h.pipeline->submit("api", r);
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->status.code, StatusCode::kInternal);
  EXPECT_EQ(sink->status.message, "pipeline 'silent' ended without answering the request");
}

TEST(Pipeline, ExpiredRequestIsRetiredWith504BeforeWork) {
  ManualClock clock;
  Harness h(R"(name: d
sources: [{name: api, kind: http}]
nodes: [{name: a, kind: answer_marks}]
edges: [{from: api, to: a}]
)",
            &clock);
  auto [r, sink] = h.make();
  r->arrival = clock.now();
  r->deadline = clock.now() - 1;  // already past
  h.pipeline->submit("api", r);
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->status.code, StatusCode::kDeadlineExceeded);
  EXPECT_EQ(sink->status.message, "request deadline passed before stage 'a'");
}

TEST(Pipeline, CancelledRequestGetsNoMoreWork) {
  Harness h(R"(name: c
sources: [{name: api, kind: http}]
nodes: [{name: a, kind: answer_marks}]
edges: [{from: api, to: a}]
)");
  auto [r, sink] = h.make();
  r->cancel(AbortCause::kClientDisconnect);
  h.pipeline->submit("api", r);
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->status.code, StatusCode::kCancelled);
  EXPECT_TRUE(sink->tokens.empty());
}

TEST(Pipeline, AdmissionLimitAnswersOverloadedAndDrainAbandonsTheRest) {
  Harness h(R"(name: hold
runtime: {max_in_flight: 2}
sources: [{name: api, kind: http}]
nodes: [{name: h, kind: hold}]
edges: [{from: api, to: h}]
)");
  auto [a, sa] = h.make();
  auto [b, sb] = h.make();
  auto [c, sc] = h.make();
  EXPECT_TRUE(h.pipeline->submit("api", a).ok());
  EXPECT_TRUE(h.pipeline->submit("api", b).ok());
  Status third = h.pipeline->submit("api", c);
  EXPECT_EQ(third.code, StatusCode::kOverloaded);
  EXPECT_GE(third.retry_after_seconds, 1);
  EXPECT_EQ(sc->completions, 1);  // rejected requests are completed too

  DrainReport report = h.pipeline->drain(20 * kNanosPerMilli);
  EXPECT_EQ(report.abandoned.size(), 2u);
  EXPECT_EQ(sa->status.code, StatusCode::kUnavailable);
  EXPECT_EQ(sa->status.cause, AbortCause::kShutdown);
  EXPECT_EQ(sa->completions, 1);
  // Intake is closed after drain.
  auto [d, sd] = h.make();
  EXPECT_EQ(h.pipeline->submit("api", d).code, StatusCode::kUnavailable);
}

TEST(Pipeline, DrainWaitsForInFlightWork) {
  Harness h(R"(name: stream
sources: [{name: api, kind: http}]
nodes: [{name: t, kind: template, config: {text: "a b c d e", token_interval: 2ms}}]
edges: [{from: api, to: t}]
)");
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 20; ++i) {
    auto [r, sink] = h.make();
    sinks.push_back(sink);
    h.pipeline->submit("api", r);
  }
  DrainReport report = h.pipeline->drain(10 * kNanosPerSecond);
  EXPECT_TRUE(report.abandoned.empty());
  for (auto& s : sinks) {
    EXPECT_TRUE(s->status.ok());
    EXPECT_EQ(s->text(), "a b c d e");
    EXPECT_EQ(s->tokens.size(), 5u);
  }
}

TEST(Pipeline, TemplateResponderStreamsWordsAndHonoursMaxTokens) {
  Harness h(R"(name: t
sources: [{name: api, kind: http}]
nodes: [{name: t, kind: template, config: {text: "You said {{input}} ok"}}]
edges: [{from: api, to: t}]
)");
  auto [r, sink] = h.make("hello there");
  h.pipeline->submit("api", r);
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->text(), "You said hello there ok");
  EXPECT_EQ(sink->tokens.size(), 5u);
  EXPECT_EQ(r->usage.prompt_tokens, 2);
  EXPECT_EQ(r->usage.completion_tokens, 5);
  EXPECT_EQ(r->finish_reason, "stop");

  RequestInput in;
  in.prompt = "x";
  in.kind = RequestInput::Kind::kCompletion;
  in.max_tokens = 2;
  auto sink2 = std::make_shared<RecordingSink>();
  auto r2 = std::make_shared<Request>(h.pipeline->next_request_id(), in, sink2);
  h.pipeline->submit("api", r2);
  ASSERT_TRUE(sink2->wait());
  EXPECT_EQ(sink2->text(), "You said");
  EXPECT_EQ(r2->finish_reason, "length");
}

TEST(Pipeline, TemplateResponderRefusesAnUnknownPlaceholderNamingTheField) {
  // The placeholder rules are graph/placeholders.h's, shared with the `prompt` node.
  NodeRegistry reg = testing::test_registry();
  const LoadedSpec spec = load_and_validate_text(R"(name: t
sources: [{name: api, kind: http}]
nodes: [{name: t, kind: template, config: {text: "You said {{inptu}}"}}]
edges: [{from: api, to: t}]
)",
                                                 "t.yaml", reg);
  MetricsRegistry metrics;
  try {
    Pipeline::build(spec, reg, {&SteadyClock::instance(), &metrics});
    FAIL() << "built";
  } catch (const SpecErrors& e) {
    EXPECT_NE(std::string(e.what()).find("text: unknown placeholder '{{inptu}}' (allowed: {{input}})"), std::string::npos)
        << e.what();
  }
}

TEST(Pipeline, StageMetricsAndTraceAreRecorded) {
  Harness h(kFanOutIn);
  auto [r, sink] = h.make();
  h.pipeline->submit("api", r);
  ASSERT_TRUE(sink->wait());
  h.pipeline->drain(kNanosPerSecond);
  std::string text = h.metrics.exposition();
  EXPECT_NE(text.find("sluice_request_queue_time_seconds_count{stage=\"join\"} 1"), std::string::npos);
  EXPECT_NE(text.find("sluice_stage_service_time_seconds_count{stage=\"left\"} 1"), std::string::npos);
  EXPECT_NE(text.find("sluice_requests_total{class=\"P1\",outcome=\"ok\"} 1"), std::string::npos);
  EXPECT_NE(text.find("sluice_time_to_first_token_seconds_count{class=\"P1\"} 1"), std::string::npos);
  for (const StageStamp& s : r->trace().stamps()) {
    EXPECT_LE(s.queued, s.started);
    EXPECT_LE(s.started, s.finished);
  }
}

const char* kChain = R"(name: chain
runtime: {chain_stages: CHAIN}
sources: [{name: api, kind: http}]
nodes: [{name: a, kind: mark}, {name: b, kind: mark}, {name: c, kind: answer_marks}]
edges: [{from: api, to: a}, {from: a, to: b}, {from: b, to: c}]
)";

std::string chain_yaml(bool chain) {
  std::string y = kChain;
  return y.replace(y.find("CHAIN"), 5, chain ? "true" : "false");
}

TEST(Pipeline, ChainedStagesRunBackToBackEachStampedAndMeasured) {
  Harness h(chain_yaml(true));
  auto [r, sink] = h.make();
  ASSERT_TRUE(h.pipeline->submit("api", r).ok());
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->text(), "a;b;");
  h.pipeline->drain(kNanosPerSecond);
  auto stamps = r->trace().stamps();
  ASSERT_EQ(stamps.size(), 3u);
  for (std::size_t i = 0; i < stamps.size(); ++i) EXPECT_EQ(stamps[i].stage, i);
  // Inside a chain a stage starts the moment its predecessor finishes: no queue.
  EXPECT_EQ(stamps[1].queued, stamps[0].finished);
  EXPECT_EQ(stamps[1].started, stamps[1].queued);
  EXPECT_EQ(stamps[2].started, stamps[1].finished);
  std::string text = h.metrics.exposition();
  for (const char* stage : {"a", "b", "c"}) {
    EXPECT_NE(text.find(std::string("sluice_stage_service_time_seconds_count{stage=\"") + stage + "\"} 1"), std::string::npos)
        << stage;
  }
  EXPECT_NE(text.find("sluice_queue_depth{class=\"P1\"} 0"), std::string::npos);
}

TEST(Pipeline, UnchainedStagesGiveTheSameAnswers) {
  for (bool chain : {true, false}) {
    Harness h(chain_yaml(chain));
    std::vector<std::pair<RequestPtr, std::shared_ptr<RecordingSink>>> made;
    for (int i = 0; i < 200; ++i) {
      made.push_back(h.make());
      ASSERT_TRUE(h.pipeline->submit("api", made.back().first).ok());
    }
    for (auto& [r, sink] : made) {
      ASSERT_TRUE(sink->wait()) << "chain " << chain;
      EXPECT_EQ(sink->text(), "a;b;");
      EXPECT_EQ(sink->completions, 1);
    }
    h.pipeline->drain(kNanosPerSecond);
    EXPECT_EQ(h.pipeline->in_flight(), 0u);
  }
}

TEST(Pipeline, AFailingStageInsideAChainFailsItsRequestsAndTheChainGoesOn) {
  Harness h(R"(name: f
sources: [{name: api, kind: http}]
nodes: [{name: a, kind: mark}, {name: broken, kind: fail}, {name: after, kind: answer_marks}]
edges: [{from: api, to: a}, {from: a, to: broken}, {from: broken, to: after}]
)");
  auto [r, sink] = h.make();
  h.pipeline->submit("api", r);
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->status.message, "node 'broken' failed: boom");
  EXPECT_EQ(sink->completions, 1);
  h.pipeline->drain(kNanosPerSecond);
  // The stage after the failure saw no active request: stamped by neither it nor its metrics.
  EXPECT_EQ(r->trace().size(), 2u);
}

TEST(Pipeline, LiveListsDropCompletedRequestsAsIntakeGoesOn) {
  Harness h(chain_yaml(true));
  // One at a time: each submit prunes completed envelopes, so the list stays tiny.
  for (int i = 0; i < 500; ++i) {
    auto [r, sink] = h.make();
    ASSERT_TRUE(h.pipeline->submit("api", r).ok());
    ASSERT_TRUE(sink->wait());
  }
  EXPECT_LE(h.pipeline->live_list_entries(), 3u);
  EXPECT_NE(h.metrics.exposition().find("sluice_live_list_entries{pipeline=\"chain\"}"), std::string::npos);
  // A burst: at most about twice the burst stays listed, and further traffic drains it.
  std::vector<std::pair<RequestPtr, std::shared_ptr<RecordingSink>>> burst;
  for (int i = 0; i < 300; ++i) {
    burst.push_back(h.make());
    ASSERT_TRUE(h.pipeline->submit("api", burst.back().first).ok());
  }
  for (auto& [r, sink] : burst) ASSERT_TRUE(sink->wait());
  EXPECT_LE(h.pipeline->live_list_entries(), 300u + 3u);
  for (int i = 0; i < 300; ++i) {
    auto [r, sink] = h.make();
    ASSERT_TRUE(h.pipeline->submit("api", r).ok());
    ASSERT_TRUE(sink->wait());
  }
  EXPECT_LE(h.pipeline->live_list_entries(), 3u);
  h.pipeline->drain(kNanosPerSecond);
  EXPECT_EQ(h.pipeline->live_list_entries(), 0u);
}

}  // namespace
}  // namespace sluice
