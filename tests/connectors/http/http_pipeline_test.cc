// End to end over loopback: a real Pipeline (spec text -> graph) with the `template` test
// fixture behind an HttpSource built from the spec's `kind: http` source config, as the
// `sluice run` command wires it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/connectors/http/scripted_intake.h"
#include "tests/connectors/http/served_pipeline.h"
#include "tests/connectors/http/test_client.h"

namespace sluice {
void register_basic_nodes(NodeRegistry& registry);
}

namespace sluice::http::testing {
namespace {

using nlohmann::json;

const char* kNodes = R"(nodes:
  - name: answer
    kind: template
    config: {text: "You asked {{input}} and here is the answer", token_interval: %INTERVAL%}
edges:
  - {from: api, to: answer}
)";

std::string spec_with_interval(const std::string& interval) {
  std::string text = loopback_spec_head("e2e") + kNodes;
  text.replace(text.find("%INTERVAL%"), 10, interval);
  return text;
}

struct E2e : ServedPipeline {
  explicit E2e(const std::string& interval) : ServedPipeline(spec_with_interval(interval), register_basic_nodes) {}
};

const std::string kChat = R"({"model":"sluice","messages":[{"role":"user","content":"why"}],"stream":%S})";

std::string chat(bool stream) {
  std::string b = kChat;
  b.replace(b.find("%S"), 2, stream ? "true" : "false");
  return TestClient::post("/v1/chat/completions", b, "X-Sluice-Timings: 1\r\n");
}

TEST(HttpPipeline, JsonAnswerFromTheTemplateFixtureWithTimings) {
  E2e e("0s");
  TestClient client(e.source->port());
  client.send(chat(false));
  auto r = client.read_response();
  ASSERT_EQ(r.status, 200) << r.body;
  json body = json::parse(r.body);
  EXPECT_EQ(body["choices"][0]["message"]["content"], "You asked why and here is the answer");
  json timings = json::parse(r.header("x-sluice-timings"));
  ASSERT_FALSE(timings["stages"].empty());
  bool saw_answer = false;
  for (const auto& s : timings["stages"]) saw_answer = saw_answer || s["stage"] == "answer";
  EXPECT_TRUE(saw_answer) << r.header("x-sluice-timings");
  // The HTTP series live in the pipeline's registry, next to the runtime's.
  client.send(TestClient::get("/metrics"));
  std::string text = client.read_response().body;
  EXPECT_NE(text.find("sluice_http_requests_total{source=\"api\",endpoint=\"/v1/chat/completions\",code=\"200\"} 1"),
            std::string::npos);
  client.send(TestClient::get("/readyz"));
  EXPECT_EQ(client.read_response().status, 200);
}

TEST(HttpPipeline, StreamArrivesWordByWordEndingWithDone) {
  E2e e("1ms");
  TestClient client(e.source->port());
  client.send(chat(true));
  ASSERT_EQ(client.read_head().status, 200);
  std::vector<std::string> pieces;
  std::string last;
  bool saw_timings = false;
  while (auto ev = client.next_event()) {
    last = ev->data;
    if (last == "[DONE]") continue;
    json chunk = json::parse(last);
    if (chunk.contains("sluice_timings")) saw_timings = true;
    if (!chunk["choices"].empty() && chunk["choices"][0]["delta"].contains("content")) {
      pieces.push_back(chunk["choices"][0]["delta"]["content"]);
    }
  }
  EXPECT_EQ(last, "[DONE]");
  EXPECT_TRUE(saw_timings);
  ASSERT_EQ(pieces.size(), 8u);  // one event per word
  EXPECT_EQ(pieces[0], "You");
  EXPECT_EQ(pieces[1], " asked");
}

// A stream is never silent before its first token: each stage it passes is an SSE comment
// (": progress {"stage":"route"}", which clients ignore), and once tokens flow there are no more.
TEST(HttpPipeline, StreamsReportTheStagesTheyPassBeforeTheFirstToken) {
  ServedPipeline served(loopback_spec_head("progress") + R"(nodes:
  - name: route
    kind: passthrough
  - name: answer
    kind: template
    config: {text: "You asked {{input}} and here is the answer", token_interval: 1ms}
edges:
  - {from: api, to: route}
  - {from: route, to: answer}
)",
                        register_basic_nodes);
  TestClient client(served.source->port());
  client.send(chat(true));
  ASSERT_EQ(client.read_head().status, 200);
  std::vector<std::string> comments_before, comments_after;
  bool content = false;
  while (auto ev = client.next_event(/*comments=*/true)) {
    if (!ev->comment.empty()) (content ? comments_after : comments_before).push_back(ev->comment);
    if (!ev->data.empty() && ev->data != "[DONE]" && json::parse(ev->data)["choices"].size() > 0 &&
        json::parse(ev->data)["choices"][0]["delta"].contains("content")) {
      content = true;
    }
  }
  ASSERT_TRUE(content);
  ASSERT_FALSE(comments_before.empty());
  EXPECT_EQ(comments_before.front(), "progress {\"stage\":\"route\"}");
  EXPECT_TRUE(comments_after.empty()) << comments_after.front();
  // A JSON answer carries none.
  TestClient second(served.source->port());
  second.send(chat(false));
  auto r = second.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body.find("progress"), std::string::npos) << r.body;
}

TEST(HttpPipeline, StreamProgressCanBeSwitchedOff) {
  std::string spec = loopback_spec_head("quiet") + R"(nodes:
  - name: route
    kind: passthrough
  - name: answer
    kind: template
    config: {text: "You asked {{input}}"}
edges:
  - {from: api, to: route}
  - {from: route, to: answer}
)";
  spec.replace(spec.find("default_priority: P0}"), 21, "default_priority: P0, stream_progress: false}");
  ServedPipeline served(spec, register_basic_nodes);
  TestClient client(served.source->port());
  client.send(chat(true));
  ASSERT_EQ(client.read_head().status, 200);
  while (auto ev = client.next_event(/*comments=*/true)) EXPECT_EQ(ev->comment, "") << "no progress when switched off";
}

TEST(HttpPipeline, DisconnectMidStreamCancelsThePipelineRequest) {
  E2e e("50ms");
  auto client = std::make_unique<TestClient>(e.source->port());
  client->send(chat(true));
  ASSERT_EQ(client->read_head().status, 200);
  ASSERT_TRUE(client->next_event());
  client.reset();
  // The template node stops at its next token and the pipeline completes the request.
  EXPECT_TRUE(eventually([&] { return e.pipeline->in_flight() == 0; }));
  std::string text = e.metrics.exposition();
  EXPECT_NE(text.find("sluice_http_client_disconnects_total{source=\"api\"} 1"), std::string::npos);
}

TEST(HttpPipeline, DrainAnswers503ToNewRequests) {
  E2e e("0s");
  TestClient client(e.source->port());
  client.send(TestClient::get("/healthz"));
  ASSERT_EQ(client.read_response().status, 200);
  e.pipeline->drain();
  client.send(chat(false));
  EXPECT_EQ(client.read_response().status, 503);
}

}  // namespace
}  // namespace sluice::http::testing
