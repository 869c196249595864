// The routes and fields stock OpenAI clients and browsers rely on: GET /v1/models and
// /v1/models/{id} with real `created` times, CORS (off by default; preflight and headers for the
// listed origins only), fields Sluice cannot honour refused by name, and request ids unique
// across restarts.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "graph/external_ids.h"
#include "tests/connectors/http/http_test_fixture.h"

namespace sluice::http::testing {
namespace {

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST_F(HttpSourceTest, ModelsAreListedAndRetrievedWithTheirCreationTime) {
  start();
  auto list = parse_json(roundtrip(TestClient::get("/v1/models")).body);
  ASSERT_EQ(list["data"].size(), 2u);
  EXPECT_EQ(list["data"][1]["id"], "tiny");
  const std::int64_t created = list["data"][0]["created"];
  EXPECT_LE(std::abs(created - unix_now()), 60) << "created is when the source started";

  ClientResponse one = roundtrip(TestClient::get("/v1/models/tiny"));
  ASSERT_EQ(one.status, 200) << one.body;
  auto model = parse_json(one.body);
  EXPECT_EQ(model["id"], "tiny");
  EXPECT_EQ(model["object"], "model");
  EXPECT_EQ(model["created"], created);
  EXPECT_EQ(model["owned_by"], "sluice");

  ClientResponse missing = roundtrip(TestClient::get("/v1/models/gpt-9"));
  EXPECT_EQ(missing.status, 404);
  auto error = parse_json(missing.body)["error"];
  EXPECT_EQ(error["code"], "model_not_found");
  EXPECT_EQ(error["param"], "model");
  EXPECT_NE(error["message"].get<std::string>().find("'gpt-9'"), std::string::npos);
}

TEST_F(HttpSourceTest, WithoutCorsConfiguredOptionsIs405AndNoAccessControlHeaders) {
  start();
  ClientResponse pre = roundtrip("OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\n"
                                 "Access-Control-Request-Method: POST\r\n\r\n");
  EXPECT_EQ(pre.status, 405);
  EXPECT_EQ(pre.header("access-control-allow-origin"), "");
  ClientResponse get = roundtrip(TestClient::get("/v1/models", "Origin: https://app.example\r\n"));
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(get.header("access-control-allow-origin"), "");
}

TEST_F(HttpSourceTest, CorsAnswersPreflightsAndMarksResponsesForListedOriginsOnly) {
  start([](HttpSourceConfig& c) {
    c.mutable_cors()->add_allowed_origins("https://app.example");
    c.mutable_cors()->mutable_max_age()->set_seconds(300);
  });
  const std::string preflight = "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: ";
  ClientResponse pre = roundtrip(preflight + "https://app.example\r\nAccess-Control-Request-Method: POST\r\n"
                                             "Access-Control-Request-Headers: authorization, content-type\r\n\r\n");
  EXPECT_EQ(pre.status, 204);
  EXPECT_EQ(pre.header("access-control-allow-origin"), "https://app.example");
  EXPECT_NE(pre.header("access-control-allow-methods").find("POST"), std::string::npos);
  EXPECT_NE(pre.header("access-control-allow-headers").find("Authorization"), std::string::npos);
  EXPECT_NE(pre.header("access-control-allow-headers").find("X-Priority"), std::string::npos);
  EXPECT_EQ(pre.header("access-control-max-age"), "300");
  EXPECT_EQ(pre.header("content-length"), "") << "a 204 has no Content-Length";

  ClientResponse other = roundtrip(preflight + "https://evil.example\r\nAccess-Control-Request-Method: POST\r\n\r\n");
  EXPECT_EQ(other.status, 403);
  EXPECT_EQ(other.header("access-control-allow-origin"), "");
  EXPECT_NE(other.body.find("https://evil.example"), std::string::npos) << other.body;

  // The actual request: the allowed origin's answer (here a streamed one) carries the headers.
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(true), "Origin: https://app.example\r\n"));
  RequestPtr req = intake_.next_request();
  req->emit_token("hi", now());
  ClientResponse head = client.read_head();
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("access-control-allow-origin"), "https://app.example");
  EXPECT_EQ(head.header("vary"), "Origin");
  EXPECT_NE(head.header("access-control-expose-headers").find("X-Request-Id"), std::string::npos);
  req->complete(Status::Ok(), now());

  ClientResponse not_listed = roundtrip(TestClient::get("/v1/models", "Origin: https://evil.example\r\n"));
  EXPECT_EQ(not_listed.status, 200);  // the browser, not the server, withholds it from the page
  EXPECT_EQ(not_listed.header("access-control-allow-origin"), "");
}

TEST_F(HttpSourceTest, CorsWithAStarAllowsAnyOrigin) {
  start([](HttpSourceConfig& c) { c.mutable_cors()->add_allowed_origins("*"); });
  ClientResponse r = roundtrip(TestClient::get("/v1/models", "Origin: https://anything.example\r\n"));
  EXPECT_EQ(r.header("access-control-allow-origin"), "*");
}

// Fields that change what the answer must be are refused by name, not ignored.
TEST_F(HttpSourceTest, StructuredOutputReachesTheRequestAndWhatCannotBeHonouredIs400) {
  start();
  const std::string head = R"({"model":"sluice","messages":[{"role":"user","content":"hi"}],)";
  const std::vector<std::pair<std::string, std::string>> refused = {
      {R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]})", "tool_choice"},
      {R"("functions":[{"name":"f"}]})", "functions"},
      {R"("logprobs":true})", "logprobs"},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","format":"email"}}}})",
       "response_format.json_schema.schema.format"},
  };
  for (const auto& [tail, param] : refused) {
    ClientResponse r = roundtrip(TestClient::post("/v1/chat/completions", head + tail));
    EXPECT_EQ(r.status, 400) << tail;
    auto e = parse_json(r.body)["error"];
    EXPECT_EQ(e["code"], "unsupported") << tail;
    EXPECT_EQ(e["param"], param) << tail;
  }
  ClientResponse bad = roundtrip(TestClient::post("/v1/chat/completions", head + R"("response_format":{"type":"yaml"}})"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(parse_json(bad.body)["error"]["code"], "invalid_value");
  ClientResponse completion_tools = roundtrip(TestClient::post(
      "/v1/completions", R"({"model":"sluice","prompt":"hi","tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"})"));
  EXPECT_EQ(completion_tools.status, 400);
  EXPECT_EQ(parse_json(completion_tools.body)["error"]["param"], "tools");

  // What can be honoured reaches the request with its grammar; a tool call answers as one.
  const std::vector<std::pair<std::string, StructuredOutput::Kind>> accepted = {
      {R"("response_format":{"type":"text"},"tools":[],"logprobs":false,"user":"u1"})", StructuredOutput::Kind::kText},
      {R"("response_format":{"type":"json_object"}})", StructuredOutput::Kind::kJson},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}}})",
       StructuredOutput::Kind::kJson},
      {R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}})",
       StructuredOutput::Kind::kToolCall},
  };
  for (const auto& [tail, kind] : accepted) {
    TestClient client(port());
    client.send(TestClient::post("/v1/chat/completions", head + tail));
    RequestPtr req = intake_.next_request();
    ASSERT_NE(req, nullptr) << tail;
    EXPECT_EQ(req->input().structured.kind, kind) << tail;
    EXPECT_EQ(req->input().structured.grammar != nullptr, kind != StructuredOutput::Kind::kText) << tail;
    if (kind == StructuredOutput::Kind::kToolCall) req->emit_token(R"({"x":1})", now());
    req->complete(Status::Ok(), now());
    ClientResponse r = client.read_response();
    EXPECT_EQ(r.status, 200);
    auto body = parse_json(r.body);
    EXPECT_EQ(body["system_fingerprint"].get<std::string>().rfind("fp_", 0), 0u) << r.body;
    if (kind == StructuredOutput::Kind::kToolCall) {
      EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls") << r.body;
      EXPECT_TRUE(body["choices"][0]["message"]["content"].is_null()) << r.body;
      EXPECT_EQ(body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"], R"({"x":1})") << r.body;
    }
  }
}

// Ids are <kind>-<start time in ms, hex><32 random bits, hex>-<n>: a later process's ids sort
// after an earlier one's, and a restart never reuses an id.
TEST(ExternalIds, CarryTheStartTimeARandomPartAndTheRequestNumber) {
  const std::string id = external_request_id("chatcmpl", 41);
  const std::string& part = process_id_part();
  ASSERT_EQ(part.size(), 19u) << part;
  EXPECT_EQ(id, "chatcmpl-" + part + "-41");
  const long long started_ms = std::stoll(part.substr(0, 11), nullptr, 16);
  const long long now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GT(started_ms, now_ms - 3600 * 1000);
  EXPECT_LE(started_ms, now_ms);
  EXPECT_EQ(external_request_id("chatcmpl", 41), id) << "stable within a process";
}

}  // namespace
}  // namespace sluice::http::testing
