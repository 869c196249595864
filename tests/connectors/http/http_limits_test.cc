// Connection limits and lifecycle: idle_timeout, max_connections, drain (stop_accepting)
// and stop, each observed from a real client socket.
#include "tests/connectors/http/http_test_fixture.h"

#include <google/protobuf/duration.pb.h>

namespace sluice::http::testing {
namespace {

using nlohmann::json;

TEST_F(HttpSourceTest, IdleConnectionIsClosedAfterIdleTimeout) {
  start([](HttpSourceConfig& c) { c.mutable_idle_timeout()->set_nanos(50 * 1000 * 1000); });
  TestClient idle(port());
  TestClient partial(port());
  partial.send("GET /healthz HTTP/1.1\r\n");  // a request that never completes is idle too
  EXPECT_TRUE(idle.wait_closed());
  EXPECT_TRUE(partial.wait_closed());
  EXPECT_EQ(metric("sluice_http_idle_closes_total{source=\"web\"}"), 2);
}

TEST_F(HttpSourceTest, ConnectionWithARequestInProgressIsNotIdle) {
  start([](HttpSourceConfig& c) { c.mutable_idle_timeout()->set_nanos(20 * 1000 * 1000); });
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(true)));
  RequestPtr req = intake_.next_request();
  // Outlive several idle periods while the request is in progress: a second, idle
  // connection opened now must be closed first, and ours must still answer.
  TestClient witness(port());
  EXPECT_TRUE(witness.wait_closed());
  EXPECT_FALSE(req->cancelled());
  req->emit_token("still here", now());
  req->complete(Status::Ok(), now());
  EXPECT_EQ(client.read_head().status, 200);
  EXPECT_EQ(json::parse(client.next_event()->data)["choices"][0]["delta"]["content"], "still here");
}

TEST_F(HttpSourceTest, PipeliningClientThatNeverReadsIsBoundedAndClosed) {
  start([](HttpSourceConfig& c) {
    c.set_max_stream_buffer_bytes(4096);
    c.mutable_idle_timeout()->set_nanos(100 * 1000 * 1000);
  });
  TestClient client(port(), /*rcvbuf=*/4096);
  // As many pipelined requests as the socket takes without blocking; none of the answers
  // is read. The server stops answering once 4 KiB are unsent, stops reading once its input
  // backlog is full, and closes the connection when nothing moved for idle_timeout.
  const std::string request = TestClient::get("/v1/models");
  std::size_t sent = 0;
  while (sent < (8u << 20)) {
    ssize_t n = ::send(client.fd(), request.data(), request.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  EXPECT_TRUE(eventually([&] { return source_->server().open_connections() == 0; }));
  EXPECT_EQ(metric("sluice_http_idle_closes_total{source=\"web\"}"), 1);
}

TEST_F(HttpSourceTest, ConnectionsOverMaxConnectionsAreRefusedWith503) {
  start([](HttpSourceConfig& c) { c.set_max_connections(2); });
  TestClient a(port()), b(port());
  a.send(TestClient::get("/healthz"));
  b.send(TestClient::get("/healthz"));
  EXPECT_EQ(a.read_response().status, 200);  // both are accepted and served
  EXPECT_EQ(b.read_response().status, 200);
  TestClient c(port());
  auto r = c.read_response();
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "too_many_connections");
  EXPECT_TRUE(c.wait_closed());
  EXPECT_EQ(metric("sluice_http_refused_connections_total{source=\"web\"}"), 1);
  // Closing one frees a slot.
  a.close();
  ASSERT_TRUE(eventually([&] { return source_->server().open_connections() == 1; }));
  TestClient d(port());
  d.send(TestClient::get("/healthz"));
  EXPECT_EQ(d.read_response().status, 200);
}

TEST_F(HttpSourceTest, StopAcceptingLetsInFlightStreamsFinishAndClosesIdleConnections) {
  start();
  TestClient busy(port());
  TestClient idle(port());
  idle.send(TestClient::get("/healthz"));
  EXPECT_EQ(idle.read_response().status, 200);
  busy.send(TestClient::post("/v1/chat/completions", chat_body(true)));
  RequestPtr req = intake_.next_request();
  req->emit_token("x", now());
  EXPECT_EQ(busy.read_head().status, 200);

  source_->stop_accepting();
  EXPECT_TRUE(idle.wait_closed());
  EXPECT_FALSE(source_->server().accepting());
  TestClient late(port());
  EXPECT_FALSE(late.connected());  // the listening socket is gone

  req->emit_token("y", now());
  req->complete(Status::Ok(), now());
  std::string text;
  std::string last;
  while (auto ev = busy.next_event()) {
    last = ev->data;
    if (last != "[DONE]") text += json::parse(last)["choices"][0]["delta"].value("content", "");
  }
  EXPECT_EQ(text, "xy");
  EXPECT_EQ(last, "[DONE]");
  EXPECT_TRUE(busy.wait_closed());  // closed once its response finished
}

TEST_F(HttpSourceTest, StopCancelsRequestsStillInProgress) {
  start();
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(true)));
  RequestPtr req = intake_.next_request();
  source_->stop();
  EXPECT_TRUE(req->cancelled());
  EXPECT_TRUE(client.wait_closed());
  // Writing after stop is harmless.
  req->emit_token("late", now());
  req->complete(Status::Ok(), now());
}

TEST_F(HttpSourceTest, ConfigErrorsNameTheSourceAndField) {
  HttpSourceConfig c;
  c.set_listen("nowhere");
  try {
    HttpSource s(c, "web", intake_);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "http source 'web': listen: listen address 'nowhere' has no ':port'");
  }
  c.set_listen("127.0.0.1:0");
  c.set_default_priority("P9");
  try {
    HttpSource s(c, "web", intake_);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "http source 'web': default_priority: 'P9' is not a class of this pipeline (classes: P0, P1, P2)");
  }
}

TEST_F(HttpSourceTest, ListeningOnAPortInUseFailsWithTheAddress) {
  start();
  HttpSourceConfig c;
  c.set_listen("127.0.0.1:" + std::to_string(port()));
  HttpSource second(c, "web2", intake_);
  try {
    second.start();
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on 127.0.0.1:" + std::to_string(port())), std::string::npos)
        << e.what();
  }
}

TEST_F(HttpSourceTest, SeveralIoThreadsServeManyConnections) {
  start([](HttpSourceConfig& c) { c.set_io_threads(3); });
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 30; ++i) {
    clients.push_back(std::make_unique<TestClient>(port()));
    clients.back()->send(TestClient::get("/healthz"));
  }
  for (auto& c : clients) EXPECT_EQ(c->read_response().status, 200);
}

}  // namespace
}  // namespace sluice::http::testing
