// SSE streams over loopback: framing parsed event by event as the engine writes them, the
// end of a stream, disconnects cancelling the request, slow clients, 1,000 streams at once.
#include <sys/resource.h>

#include "tests/connectors/http/http_test_fixture.h"

namespace sluice::http::testing {
namespace {

using nlohmann::json;

json event_json(const std::optional<SseEvent>& ev) {
  if (!ev) throw std::runtime_error("stream ended early");
  return json::parse(ev->data);
}

TEST_F(HttpSourceTest, ChatStreamDeliversEachTokenAsItIsWritten) {
  start();
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(true)));
  RequestPtr req = intake_.next_request();
  EXPECT_TRUE(req->input().stream);

  req->emit_token("Hel", now());
  // The head arrives with the first token, and the event is readable before any other
  // token exists: nothing is buffered waiting for more.
  ClientResponse head = client.read_head();
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("content-type"), "text/event-stream");
  EXPECT_EQ(head.header("cache-control"), "no-cache");
  EXPECT_EQ(head.header("x-accel-buffering"), "no");
  EXPECT_EQ(head.header("transfer-encoding"), "chunked");
  EXPECT_EQ(head.header("x-request-id"), req->external_id);
  json first = event_json(client.next_event());
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["id"], req->external_id);
  EXPECT_EQ(first["model"], "sluice");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "Hel");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(client.events_pending());

  const std::vector<std::string> rest = {"lo", ", ", "wor\"ld\n"};
  for (const auto& piece : rest) {
    req->emit_token(piece, now());
    json chunk = event_json(client.next_event());
    EXPECT_FALSE(chunk["choices"][0]["delta"].contains("role"));
    EXPECT_EQ(chunk["choices"][0]["delta"]["content"], piece);
    EXPECT_FALSE(client.events_pending());
  }
  EXPECT_EQ(source_->server().active_streams(), 1u);
  req->usage = Usage{2, 4};
  req->complete(Status::Ok(), now());
  json finish = event_json(client.next_event());
  EXPECT_EQ(finish["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(finish["choices"][0]["delta"].empty());
  auto done = client.next_event();
  ASSERT_TRUE(done);
  EXPECT_EQ(done->data, "[DONE]");
  EXPECT_FALSE(client.next_event());  // the chunked body ended right after [DONE]
  // The connection is reusable after the stream.
  client.send(TestClient::get("/healthz"));
  EXPECT_EQ(client.read_response().status, 200);
  EXPECT_EQ(source_->server().active_streams(), 0u);
}

TEST_F(HttpSourceTest, HeartbeatIsAnSseCommentThatKeepsAQueuedStreamAlive) {
  start();
  TestClient client(port());
  client.send(TestClient::post("/v1/completions", R"({"model":"sluice","prompt":"x","stream":true})"));
  RequestPtr req = intake_.next_request();
  req->emit_event("heartbeat", "{}");  // what the priority router sends while the request waits
  ClientResponse head = client.read_head();
  EXPECT_EQ(head.status, 200);
  auto ping = client.next_event(/*comments=*/true);  // ": ping" is a comment: no event name, no data
  ASSERT_TRUE(ping);
  EXPECT_EQ(ping->event, "");
  EXPECT_EQ(ping->data, "");
  EXPECT_EQ(ping->comment, "ping");
  req->emit_token("a", now());
  EXPECT_EQ(event_json(client.next_event())["choices"][0]["text"], "a");
  req->complete(Status::Ok(), now());
  EXPECT_EQ(event_json(client.next_event())["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(client.next_event()->data, "[DONE]");
}

TEST_F(HttpSourceTest, CompletionStreamWithUsageTimingsAndSideEvents) {
  start();
  TestClient client(port());
  client.send(TestClient::post("/v1/completions",
                               R"({"model":"sluice","prompt":"x","stream":true,"stream_options":{"include_usage":true}})",
                               "X-Sluice-Timings: 1\r\n"));
  RequestPtr req = intake_.next_request();
  // Side information waits for the finish chunk: no SSE event of its own, which stock clients
  // would hand to the caller's loop as a chunk.
  req->emit_event("sources", "{\"ids\":[7]}");
  req->emit_token("a", now());
  ClientResponse head = client.read_head();
  EXPECT_EQ(head.status, 200);
  auto first = client.next_event();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->event, "");
  json chunk = event_json(first);
  EXPECT_EQ(chunk["object"], "text_completion");
  EXPECT_EQ(chunk["choices"][0]["text"], "a");
  req->trace().start(1, now(), now() + 2000);
  req->trace().finish(1, now() + 5000);
  req->usage = Usage{1, 1};
  req->finish_reason = "length";
  req->complete(Status::Ok(), now() + 6000);
  auto finish_event = client.next_event();
  ASSERT_TRUE(finish_event);
  EXPECT_EQ(finish_event->event, "");
  json finish = event_json(finish_event);
  EXPECT_EQ(finish["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(finish["sluice_sources"]["ids"][0], 7);
  EXPECT_EQ(finish["sluice_timings"]["stages"][0]["stage"], "template");
  EXPECT_DOUBLE_EQ(finish["sluice_timings"]["stages"][0]["queue_us"].get<double>(), 2.0);
  json usage = event_json(client.next_event());
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 2);
  EXPECT_EQ(client.next_event()->data, "[DONE]");
  EXPECT_FALSE(client.next_event());
}

TEST_F(HttpSourceTest, StreamWithoutTokensStillHasRoleFinishAndDone) {
  start();
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(true)));
  intake_.next_request()->complete(Status::Ok(), now());
  EXPECT_EQ(client.read_head().status, 200);
  json finish = event_json(client.next_event());
  EXPECT_EQ(finish["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(finish["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(client.next_event()->data, "[DONE]");
}

TEST_F(HttpSourceTest, StreamFailingMidwayEndsWithErrorEventThenDone) {
  start();
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(true)));
  RequestPtr req = intake_.next_request();
  req->emit_token("par", now());
  EXPECT_EQ(client.read_head().status, 200);
  event_json(client.next_event());
  req->complete(Status::Error(StatusCode::kDeadlineExceeded, "deadline passed", AbortCause::kTimeout), now());
  json error = event_json(client.next_event());
  EXPECT_EQ(error["error"]["type"], "timeout_error");
  EXPECT_EQ(error["error"]["message"], "deadline passed");
  EXPECT_EQ(client.next_event()->data, "[DONE]");
}

TEST_F(HttpSourceTest, DisconnectMidStreamCancelsTheRequest) {
  start();
  auto client = std::make_unique<TestClient>(port());
  client->send(TestClient::post("/v1/chat/completions", chat_body(true)));
  RequestPtr req = intake_.next_request();
  req->emit_token("one", now());
  client->read_head();
  event_json(client->next_event());
  EXPECT_FALSE(req->cancelled());
  client.reset();  // the client goes away
  ASSERT_TRUE(eventually([&] { return req->cancelled(); }));
  EXPECT_EQ(req->cancel_cause(), AbortCause::kClientDisconnect);
  // The engine notices at its next step and completes the request; nothing reaches the socket.
  req->emit_token("two", now());
  req->complete(Status::Error(StatusCode::kCancelled, "client went away", AbortCause::kClientDisconnect), now());
  EXPECT_TRUE(eventually([&] { return source_->server().active_streams() == 0 && source_->server().open_connections() == 0; }));
  EXPECT_EQ(metric("sluice_http_client_disconnects_total{source=\"web\"}"), 1);
  EXPECT_EQ(metric("sluice_http_requests_total{source=\"web\",endpoint=\"/v1/chat/completions\",code=\"499\"}"), 1);
}

TEST_F(HttpSourceTest, DisconnectBeforeTheAnswerCancelsANonStreamingRequest) {
  start();
  auto client = std::make_unique<TestClient>(port());
  client->send(TestClient::post("/v1/chat/completions", chat_body(false)));
  RequestPtr req = intake_.next_request();
  client.reset();
  ASSERT_TRUE(eventually([&] { return req->cancelled(); }));
  EXPECT_EQ(req->cancel_cause(), AbortCause::kClientDisconnect);
  req->complete(Status::Ok(), now());  // a late answer is dropped, not written anywhere
}

TEST_F(HttpSourceTest, SlowClientIsDisconnectedAndItsRequestCancelled) {
  start([](HttpSourceConfig& c) { c.set_max_stream_buffer_bytes(4096); });
  TestClient client(port(), /*rcvbuf=*/4096);
  client.send(TestClient::post("/v1/chat/completions", chat_body(true)));
  RequestPtr req = intake_.next_request();
  // The client never reads: once the kernel buffers are full, unsent bytes pile up in the
  // server until they pass max_stream_buffer_bytes.
  const std::string piece(1024, 'x');
  std::size_t written = 0;
  while (!req->cancelled() && written < (256u << 20)) {
    req->emit_token(piece, now());
    written += piece.size();
  }
  ASSERT_TRUE(eventually([&] { return req->cancelled(); }));
  EXPECT_EQ(req->cancel_cause(), AbortCause::kClientDisconnect);
  EXPECT_EQ(metric("sluice_http_slow_client_closes_total{source=\"web\"}"), 1);
  req->complete(Status::Ok(), now());
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kStreams = 200;  // sanitizers make each step slower; the shape of the test is the same
#else
constexpr int kStreams = 1000;
#endif

TEST_F(HttpSourceTest, ThousandConcurrentStreamsAllComplete) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_cur < 2 * kStreams + 64) {
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 2 * kStreams + 64);
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  if (lim.rlim_cur < 2 * kStreams + 64) GTEST_SKIP() << "needs " << 2 * kStreams + 64 << " file descriptors";
  start([](HttpSourceConfig& c) { c.set_max_connections_per_ip(0); });  // every client is 127.0.0.1
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < kStreams; ++i) {
    clients.push_back(std::make_unique<TestClient>(port()));
    ASSERT_TRUE(clients.back()->connected());
    clients.back()->send(TestClient::post("/v1/chat/completions", chat_body(true)));
  }
  std::vector<RequestPtr> requests;
  for (int i = 0; i < kStreams; ++i) requests.push_back(intake_.next_request());
  // All streams are open at once: every one gets its first token before any finishes.
  for (auto& r : requests) r->emit_token("a", now());
  ASSERT_TRUE(eventually([&] { return source_->server().active_streams() == static_cast<std::size_t>(kStreams); }));
  EXPECT_EQ(metric("sluice_http_active_streams{source=\"web\"}"), kStreams);
  for (auto& r : requests) {
    r->emit_token("b", now());
    r->complete(Status::Ok(), now());
  }
  // Each client's request id tells which tokens it must see.
  int completed = 0;
  for (auto& c : clients) {
    ClientResponse head = c->read_head();
    ASSERT_EQ(head.status, 200);
    std::string text;
    std::string last;
    while (auto ev = c->next_event()) {
      last = ev->data;
      if (last == "[DONE]") continue;
      json chunk = json::parse(last);
      text += chunk["choices"][0]["delta"].value("content", "");
    }
    EXPECT_EQ(text, "ab");
    EXPECT_EQ(last, "[DONE]");
    if (text == "ab" && last == "[DONE]") ++completed;
  }
  EXPECT_EQ(completed, kStreams);
  EXPECT_TRUE(eventually([&] { return source_->server().active_streams() == 0; }));
}

}  // namespace
}  // namespace sluice::http::testing
