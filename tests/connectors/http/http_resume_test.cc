// Resumable streams over loopback (stream_journal.h, GET /v1/streams/{id}): event ids, a
// dropped connection resumed from Last-Event-ID with the same text as an uninterrupted
// stream, X-Sluice-Resume keeping generation running (and its limit), the refusals (unknown,
// expired, dropped events, bad ids), and the byte bounds. Also the chat page's route (GET /ui);
// the page itself runs in Chromium in tests/interop/run_ui.sh.
#include "tests/connectors/http/http_test_fixture.h"

namespace sluice::http::testing {
namespace {

using nlohmann::json;

constexpr const char* kKeepRunning = "X-Sluice-Resume: 30s\r\n";

// The text of a chat chunk's delta ("" for a chunk without content).
std::string delta_text(const SseEvent& ev) {
  json j = json::parse(ev.data);
  const json& delta = j["choices"][0]["delta"];
  return delta.contains("content") && delta["content"].is_string() ? delta["content"].get<std::string>() : "";
}

struct Read {
  std::string text;
  std::vector<std::string> ids;
  bool done = false;  // [DONE] arrived
};

// Reads `n` events (or to the end when n < 0), collecting their text and ids.
Read read_events(TestClient& client, int n) {
  Read r;
  for (int i = 0; n < 0 || i < n; ++i) {
    auto ev = client.next_event();
    if (!ev) break;
    r.ids.push_back(ev->id);
    if (ev->data == "[DONE]") {
      r.done = true;
      break;
    }
    r.text += delta_text(*ev);
  }
  return r;
}

class HttpResumeTest : public HttpSourceTest {
 protected:
  // A fresh connection resuming `id` after `last` (nullopt: no Last-Event-ID).
  std::unique_ptr<TestClient> resume(const std::string& id, std::optional<int> last) {
    auto client = std::make_unique<TestClient>(port());
    client->send(TestClient::get("/v1/streams/" + id,
                                 last ? "Last-Event-ID: " + std::to_string(*last) + "\r\n" : std::string()));
    return client;
  }
  double resumes(const std::string& result) {
    return metric("sluice_http_stream_resumes_total{source=\"web\",result=\"" + result + "\"}");
  }
};

TEST_F(HttpResumeTest, EveryEventCarriesAnIdAndCommentsDoNot) {
  start();
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(true)));
  RequestPtr req = intake_.next_request();
  req->emit_event("heartbeat", "{}");
  req->emit_token("a", now());
  req->emit_token("b", now());
  req->complete(Status::Ok(), now());
  EXPECT_EQ(client.read_head().status, 200);
  auto ping = client.next_event(/*comments=*/true);
  ASSERT_TRUE(ping);
  EXPECT_EQ(ping->comment, "ping");
  EXPECT_EQ(ping->id, "");
  Read r = read_events(client, -1);
  EXPECT_EQ(r.text, "ab");
  EXPECT_EQ(r.ids, (std::vector<std::string>{"1", "2", "3", "4"}));  // a, b, the finish chunk, [DONE]
  EXPECT_TRUE(r.done);
}

TEST_F(HttpResumeTest, ADroppedStreamResumesFromLastEventIdWithTheUninterruptedText) {
  start();
  const std::vector<std::string> pieces = {"Once", " upon", " a", " time", ",", " a", " fox", "."};
  // Uninterrupted, for the reference text.
  std::string uninterrupted;
  {
    TestClient client(port());
    client.send(TestClient::post("/v1/chat/completions", chat_body(true)));
    RequestPtr req = intake_.next_request();
    for (const auto& p : pieces) req->emit_token(p, now());
    req->complete(Status::Ok(), now());
    client.read_head();
    uninterrupted = read_events(client, -1).text;
  }
  ASSERT_EQ(uninterrupted, "Once upon a time, a fox.");

  auto client = std::make_unique<TestClient>(port());
  client->send(TestClient::post("/v1/chat/completions", chat_body(true), kKeepRunning));
  RequestPtr req = intake_.next_request();
  for (std::size_t i = 0; i < 3; ++i) req->emit_token(pieces[i], now());
  client->read_head();
  Read first = read_events(*client, 3);
  ASSERT_EQ(first.ids.back(), "3");
  client.reset();  // the connection drops after 3 events
  ASSERT_TRUE(eventually([&] { return metric("sluice_http_client_disconnects_total{source=\"web\"}") == 1; }));
  EXPECT_FALSE(req->cancelled()) << "X-Sluice-Resume keeps generation running without a client";
  for (std::size_t i = 3; i < 6; ++i) req->emit_token(pieces[i], now());  // generated while nobody reads

  auto resumed = resume(req->external_id, 3);
  ClientResponse head = resumed->read_head();
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("content-type"), "text/event-stream");
  EXPECT_EQ(head.header("x-request-id"), req->external_id);
  Read replay = read_events(*resumed, 3);  // the three kept events, ids 4..6
  EXPECT_EQ(replay.ids, (std::vector<std::string>{"4", "5", "6"}));
  for (std::size_t i = 6; i < pieces.size(); ++i) req->emit_token(pieces[i], now());  // live again
  req->complete(Status::Ok(), now());
  Read rest = read_events(*resumed, -1);
  EXPECT_TRUE(rest.done);
  EXPECT_EQ(first.text + replay.text + rest.text, uninterrupted);
  EXPECT_EQ(rest.ids.front(), "7");
  EXPECT_EQ(resumes("resumed"), 1);
  EXPECT_EQ(metric("sluice_http_requests_total{source=\"web\",endpoint=\"/v1/chat/completions\",code=\"200\"}"), 2);
}

TEST_F(HttpResumeTest, AResumedStreamCanDropAndResumeAgainAndAnEndedOneReplaysToItsEnd) {
  start();
  auto client = std::make_unique<TestClient>(port());
  client->send(TestClient::post("/v1/completions", R"({"model":"sluice","prompt":"x","stream":true})", kKeepRunning));
  RequestPtr req = intake_.next_request();
  req->emit_token("1", now());
  client->read_head();
  read_events(*client, 1);
  client.reset();
  ASSERT_TRUE(eventually([&] { return metric("sluice_http_client_disconnects_total{source=\"web\"}") == 1; }));
  req->emit_token("2", now());
  auto second = resume(req->external_id, 1);
  second->read_head();
  auto ev = second->next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->id, "2");
  second.reset();  // drops again
  ASSERT_TRUE(eventually([&] { return metric("sluice_http_client_disconnects_total{source=\"web\"}") == 2; }));
  EXPECT_FALSE(req->cancelled());
  req->emit_token("3", now());
  req->complete(Status::Ok(), now());
  // The stream has ended: a resume without Last-Event-ID replays it all, then ends.
  auto third = resume(req->external_id, std::nullopt);
  EXPECT_EQ(third->read_head().status, 200);
  std::string text;
  std::vector<std::string> ids;
  while (auto e = third->next_event()) {
    ids.push_back(e->id);
    if (e->data == "[DONE]") break;
    text += json::parse(e->data)["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, "123");
  EXPECT_EQ(ids, (std::vector<std::string>{"1", "2", "3", "4", "5"}));
  EXPECT_FALSE(third->next_event()) << "the replay of an ended stream ends";
}

TEST_F(HttpResumeTest, WithoutTheHeaderADisconnectCancelsAndAResumeLearnsWhy) {
  start();
  auto client = std::make_unique<TestClient>(port());
  client->send(TestClient::post("/v1/chat/completions", chat_body(true)));
  RequestPtr req = intake_.next_request();
  req->emit_token("one", now());
  client->read_head();
  read_events(*client, 1);
  client.reset();
  ASSERT_TRUE(eventually([&] { return req->cancelled(); }));  // today's behaviour, unchanged
  req->complete(Status::Error(StatusCode::kCancelled, "client went away", AbortCause::kClientDisconnect), now());
  EXPECT_EQ(metric("sluice_http_requests_total{source=\"web\",endpoint=\"/v1/chat/completions\",code=\"499\"}"), 1);
  auto resumed = resume(req->external_id, 1);
  EXPECT_EQ(resumed->read_head().status, 200);
  auto error = resumed->next_event();
  ASSERT_TRUE(error);
  EXPECT_EQ(error->id, "2");
  json e = json::parse(error->data);
  ASSERT_TRUE(e.contains("error")) << error->data;
  EXPECT_EQ(resumed->next_event()->data, "[DONE]");
}

TEST_F(HttpResumeTest, KeepRunningEndsWhenNoClientCameBackInTime) {
  start();
  auto client = std::make_unique<TestClient>(port());
  client->send(TestClient::post("/v1/chat/completions", chat_body(true), "X-Sluice-Resume: 2s\r\n"));
  RequestPtr req = intake_.next_request();
  req->emit_token("a", now());
  client->read_head();
  read_events(*client, 1);
  client.reset();
  ASSERT_TRUE(eventually([&] { return metric("sluice_http_client_disconnects_total{source=\"web\"}") == 1; }));
  intake_.clock_.advance(kNanosPerSecond);
  req->emit_token("b", now());
  EXPECT_FALSE(req->cancelled());
  intake_.clock_.advance(2 * kNanosPerSecond);
  req->emit_event("heartbeat", "{}");  // a write after keep_running, even a heartbeat, ends it
  EXPECT_TRUE(req->cancelled());
  EXPECT_EQ(req->cancel_cause(), AbortCause::kClientDisconnect);
}

TEST_F(HttpResumeTest, RefusalsNameTheProblem) {
  start([](HttpSourceConfig& c) { c.mutable_resume()->mutable_max_keep_running()->set_seconds(60); });
  ClientResponse r = roundtrip(TestClient::get("/v1/streams/chatcmpl-nope"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(parse_json(r.body)["error"]["code"], "stream_not_found");
  EXPECT_NE(r.body.find("resume.grace"), std::string::npos) << r.body;

  r = roundtrip(TestClient::post("/v1/chat/completions", chat_body(false), kKeepRunning));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(parse_json(r.body)["error"]["param"], "X-Sluice-Resume");
  r = roundtrip(TestClient::post("/v1/chat/completions", chat_body(true), "X-Sluice-Resume: soon\r\n"));
  EXPECT_EQ(r.status, 400);
  r = roundtrip(TestClient::post("/v1/chat/completions", chat_body(true), "X-Sluice-Resume: 61s\r\n"));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("resume.max_keep_running 60s"), std::string::npos) << r.body;

  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(true)));
  RequestPtr req = intake_.next_request();
  req->emit_token("a", now());
  client.read_head();
  r = roundtrip(TestClient::get("/v1/streams/" + req->external_id, "Last-Event-ID: x1\r\n"));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(parse_json(r.body)["error"]["param"], "Last-Event-ID");
  r = roundtrip(TestClient::get("/v1/streams/" + req->external_id, "Last-Event-ID: 7\r\n"));
  EXPECT_EQ(r.status, 400) << "event 7 was never sent";
  r = roundtrip(TestClient::post("/v1/streams/" + req->external_id, "{}"));
  EXPECT_EQ(r.status, 405);
  req->complete(Status::Ok(), now());
  EXPECT_EQ(resumes("bad_request"), 2);
  EXPECT_EQ(resumes("not_found"), 1);
}

TEST_F(HttpResumeTest, AnEndedStreamIsForgottenAfterTheGracePeriod) {
  start([](HttpSourceConfig& c) { c.mutable_resume()->mutable_grace()->set_seconds(10); });
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(true)));
  RequestPtr req = intake_.next_request();
  req->emit_token("a", now());
  req->complete(Status::Ok(), now());
  client.read_head();
  read_events(client, -1);
  intake_.clock_.advance(9 * kNanosPerSecond);
  {
    auto resumed = resume(req->external_id, 3);
    EXPECT_EQ(resumed->read_head().status, 200) << "still kept 9 s after it ended";
  }
  intake_.clock_.advance(2 * kNanosPerSecond);
  EXPECT_EQ(roundtrip(TestClient::get("/v1/streams/" + req->external_id)).status, 404);
  EXPECT_EQ(metric("sluice_http_stream_journals{source=\"web\"}"), 0);
  EXPECT_EQ(metric("sluice_http_stream_journal_bytes{source=\"web\"}"), 0);
}

TEST_F(HttpResumeTest, AStreamOverItsByteBoundDropsItsOldestEvents) {
  start([](HttpSourceConfig& c) { c.mutable_resume()->set_max_stream_bytes(4096); });
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(true)));
  RequestPtr req = intake_.next_request();
  const std::string piece(200, 'x');  // each chunk event is about 400 bytes
  for (int i = 0; i < 40; ++i) req->emit_token(piece, now());
  client.read_head();
  read_events(client, 40);
  ClientResponse gone = roundtrip(TestClient::get("/v1/streams/" + req->external_id, "Last-Event-ID: 1\r\n"));
  EXPECT_EQ(gone.status, 410);
  EXPECT_EQ(parse_json(gone.body)["error"]["code"], "stream_events_dropped");
  EXPECT_NE(gone.body.find("resume.max_stream_bytes"), std::string::npos);
  EXPECT_GE(metric("sluice_http_stream_journal_overflows_total{source=\"web\",bound=\"stream\"}"), 1);
  EXPECT_LE(metric("sluice_http_stream_journal_bytes{source=\"web\"}"), 4096);
  // The recent events are still there.
  auto resumed = resume(req->external_id, 38);
  EXPECT_EQ(resumed->read_head().status, 200);
  EXPECT_EQ(resumed->next_event()->id, "39");
  req->complete(Status::Ok(), now());
}

TEST_F(HttpResumeTest, GraceZeroTurnsResumingOff) {
  start([](HttpSourceConfig& c) { c.mutable_resume()->mutable_grace()->set_seconds(0); });
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(true)));
  RequestPtr req = intake_.next_request();
  req->emit_token("a", now());
  req->complete(Status::Ok(), now());
  client.read_head();
  auto ev = client.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->id, "") << "no ids when nothing is kept";
  EXPECT_EQ(roundtrip(TestClient::get("/v1/streams/" + req->external_id)).status, 404);
  EXPECT_EQ(roundtrip(TestClient::post("/v1/chat/completions", chat_body(true), kKeepRunning)).status, 400);
}

TEST_F(HttpSourceTest, TheChatPageIsOffUnlessTheSourceEnablesIt) {
  start();
  ClientResponse off = roundtrip(TestClient::get("/ui"));
  EXPECT_EQ(off.status, 404);
  EXPECT_NE(off.body.find("ui: true"), std::string::npos) << off.body;
  source_.reset();
  start([](HttpSourceConfig& c) { c.set_ui(true); });
  ClientResponse on = roundtrip(TestClient::get("/ui"));
  EXPECT_EQ(on.status, 200);
  EXPECT_EQ(on.header("content-type"), "text/html; charset=utf-8");
  EXPECT_NE(on.header("content-security-policy").find("connect-src 'self'"), std::string::npos);
  EXPECT_EQ(on.header("x-content-type-options"), "nosniff");
  EXPECT_EQ(on.body.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(on.body.find("/v1/streams/"), std::string::npos) << "the page resumes through the resume endpoint";
  EXPECT_EQ(on.body.find("innerHTML"), std::string::npos) << "model text is set as text only";
  EXPECT_EQ(roundtrip(TestClient::post("/ui", "{}")).status, 405);
}

}  // namespace
}  // namespace sluice::http::testing
