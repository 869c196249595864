// The shipped default pipeline (pipelines/default.yaml) end to end over loopback, with and
// without SLUICE_MODEL: documents posted to /v1/documents, then concurrent streaming questions.
// With the model (../shared/models/stories260K.gguf) every stream gets generated text followed
// by its sources, and the engine batched them; without it the same file answers extractively.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/connectors/http/default_pipeline.h"
#include "tests/support/loopback_receiver.h"

namespace sluice::http::testing {
namespace {

using nlohmann::json;

TEST(DefaultPipeline, WithAModelConcurrentStreamsGetGeneratedCitedAnswers) {
  const std::string model = std::string(SLUICE_SHARED_DIR) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "needs " << model << " (../shared)";
  DefaultPipeline p(model);
  constexpr int kStreams = 8;
  std::vector<DefaultPipeline::Answer> answers(kStreams);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i)
    threads.emplace_back([&, i] { answers[size_t(i)] = p.ask(i % 2 ? "Why do otters hold hands?" : "How does a volcano erupt?"); });
  for (auto& t : threads) t.join();
  for (const auto& a : answers) {
    ASSERT_FALSE(a.text.empty());
    // The sources ride beside the answer; its text is the model's alone (citations: field).
    EXPECT_EQ(a.text.find("Sources:"), std::string::npos) << a.text;
    ASSERT_TRUE(a.sources.is_array()) << a.text;
    ASSERT_FALSE(a.sources.empty());
    EXPECT_EQ(a.sources[0]["n"], 1);
  }
  const std::string m = p.metrics();
  EXPECT_NE(m.find("sluice_engine_generated_tokens_total"), std::string::npos);
  // Evidence of continuous batching: some step ran more than one sequence.
  const auto at = m.find("sluice_engine_step_sequences_bucket{model=");
  ASSERT_NE(at, std::string::npos);
  const auto le1 = m.find("le=\"1\"} ", at);
  const auto count = m.find("sluice_engine_step_sequences_count", at);
  ASSERT_NE(le1, std::string::npos);
  ASSERT_NE(count, std::string::npos);
  const double steps_of_one = std::stod(m.substr(m.find("} ", le1) + 2));
  const double steps = std::stod(m.substr(m.find("} ", count) + 2));
  EXPECT_LT(steps_of_one, steps) << "no step batched two sequences";
}

// A deadline too short for the model to answer ends as an HTTP status, not as a 200 stream of
// tokens that breaks off with an error chunk the SDKs report without a status.
TEST(DefaultPipeline, ADeadlineThatPassesBeforeTheFirstTokenIsAStatus) {
  const std::string model = stories_model();
  if (model.empty()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  // Without progress comments nothing is written before the first token, so the timeout is
  // the response's status. (With them, a stage passed in the microseconds before the deadline
  // has already committed the stream's 200; see the next test.)
  DefaultPipeline p(model, {{"      default_priority: P0", "      default_priority: P0\n      stream_progress: false"}});
  for (const char* timeout : {"0.001ms", "0.01ms"}) {  // past before the model starts: never a race
    TestClient c(p.served->source->port());
    json body{{"model", "sluice"}, {"stream", true}, {"max_tokens", 24}, {"messages", {{{"role", "user"}, {"content", "Why do otters hold hands?"}}}}};
    c.send(TestClient::post("/v1/chat/completions", body.dump(), std::string("X-Request-Timeout: ") + timeout + "\r\n"));
    auto r = c.read_response();
    EXPECT_EQ(r.status, 504) << r.body;
    EXPECT_EQ(json::parse(r.body)["error"]["type"], "timeout_error") << r.body;
  }
}

// With progress comments on (the default) the same request is a timeout either way: a 504, or,
// when a stage finished before the deadline passed, a stream of comments ending in the
// timeout_error event, never a token.
TEST(DefaultPipeline, ADeadlineThatPassesAfterAProgressCommentEndsTheStreamWithTheTimeout) {
  const std::string model = stories_model();
  if (model.empty()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  DefaultPipeline p(model);
  for (const char* timeout : {"0.001ms", "0.01ms", "0.1ms"}) {
    TestClient c(p.served->source->port());
    json body{{"model", "sluice"}, {"stream", true}, {"max_tokens", 24}, {"messages", {{{"role", "user"}, {"content", "Why do otters hold hands?"}}}}};
    c.send(TestClient::post("/v1/chat/completions", body.dump(), std::string("X-Request-Timeout: ") + timeout + "\r\n"));
    auto r = c.read_response();
    if (r.status == 504) {
      EXPECT_EQ(json::parse(r.body)["error"]["type"], "timeout_error") << r.body;
      continue;
    }
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body.find("\"content\""), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("\"type\":\"timeout_error\""), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("data: [DONE]"), std::string::npos) << r.body;
  }
}

// A request whose remaining budget cannot cover generation's expected cost gets the shipped
// `degrade: shrink` (a quarter of its max_tokens) and says so; one with time to spare does not.
// The test gives generate a 30 s budget, which stands in for its expected cost before it has
// measured 8 batches: a 20 s deadline cannot cover it, the default 60 s can. No race: the
// decision compares 30 s with the time left, not a measured time.
TEST(DefaultPipeline, ARequestRunningLateGetsAShorterAnswerAndSaysSo) {
  const std::string model = stories_model();
  if (model.empty()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  DefaultPipeline p(model, {{"    degrade: shrink", "    budget: 30s\n    degrade: shrink"}});
  auto ask = [&](const std::string& question, const std::string& headers) {
    TestClient c(p.served->source->port());
    json body{{"model", "sluice"}, {"max_tokens", 24}, {"messages", {{{"role", "user"}, {"content", question}}}}};
    c.send(TestClient::post("/v1/chat/completions", body.dump(), "X-Sluice-Timings: 1\r\n" + headers));
    return c.read_response();
  };
  auto late = ask("Why do otters hold hands?", "X-Request-Timeout: 20s\r\n");
  ASSERT_EQ(late.status, 200) << late.body;
  EXPECT_EQ(late.header("x-sluice-degraded"), "generate=shrink");
  const json answer = json::parse(late.body);
  EXPECT_LE(answer["usage"]["completion_tokens"].get<int>(), 6) << late.body;  // 24 x 0.25
  bool marked = false;
  const json timings = json::parse(late.header("x-sluice-timings"));  // kept: the loop reads into it
  for (const auto& s : timings["stages"])
    marked = marked || (s["stage"] == "generate" && s.value("degraded", std::string()) == "shrink");
  EXPECT_TRUE(marked) << late.header("x-sluice-timings");

  // Streamed, the same degradation is said in the finish chunk (the headers left before it).
  {
    TestClient c(p.served->source->port());
    json body{{"model", "sluice"}, {"stream", true}, {"max_tokens", 24}, {"messages", {{{"role", "user"}, {"content", "Why do sea otters float?"}}}}};
    c.send(TestClient::post("/v1/chat/completions", body.dump(), "X-Request-Timeout: 20s\r\n"));
    ASSERT_EQ(c.read_head().status, 200);
    json degraded;
    while (auto ev = c.next_event()) {
      if (ev->data == "[DONE]") break;
      const json chunk = json::parse(ev->data);
      if (chunk.contains("sluice_degraded")) degraded = chunk["sluice_degraded"];
    }
    EXPECT_EQ(degraded, (json{{"generate", "shrink"}}));
  }

  auto on_time = ask("How does a volcano erupt?", "");
  ASSERT_EQ(on_time.status, 200) << on_time.body;
  EXPECT_EQ(on_time.header("x-sluice-degraded"), "");
  EXPECT_GT(json::parse(on_time.body)["usage"]["completion_tokens"].get<int>(), 6) << on_time.body;
  const std::string m = p.metrics();
  EXPECT_NE(m.find("sluice_degradations_total{node=\"generate\",action=\"shrink\"} 2"), std::string::npos) << m;
}

// `degrade: skip` on generate switches a late request to the cheaper node behind it: `answer`
// answers extractively from the same passages (no model call), and the response says so.
TEST(DefaultPipeline, ALateRequestSkippingGenerationGetsTheExtractiveAnswer) {
  const std::string model = stories_model();
  if (model.empty()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  DefaultPipeline p(model, {{"    degrade: shrink", "    budget: 30s\n    degrade: skip"}});
  TestClient c(p.served->source->port());
  json body{{"model", "sluice"}, {"max_tokens", 24}, {"messages", {{{"role", "user"}, {"content", "Why do otters hold hands?"}}}}};
  c.send(TestClient::post("/v1/chat/completions", body.dump(), "X-Request-Timeout: 20s\r\n"));
  auto r = c.read_response();
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-sluice-degraded"), "generate=skip");
  const json answer = json::parse(r.body);
  const std::string text = answer["choices"][0]["message"]["content"].get<std::string>();
  EXPECT_NE(text.find("hold hands"), std::string::npos) << text;  // a sentence of the passage itself
  ASSERT_TRUE(answer["sluice_sources"].is_array()) << r.body;
  EXPECT_EQ(answer["sluice_sources"][0]["doc_id"], "otters.md") << r.body;
  const std::string m = p.metrics();
  EXPECT_NE(m.find("sluice_degradations_total{node=\"generate\",action=\"skip\"} 1"), std::string::npos) << m;
  // The model never ran.
  const auto at = m.find("sluice_engine_generated_tokens_total{");
  if (at != std::string::npos) {
    EXPECT_EQ(m.substr(m.find(' ', m.find('}', at)) + 1, 2), "0\n") << m.substr(at, 200);
  }
}

// With tracing on, every response names the request's span in a traceparent header (streamed
// or not), a child of the client's trace; the collector gets the spans (decoded in
// tests/graph/tracing_test.cc and by OpenTelemetry's own code in tests/interop/run_otlp.sh).
TEST(DefaultPipeline, WithTracingOnResponsesNameTheRequestsSpan) {
  sluice::testing::LoopbackReceiver collector;
  DefaultPipeline p("", {{"  endpoint: ${SLUICE_OTLP_ENDPOINT:-}", "  endpoint: " + collector.url("/v1/traces")},
                         {"  sample_ratio: ${SLUICE_TRACE_SAMPLE:-0.01}", "  sample_ratio: 1\n  flush_interval: 10ms"}});
  const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  for (bool stream : {false, true}) {
    TestClient c(p.served->source->port());
    json body{{"model", "sluice"}, {"stream", stream}, {"messages", {{{"role", "user"}, {"content", "Why do otters hold hands?"}}}}};
    c.send(TestClient::post("/v1/chat/completions", body.dump(), "traceparent: 00-" + trace + "-00f067aa0ba902b7-01\r\n"));
    auto r = c.read_response();
    ASSERT_EQ(r.status, 200) << r.body;
    const std::string tp = r.header("traceparent");
    ASSERT_EQ(tp.size(), 55u) << "stream " << stream;
    EXPECT_EQ(tp.substr(3, 32), trace);
    EXPECT_NE(tp.substr(36, 16), "00f067aa0ba902b7") << "the request's own span, not the client's";
    EXPECT_EQ(tp.substr(52), "-01");
  }
  EXPECT_GE(collector.wait_for(1).size(), 1u);
  // Without a traceparent the request starts a trace of its own, sampled at ratio 1.
  TestClient c(p.served->source->port());
  c.send(TestClient::post("/v1/chat/completions", json{{"model", "sluice"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}.dump()));
  auto r = c.read_response();
  EXPECT_EQ(r.header("traceparent").size(), 55u);
}

// Resumable streams on the real engine: a stream whose connection drops after 3 events,
// resumed with Last-Event-ID, reads the same text as an uninterrupted stream of the same
// question (greedy, so both generate the same tokens; the caches are dropped between them, so
// the second is generated too).
TEST(DefaultPipeline, AStreamDroppedAndResumedReadsTheUninterruptedAnswer) {
  const std::string model = stories_model();
  if (model.empty()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  DefaultPipeline p(model);
  const std::uint16_t port = p.served->source->port();
  const std::string body = json{{"model", "sluice"}, {"stream", true}, {"max_tokens", 64}, {"temperature", 0},
                                {"messages", {{{"role", "user"}, {"content", "How does a volcano erupt?"}}}}}
                               .dump();
  auto content = [](const SseEvent& ev) {
    const json chunk = json::parse(ev.data);
    const json& delta = chunk["choices"][0]["delta"];
    return delta.contains("content") ? delta["content"].get<std::string>() : std::string();
  };
  auto read_to_done = [&](TestClient& c, std::string* text) {
    while (auto ev = c.next_event()) {
      if (ev->data == "[DONE]") return true;
      *text += content(*ev);
    }
    return false;
  };

  std::string resumed_text, request_id, last_id;
  {
    TestClient c(port);
    c.send(TestClient::post("/v1/chat/completions", body, "X-Sluice-Resume: 30s\r\n"));
    ClientResponse head = c.read_head();
    ASSERT_EQ(head.status, 200);
    request_id = head.header("x-request-id");
    for (int i = 0; i < 3; ++i) {
      auto ev = c.next_event();
      ASSERT_TRUE(ev);
      ASSERT_FALSE(ev->id.empty()) << "every event of a stream carries an id";
      last_id = ev->id;
      resumed_text += content(*ev);
    }
  }  // the connection drops
  TestClient again(port);
  again.send(TestClient::get("/v1/streams/" + request_id, "Last-Event-ID: " + last_id + "\r\n"));
  ASSERT_EQ(again.read_head().status, 200);
  ASSERT_TRUE(read_to_done(again, &resumed_text));

  // The answer is stored when the request completes, which may be just after [DONE] left.
  const std::string stored = "sluice_cache_entries{pipeline=\"default\",node=\"cache\",tier=\"exact\"} 1";
  for (int i = 0; i < 500 && p.metrics().find(stored) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_NE(p.metrics().find(stored), std::string::npos);
  TestClient drop_caches(port);
  drop_caches.send("DELETE /v1/cache HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(drop_caches.read_response().status, 200);
  std::string uninterrupted;
  TestClient whole(port);
  whole.send(TestClient::post("/v1/chat/completions", body));
  ASSERT_EQ(whole.read_head().status, 200);
  ASSERT_TRUE(read_to_done(whole, &uninterrupted));
  EXPECT_FALSE(uninterrupted.empty());
  EXPECT_EQ(resumed_text, uninterrupted);
  const std::string m = p.metrics();
  EXPECT_NE(m.find("sluice_http_stream_resumes_total{source=\"api\",result=\"resumed\"} 1"), std::string::npos);
  std::istringstream lines(m);
  int hit_series = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("sluice_cache_lookups_total{", 0) != 0 || line.find("result=\"hit\"") == std::string::npos) continue;
    ++hit_series;
    EXPECT_EQ(line.substr(line.rfind(' ') + 1), "0") << "the second answer was generated, not replayed: " << line;
  }
  EXPECT_GT(hit_series, 0) << "the default pipeline's caches report their hits";
}

TEST(DefaultPipeline, WithoutAModelTheSameFileAnswersExtractively) {
  DefaultPipeline p("");
  const DefaultPipeline::Answer a = p.ask("Why do otters hold hands?");
  EXPECT_NE(a.text.find("hold hands"), std::string::npos) << a.text;
  EXPECT_EQ(a.text.find("Sources:"), std::string::npos) << a.text;
  ASSERT_TRUE(a.sources.is_array()) << a.text;
  EXPECT_EQ(a.sources[0]["doc_id"], "otters.md");
  EXPECT_EQ(p.metrics().find("sluice_engine_generated_tokens_total"), std::string::npos);
}

}  // namespace
}  // namespace sluice::http::testing
