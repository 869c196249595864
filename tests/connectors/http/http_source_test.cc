// HttpSource over loopback: the OpenAI endpoints (JSON and SSE), the operational endpoints,
// request fields reaching the sluice::Request, every error status with its body, keep-alive
// and pipelining.
#include "graph/external_ids.h"
#include "tests/connectors/http/http_test_fixture.h"

namespace sluice::http::testing {
namespace {

using nlohmann::json;

TEST_F(HttpSourceTest, HealthzAndModels) {
  start();
  auto r = roundtrip(TestClient::get("/healthz"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(parse_json(r.body)["status"], "ok");
  r = roundtrip(TestClient::get("/v1/models"));
  EXPECT_EQ(r.status, 200);
  json models = parse_json(r.body);
  ASSERT_EQ(models["data"].size(), 2u);
  EXPECT_EQ(models["data"][1]["id"], "tiny");
}

TEST_F(HttpSourceTest, ReadyzFollowsPipelineReadinessAndDrain) {
  start();
  auto r = roundtrip(TestClient::get("/readyz"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(parse_json(r.body)["status"], "ready");
  EXPECT_TRUE(parse_json(r.body)["admission"].is_object());  // shedding level etc. when a router is configured
  intake_.ready_ = false;
  r = roundtrip(TestClient::get("/readyz"));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(parse_json(r.body)["pipeline_ready"], false);
  intake_.ready_ = true;
  intake_.draining_ = true;
  r = roundtrip(TestClient::get("/readyz"));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(parse_json(r.body)["draining"], true);
}

TEST_F(HttpSourceTest, MetricsExposeHttpSeriesInPrometheusFormat) {
  start();
  roundtrip(TestClient::get("/healthz"));
  roundtrip(TestClient::get("/nope"));
  auto r = roundtrip(TestClient::get("/metrics"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(r.body.find("sluice_http_requests_total{source=\"web\",endpoint=\"/healthz\",code=\"200\"} 1"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("sluice_http_requests_total{source=\"web\",endpoint=\"other\",code=\"404\"} 1"),
            std::string::npos);
  EXPECT_NE(r.body.find("# TYPE sluice_http_open_connections gauge"), std::string::npos);
  EXPECT_NE(r.body.find("sluice_http_active_streams{source=\"web\"} 0"), std::string::npos);
}

TEST_F(HttpSourceTest, ChatCompletionAsOneJsonResponse) {
  start();
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(false)));
  RequestPtr req = intake_.next_request();
  EXPECT_EQ(intake_.last_source(), "web");
  EXPECT_EQ(req->input().kind, RequestInput::Kind::kChat);
  ASSERT_EQ(req->input().messages.size(), 1u);
  EXPECT_EQ(req->input().messages[0].content, "hi");
  EXPECT_EQ(req->priority, 1);  // default_priority P1
  EXPECT_EQ(req->arrival, now());
  EXPECT_EQ(req->deadline, kNoDeadline);  // left for the pipeline's default
  req->emit_token("Hello", now());
  req->emit_token(" world", now());
  req->usage = Usage{3, 2};
  req->complete(Status::Ok(), now());
  auto r = client.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type"), "application/json");
  EXPECT_EQ(r.header("x-request-id"), req->external_id);
  json body = parse_json(r.body);
  EXPECT_EQ(body["id"], external_request_id("chatcmpl", req->id()));
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["model"], "sluice");
  EXPECT_TRUE(body["created"].is_number_integer());
  EXPECT_EQ(body["choices"][0]["index"], 0);
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "Hello world");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(body["usage"]["completion_tokens"], 2);
  EXPECT_EQ(body["usage"]["total_tokens"], 5);
}

TEST_F(HttpSourceTest, CompletionCarriesSamplingFieldsAndText) {
  start();
  TestClient client(port());
  client.send(TestClient::post(
      "/v1/completions",
      R"({"model":"tiny","prompt":["Once"],"max_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.05,)"
      R"("seed":42,"stop":["\n","END"],"presence_penalty":0.5,"frequency_penalty":-0.5,"repetition_penalty":1.1,)"
      R"("user":"ignored","logprobs":null})"));
  RequestPtr req = intake_.next_request();
  const RequestInput& in = req->input();
  EXPECT_EQ(in.kind, RequestInput::Kind::kCompletion);
  EXPECT_EQ(in.model, "tiny");
  EXPECT_EQ(in.prompt, "Once");
  EXPECT_EQ(in.max_tokens, 7);
  EXPECT_FLOAT_EQ(in.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(in.sampling.top_p, 0.9f);
  EXPECT_EQ(in.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(in.sampling.min_p, 0.05f);
  EXPECT_EQ(in.sampling.seed, 42u);
  EXPECT_EQ(in.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_FLOAT_EQ(in.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(in.sampling.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(in.sampling.repetition_penalty, 1.1f);
  req->emit_token(" upon", now());
  req->finish_reason = "length";
  req->complete(Status::Ok(), now());
  json body = parse_json(client.read_response().body);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], " upon");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
}

TEST_F(HttpSourceTest, StopAsStringAndMaxCompletionTokens) {
  start();
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(false, R"(,"stop":"###","max_completion_tokens":5)")));
  RequestPtr req = intake_.next_request();
  EXPECT_EQ(req->input().stop, (std::vector<std::string>{"###"}));
  EXPECT_EQ(req->input().max_tokens, 5);
  req->complete(Status::Ok(), now());
  EXPECT_EQ(client.read_response().status, 200);
}

TEST_F(HttpSourceTest, HeadersSetPriorityDeadlineTraceparentAndTimings) {
  start();
  TestClient client(port());
  const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  client.send(TestClient::post("/v1/chat/completions", chat_body(false),
                               "X-Priority: P2\r\nX-Request-Timeout: 250ms\r\ntraceparent: " + tp +
                                   "\r\nX-Sluice-Timings: 1\r\n"));
  RequestPtr req = intake_.next_request();
  EXPECT_EQ(req->priority, 2);
  EXPECT_EQ(req->deadline, req->arrival + 250 * kNanosPerMilli);
  EXPECT_EQ(req->traceparent, tp);
  EXPECT_TRUE(req->want_timings);
  req->trace().start(0, now(), now() + 1000);
  req->trace().finish(0, now() + 3000);
  req->trace().start(1, now() + 3000, now() + 5000);
  req->trace().finish(1, now() + 9000);
  req->trace().start(2, now() + 9000, now() + 9500);  // the stage completing the request: no end stamp yet
  req->complete(Status::Ok(), now() + 10'000);
  auto r = client.read_response();
  ASSERT_EQ(r.status, 200);
  json timings = parse_json(r.header("x-sluice-timings"));
  EXPECT_EQ(timings["id"], req->external_id);
  ASSERT_EQ(timings["stages"].size(), 3u);
  EXPECT_DOUBLE_EQ(timings["stages"][2]["service_us"].get<double>(), 0.5) << "ends at completion";
  EXPECT_EQ(timings["stages"][0]["stage"], "admit");
  EXPECT_DOUBLE_EQ(timings["stages"][0]["queue_us"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(timings["stages"][0]["service_us"].get<double>(), 2.0);
  EXPECT_EQ(timings["stages"][1]["stage"], "template");
  EXPECT_DOUBLE_EQ(timings["stages"][1]["service_us"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(timings["total_us"].get<double>(), 10.0);
}

TEST_F(HttpSourceTest, MalformedTraceparentIsDropped) {
  start();
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(false), "traceparent: 00-zz-1\r\n"));
  RequestPtr req = intake_.next_request();
  EXPECT_EQ(req->traceparent, "");
  req->complete(Status::Ok(), now());
  client.read_response();
}

TEST_F(HttpSourceTest, SideEventsOfANonStreamingAnswerAreExtraFields) {
  start();
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(false)));
  RequestPtr req = intake_.next_request();
  req->emit_event("sources", R"({"ids":[1,2]})");
  req->complete(Status::Ok(), now());
  json body = parse_json(client.read_response().body);
  EXPECT_EQ(body["sluice_sources"]["ids"][1], 2);
  EXPECT_TRUE(body["choices"][0].contains("logprobs") && body["choices"][0]["logprobs"].is_null());
}

// ---- errors: status, OpenAI-shaped body, and the field or place named ----

struct ErrorCase {
  const char* name;
  std::string request;
  int status;
  const char* param;        // expected error.param, "" for null
  const char* message_part;
};

class HttpSourceErrors : public HttpSourceTest, public ::testing::WithParamInterface<ErrorCase> {};

std::string chat(const std::string& body, const std::string& headers = "") {
  return TestClient::post("/v1/chat/completions", body, headers);
}

TEST_P(HttpSourceErrors, AnswersOpenAiShapedError) {
  start();
  const ErrorCase& c = GetParam();
  auto r = roundtrip(c.request);
  EXPECT_EQ(r.status, c.status);
  EXPECT_EQ(r.header("content-type"), "application/json");
  json body = parse_json(r.body);
  ASSERT_TRUE(body["error"].is_object()) << r.body;
  EXPECT_TRUE(body["error"]["message"].is_string());
  EXPECT_TRUE(body["error"]["type"].is_string());
  EXPECT_TRUE(body["error"].contains("code"));
  if (std::string(c.param).empty()) {
    EXPECT_TRUE(body["error"]["param"].is_null()) << r.body;
  } else {
    EXPECT_EQ(body["error"]["param"], c.param) << r.body;
  }
  EXPECT_NE(body["error"]["message"].get<std::string>().find(c.message_part), std::string::npos) << r.body;
}

INSTANTIATE_TEST_SUITE_P(
    All, HttpSourceErrors,
    ::testing::Values(
        ErrorCase{"MalformedJson", chat(R"({"model":"sluice",)"), 400, "", "line 1, column 19"},
        ErrorCase{"NotAnObject", chat("[1]"), 400, "", "must be a JSON object"},
        // A number beyond a double used to abort the process (nlohmann's out_of_range escaped).
        ErrorCase{"NumberOverflowInUnknownField", chat(R"({"model":"sluice","zz":1e400})"), 400, "zz",
                  "'zz' is out of range: number overflow"},
        ErrorCase{"TemperatureOverflow",
                  chat(R"({"model":"sluice","messages":[{"role":"user","content":"x"}],"temperature":1e400})"), 400,
                  "temperature", "number overflow parsing '1e400'"},
        ErrorCase{"NestedNumberOverflow",
                  chat(R"({"model":"sluice","messages":[{"role":"user","content":"x"},{"role":"user","w":[1,-2e999]}]})"),
                  400, "messages[1].w[1]", "out of range"},
        ErrorCase{"TopLevelNumberOverflow", chat("1e400"), 400, "", "out of range"},
        ErrorCase{"TooDeep", chat(std::string(100, '[') + std::string(100, ']')), 400, "", "nests deeper"},
        // The parser reads a NUL as the end of the input: without the check the request would be
        // answered as if the bytes after it were not there.
        ErrorCase{"NulAfterTheBody",
                  chat(std::string(R"({"model":"sluice","messages":[{"role":"user","content":"x"}]})") + std::string(1, '\0') + "junk"),
                  400, "", "a NUL byte at byte 61"},
        ErrorCase{"MissingModel", chat(R"({"messages":[]})"), 400, "model", "'model' is required"},
        ErrorCase{"ModelNotString", chat(R"({"model":7,"messages":[]})"), 400, "model", "must be a string, got an integer"},
        ErrorCase{"MissingMessages", chat(R"({"model":"sluice"})"), 400, "messages", "'messages' is required"},
        ErrorCase{"MessagesNotArray", chat(R"({"model":"sluice","messages":"hi"})"), 400, "messages", "an array"},
        ErrorCase{"EmptyMessages", chat(R"({"model":"sluice","messages":[]})"), 400, "messages", "must not be empty"},
        ErrorCase{"BadRole", chat(R"({"model":"sluice","messages":[{"role":"king","content":"x"}]})"), 400,
                  "messages[0].role", "got 'king'"},
        ErrorCase{"ContentWrongType", chat(R"({"model":"sluice","messages":[{"role":"user","content":5}]})"), 400,
                  "messages[0].content", "got an integer"},
        ErrorCase{"ImagePart",
                  chat(R"({"model":"sluice","messages":[{"role":"user","content":[{"type":"image_url"}]}]})"), 400,
                  "messages[0].content[0].type", "type 'text'"},
        ErrorCase{"TemperatureString", chat(R"({"model":"sluice","messages":[{"role":"user","content":"x"}],"temperature":"hot"})"),
                  400, "temperature", "must be a number, got a string"},
        ErrorCase{"TemperatureRange", chat(R"({"model":"sluice","messages":[{"role":"user","content":"x"}],"temperature":3})"),
                  400, "temperature", "between 0 and 2"},
        ErrorCase{"MaxTokensFloat", chat(R"({"model":"sluice","messages":[{"role":"user","content":"x"}],"max_tokens":1.5})"),
                  400, "max_tokens", "must be an integer"},
        ErrorCase{"StreamNotBool", chat(R"({"model":"sluice","messages":[{"role":"user","content":"x"}],"stream":"yes"})"),
                  400, "stream", "a boolean"},
        ErrorCase{"StopWrongType", chat(R"({"model":"sluice","messages":[{"role":"user","content":"x"}],"stop":[1]})"),
                  400, "stop[0]", "a string"},
        ErrorCase{"NotOne", chat(R"({"model":"sluice","messages":[{"role":"user","content":"x"}],"n":2})"), 400, "n",
                  "'n' must be 1"},
        ErrorCase{"PromptMissing", TestClient::post("/v1/completions", R"({"model":"sluice"})"), 400, "prompt",
                  "'prompt' is required"},
        ErrorCase{"UnknownModel", chat(R"({"model":"gpt-9","messages":[{"role":"user","content":"x"}]})"), 404, "model",
                  "'gpt-9' does not exist"},
        ErrorCase{"UnknownPriority", chat(R"({"model":"sluice","messages":[{"role":"user","content":"x"}]})", "X-Priority: P7\r\n"),
                  400, "X-Priority", "P0, P1, P2"},
        ErrorCase{"BadTimeout", chat(R"({"model":"sluice","messages":[{"role":"user","content":"x"}]})", "X-Request-Timeout: soon\r\n"),
                  400, "X-Request-Timeout", "'soon'"},
        // Below a nanosecond: was read as 0, no deadline at all (found reading parse_timeout_header
        // for the fuzz targets' checks).
        ErrorCase{"TimeoutBelowANanosecond",
                  chat(R"({"model":"sluice","messages":[{"role":"user","content":"x"}]})", "X-Request-Timeout: 1e-300\r\n"),
                  400, "X-Request-Timeout", "'1e-300'"},
        ErrorCase{"UnknownPath", TestClient::get("/v2/things"), 404, "", "no route for GET /v2/things"},
        ErrorCase{"GetOnCompletions", TestClient::get("/v1/chat/completions"), 405, "", "use POST"},
        ErrorCase{"PostOnHealthz", TestClient::post("/healthz", "{}"), 405, "", "use GET"},
        ErrorCase{"BodyTooLarge", "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n", 413, "",
                  "max_body_bytes"},
        ErrorCase{"HeadersTooLarge", "GET /healthz HTTP/1.1\r\nX-Big: " + std::string(20000, 'x') + "\r\n\r\n", 431, "",
                  "max_header_bytes"},
        ErrorCase{"ChunkedBody", "POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411, "",
                  "Content-Length"},
        ErrorCase{"MalformedRequestLine", "HELLO\r\n\r\n", 400, "", "request line"},
        // Error messages quote what the client sent; bytes that are not UTF-8 become U+FFFD
        // instead of making the body invalid JSON (found by http_parser_fuzz and openai_body_fuzz).
        ErrorCase{"PathNotUtf8", "POST /v1/document\x84 HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 404, "",
                  "no route for POST /v1/document\xEF\xBF\xBD"},
        ErrorCase{"JsonBodyNotUtf8", chat("{\"model\":\"sluice\",\"\x8c\x8c\":1}"), 400, "",
                  "ill-formed UTF-8 byte; last read: '\"\xEF\xBF\xBD'"},
        ErrorCase{"PriorityNotUtf8", chat(R"({"model":"sluice","messages":[{"role":"user","content":"x"}]})", "X-Priority: P\xe9\r\n"),
                  400, "X-Priority", "'P\xEF\xBF\xBD'"},
        ErrorCase{"HeaderNameNotUtf8", "GET /healthz HTTP/1.1\r\nX-\xff\xfe: 1\r\n\r\n", 400, "",
                  "malformed header name 'X-\xEF\xBF\xBD\xEF\xBF\xBD'"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(HttpSourceTest, MethodNotAllowedSaysWhichIsAllowed) {
  start();
  auto r = roundtrip(TestClient::get("/v1/completions"));
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.header("allow"), "POST");
  r = roundtrip("DELETE /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.header("allow"), "GET");
}

TEST_F(HttpSourceTest, BodyTooLargeIsAnsweredBeforeTheBodyIsSent) {
  start([](HttpSourceConfig& c) { c.set_max_body_bytes(4096); });
  TestClient client(port());
  // Only the head: the 413 must come without waiting for the 5000 body bytes.
  client.send("POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 5000\r\n\r\n");
  auto r = client.read_response();
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(parse_json(r.body)["error"]["code"], "request_too_large");
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(client.wait_closed());
}

TEST_F(HttpSourceTest, BodyTooLargeAnswerSurvivesTheClientSendingTheBodyAnyway) {
  start([](HttpSourceConfig& c) { c.set_max_body_bytes(4096); });
  TestClient client(port());
  // Head and a 200 KB body in one go: the server answers after the head, then must read and
  // discard the rest instead of resetting the connection (a reset can destroy the answer).
  client.send("POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 200000\r\n\r\n" + std::string(200000, 'x'));
  auto r = client.read_response();
  EXPECT_EQ(r.status, 413);
  EXPECT_TRUE(client.wait_closed());
}

TEST_F(HttpSourceTest, OverloadedAnswers429WithRetryAfterRoundedUp) {
  start();
  Status shed = Status::Error(StatusCode::kOverloaded, "class P1 is over its queue limit", AbortCause::kShed);
  shed.retry_after_seconds = 2.2;
  intake_.reject_with(shed);
  auto r = roundtrip(chat(chat_body(false)));
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.header("retry-after"), "3");
  json body = parse_json(r.body);
  EXPECT_EQ(body["error"]["type"], "rate_limit_error");
  EXPECT_EQ(body["error"]["message"], "class P1 is over its queue limit");
  shed.retry_after_seconds = 0.01;
  intake_.reject_with(shed);
  r = roundtrip(chat(chat_body(true)));  // a stream refused at admission gets the status, not a 200
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.header("retry-after"), "1");
}

// A bug below the handlers (here: the intake throws) ends that one request with a 500 that
// carries a reference, counted; the server goes on serving the next request.
TEST_F(HttpSourceTest, AnExceptionInAHandlerAnswers500AndTheServerGoesOn) {
  start();
  intake_.throw_on_submit("injected failure");
  auto r = roundtrip(chat(chat_body(false)));
  EXPECT_EQ(r.status, 500);
  json body = parse_json(r.body);
  EXPECT_EQ(body["error"]["code"], "internal_error");
  const std::string reference = r.header("x-request-id");
  EXPECT_EQ(reference.rfind("err-", 0), 0u) << reference;
  EXPECT_NE(body["error"]["message"].get<std::string>().find(reference), std::string::npos) << r.body;
  EXPECT_EQ(metric("sluice_http_handler_exceptions_total{source=\"web\"}"), 1);
  intake_.throw_on_submit(std::nullopt);
  TestClient client(port());
  client.send(chat(chat_body(false)));
  RequestPtr req = intake_.next_request();
  req->complete(Status::Ok(), now());
  EXPECT_EQ(client.read_response().status, 200);
}

TEST_F(HttpSourceTest, DrainingAnswers503) {
  start();
  intake_.draining_ = true;
  auto r = roundtrip(chat(chat_body(false)));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(parse_json(r.body)["error"]["code"], "draining");
}

TEST_F(HttpSourceTest, DeadlineAnswers504AndFailuresAnswer500) {
  start();
  TestClient client(port());
  client.send(chat(chat_body(false)));
  RequestPtr req = intake_.next_request();
  req->complete(Status::Error(StatusCode::kDeadlineExceeded, "deadline passed in stage 'template'", AbortCause::kTimeout),
                now());
  auto r = client.read_response();
  EXPECT_EQ(r.status, 504);
  EXPECT_EQ(parse_json(r.body)["error"]["type"], "timeout_error");

  client.send(chat(chat_body(false)));
  req = intake_.next_request();
  req->complete(Status::Error(StatusCode::kInternal, "node 'template' failed: boom"), now());
  r = client.read_response();
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(parse_json(r.body)["error"]["message"], "node 'template' failed: boom");
}

// ---- connection handling ----

TEST_F(HttpSourceTest, KeepAliveServesSequentialRequestsOnOneConnection) {
  start();
  TestClient client(port());
  for (int i = 0; i < 3; ++i) {
    client.send(chat(chat_body(false)));
    RequestPtr req = intake_.next_request();
    req->emit_token("n" + std::to_string(i), now());
    req->complete(Status::Ok(), now());
    auto r = client.read_response();
    EXPECT_EQ(parse_json(r.body)["choices"][0]["message"]["content"], "n" + std::to_string(i));
  }
  EXPECT_EQ(source_->server().open_connections(), 1u);
}

TEST_F(HttpSourceTest, PipelinedRequestsAreAnsweredInOrder) {
  start();
  TestClient client(port());
  // A slow request first, then two quick ones, in one write.
  client.send(chat(chat_body(false)) + TestClient::get("/healthz") + TestClient::get("/v1/models"));
  RequestPtr req = intake_.next_request();
  req->emit_token("first", now());
  req->complete(Status::Ok(), now());
  auto r1 = client.read_response();
  auto r2 = client.read_response();
  auto r3 = client.read_response();
  EXPECT_EQ(parse_json(r1.body)["choices"][0]["message"]["content"], "first");
  EXPECT_EQ(parse_json(r2.body)["status"], "ok");
  EXPECT_EQ(parse_json(r3.body)["object"], "list");
}

TEST_F(HttpSourceTest, PipelinedRequestsSplitAtArbitraryBytesStayInOrder) {
  start();
  TestClient client(port());
  std::string all;
  for (int i = 0; i < 300; ++i) all += TestClient::get(i % 2 ? "/healthz" : "/v1/models");
  for (std::size_t off = 0; off < all.size(); off += 7) client.send(all.substr(off, 7));
  for (int i = 0; i < 300; ++i) {
    json body = parse_json(client.read_response().body);
    if (i % 2) EXPECT_EQ(body["status"], "ok") << i;
    else EXPECT_EQ(body["object"], "list") << i;
  }
}

TEST_F(HttpSourceTest, ConnectionCloseIsHonoured) {
  start();
  TestClient client(port());
  client.send("GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
  auto r = client.read_response();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(client.wait_closed());
}

TEST_F(HttpSourceTest, ExpectContinueGets100BeforeTheBody) {
  start();
  TestClient client(port());
  std::string body = chat_body(false);
  client.send("POST /v1/chat/completions HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: " +
              std::to_string(body.size()) + "\r\n\r\n");
  auto interim = client.read_head();
  EXPECT_EQ(interim.status, 100);
  client.send(body);
  RequestPtr req = intake_.next_request();
  req->complete(Status::Ok(), now());
  EXPECT_EQ(client.read_response().status, 200);
}

}  // namespace
}  // namespace sluice::http::testing
