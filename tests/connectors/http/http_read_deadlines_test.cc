// Read deadlines and the per-address connection limit, from real client sockets: a head
// trickled past header_timeout, a body under body_min_rate, a slowloris attack of 200
// connections, and max_connections_per_ip.
//
// Timing: deadlines are 300 ms and every wait is up to several seconds, so a loaded machine
// makes these tests slower, never wrong. The only time assertions are lower bounds (an answer
// cannot come before its deadline) and "not closed" where no deadline applies.
#include <google/protobuf/duration.pb.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/connectors/http/http_test_fixture.h"

namespace sluice::http::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using SteadyTime = std::chrono::steady_clock;

void set_duration(google::protobuf::Duration* d, int ms) {
  d->set_seconds(ms / 1000);
  d->set_nanos((ms % 1000) * 1000 * 1000);
}

// Sends `prefix` at once, then one byte of `trickle` (repeated) every `every` on its own thread
// until stopped or the server stops taking bytes.
class Trickler {
 public:
  Trickler(TestClient& client, std::string prefix, milliseconds every, char trickle = 'a')
      : client_(client), thread_([this, prefix, every, trickle] {
          if (::send(client_.fd(), prefix.data(), prefix.size(), MSG_NOSIGNAL) < 0) return;
          while (!stop_.load()) {
            std::this_thread::sleep_for(every);
            if (::send(client_.fd(), &trickle, 1, MSG_NOSIGNAL) != 1) return;
          }
        }) {}
  ~Trickler() { stop(); }
  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

 private:
  TestClient& client_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

double elapsed_ms(SteadyTime::time_point since) {
  return std::chrono::duration<double, std::milli>(SteadyTime::now() - since).count();
}

TEST_F(HttpSourceTest, HeadTrickledPastHeaderTimeoutGets408AndClose) {
  start([](HttpSourceConfig& c) { set_duration(c.mutable_header_timeout(), 300); });
  auto opened = SteadyTime::now();
  TestClient slow(port());
  // One byte every 50 ms of a header that never ends: bytes keep moving, so idle_timeout
  // (60 s) never fires; only the head's deadline can end it.
  Trickler trickler(slow, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ", milliseconds(50));
  // Meanwhile another client is served at once.
  EXPECT_EQ(roundtrip(TestClient::get("/healthz")).status, 200);

  ClientResponse r = slow.read_response();
  EXPECT_GE(elapsed_ms(opened), 300);  // the clock started at accept; never early
  EXPECT_EQ(r.status, 408);
  json body = json::parse(r.body);
  EXPECT_EQ(body["error"]["code"], "request_timeout");
  EXPECT_NE(body["error"]["message"].get<std::string>().find("header_timeout (300ms)"), std::string::npos)
      << r.body;
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(slow.wait_closed());
  trickler.stop();
  EXPECT_EQ(metric("sluice_http_read_timeouts_total{source=\"web\",reason=\"header\"}"), 1);
  EXPECT_EQ(metric("sluice_http_requests_total{source=\"web\",endpoint=\"other\",code=\"408\"}"), 1);
  EXPECT_EQ(roundtrip(TestClient::get("/healthz")).status, 200);  // and after
}

TEST_F(HttpSourceTest, ConnectionSilentPastHeaderTimeoutIsClosedWithoutAnAnswer) {
  start([](HttpSourceConfig& c) { set_duration(c.mutable_header_timeout(), 300); });
  TestClient silent(port());
  EXPECT_TRUE(silent.wait_closed());
  EXPECT_EQ(silent.buffered(), "");  // it asked nothing: no 408 to misread as an answer
  EXPECT_EQ(metric("sluice_http_read_timeouts_total{source=\"web\",reason=\"header\"}"), 1);
  EXPECT_EQ(metric("sluice_http_idle_closes_total{source=\"web\"}"), 0);
}

TEST_F(HttpSourceTest, WaitBetweenKeepAliveRequestsIsNotPartOfTheHeaderTimeout) {
  start([](HttpSourceConfig& c) { set_duration(c.mutable_header_timeout(), 300); });
  TestClient client(port());
  client.send(TestClient::get("/healthz"));
  EXPECT_EQ(client.read_response().status, 200);
  // Idle (not reading a head) for twice header_timeout: idle_timeout's business, 60 s here.
  std::this_thread::sleep_for(milliseconds(600));
  client.send(TestClient::get("/healthz"));
  EXPECT_EQ(client.read_response().status, 200);
  EXPECT_EQ(metric("sluice_http_read_timeouts_total{source=\"web\",reason=\"header\"}"), 0);
}

TEST_F(HttpSourceTest, BodyUnderMinRateAfterTheGraceGets408) {
  start([](HttpSourceConfig& c) {
    c.set_body_min_rate(1000);
    set_duration(c.mutable_body_rate_grace(), 300);
  });
  TestClient slow(port());
  auto sent_head = SteadyTime::now();
  // One byte every 10 ms is 100 bytes/s against 1000 required.
  Trickler trickler(slow,
                    "POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                    "Content-Length: 100000\r\n\r\n",
                    milliseconds(10));
  ClientResponse r = slow.read_response();
  EXPECT_GE(elapsed_ms(sent_head), 300);  // not before the grace is over
  EXPECT_EQ(r.status, 408);
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "request_timeout");
  EXPECT_NE(r.body.find("body_min_rate (1000 bytes/s after a body_rate_grace of 300ms)"), std::string::npos) << r.body;
  EXPECT_TRUE(slow.wait_closed());
  trickler.stop();
  EXPECT_EQ(metric("sluice_http_read_timeouts_total{source=\"web\",reason=\"body\"}"), 1);
  EXPECT_EQ(metric("sluice_http_read_timeouts_total{source=\"web\",reason=\"header\"}"), 0);
}

TEST_F(HttpSourceTest, BodySlowButAboveMinRateCompletes) {
  start([](HttpSourceConfig& c) {
    c.set_body_min_rate(1000);
    set_duration(c.mutable_body_rate_grace(), 300);
  });
  const std::string text(5000, 'x');
  const std::string request = TestClient::post(
      "/v1/chat/completions", R"({"model":"sluice","messages":[{"role":"user","content":")" + text + R"("}]})");
  const std::size_t body_at = request.find("\r\n\r\n") + 4;
  TestClient client(port());
  // The head, then 250 bytes every 25 ms: about 10 KB/s for about 0.5 s, longer than the
  // grace, so the body's deadline is re-armed on the way, and 10x the rate required.
  client.send(request.substr(0, body_at));
  for (std::size_t at = body_at; at < request.size(); at += 250) {
    client.send(request.substr(at, 250));
    std::this_thread::sleep_for(milliseconds(25));
  }
  RequestPtr req = intake_.next_request();
  EXPECT_EQ(req->input().messages.at(0).content, text);
  req->emit_token("ok", now());
  req->complete(Status::Ok(), now());
  EXPECT_EQ(client.read_response().status, 200);
  EXPECT_EQ(metric("sluice_http_read_timeouts_total{source=\"web\",reason=\"body\"}"), 0);
}

// 200 connections each trickling a head (a byte per 100 ms per connection): all are ended by
// header_timeout while one honest keep-alive client is served all along.
TEST_F(HttpSourceTest, SlowlorisConnectionsAreAllClosedWhileANormalClientIsServed) {
  constexpr int kSlow = 200;
  start([](HttpSourceConfig& c) {
    set_duration(c.mutable_header_timeout(), 300);
    c.set_max_connections_per_ip(0);  // every attacker is 127.0.0.1; this test is about the deadline
  });
  struct Slow {
    std::unique_ptr<TestClient> client;
    std::string got;
    bool closed = false;
  };
  std::vector<Slow> slow(kSlow);
  for (auto& s : slow) {
    s.client = std::make_unique<TestClient>(port());
    ASSERT_TRUE(s.client->connected());
    s.client->send("GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ");
  }
  TestClient normal(port());
  int served_during_attack = 0;
  int open = kSlow;
  auto give_up = SteadyTime::now() + std::chrono::seconds(20);
  while (open > 0 && SteadyTime::now() < give_up) {
    for (auto& s : slow) {
      if (s.closed) continue;
      const char byte = 'a';
      [[maybe_unused]] ssize_t w = ::send(s.client->fd(), &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      char buf[4096];
      ssize_t n;
      while ((n = ::recv(s.client->fd(), buf, sizeof buf, MSG_DONTWAIT)) > 0) s.got.append(buf, static_cast<std::size_t>(n));
      if (n == 0 || (n < 0 && errno == ECONNRESET)) {
        s.closed = true;
        --open;
        s.client->close();
      }
    }
    normal.send(TestClient::get("/healthz"));
    ASSERT_EQ(normal.read_response().status, 200);
    if (open > 0) ++served_during_attack;
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(open, 0);
  EXPECT_GE(served_during_attack, 1);  // the first round runs before any deadline can
  int answered_408 = 0;
  for (const auto& s : slow) answered_408 += s.got.rfind("HTTP/1.1 408 ", 0) == 0 ? 1 : 0;
  EXPECT_EQ(answered_408, kSlow);
  EXPECT_EQ(metric("sluice_http_read_timeouts_total{source=\"web\",reason=\"header\"}"), kSlow);
  normal.send(TestClient::get("/healthz"));
  EXPECT_EQ(normal.read_response().status, 200);
}

TEST_F(HttpSourceTest, ConnectionsOverMaxConnectionsPerIpAreRefusedWith503) {
  start([](HttpSourceConfig& c) { c.set_max_connections_per_ip(3); });
  TestClient a(port()), b(port()), c(port());
  for (TestClient* t : {&a, &b, &c}) {
    t->send(TestClient::get("/healthz"));
    EXPECT_EQ(t->read_response().status, 200);  // accepted and served
  }
  TestClient d(port());
  ClientResponse r = d.read_response();
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "too_many_connections");
  EXPECT_NE(r.body.find("max_connections_per_ip 3"), std::string::npos) << r.body;
  EXPECT_TRUE(d.wait_closed());
  EXPECT_EQ(metric("sluice_http_per_ip_refused_connections_total{source=\"web\"}"), 1);
  EXPECT_EQ(metric("sluice_http_refused_connections_total{source=\"web\"}"), 0);
  // Closing one frees the address's slot.
  a.close();
  ASSERT_TRUE(eventually([&] { return source_->server().open_connections() == 2; }));
  TestClient e(port());
  e.send(TestClient::get("/healthz"));
  EXPECT_EQ(e.read_response().status, 200);
  EXPECT_EQ(metric("sluice_http_per_ip_refused_connections_total{source=\"web\"}"), 1);
}

}  // namespace
}  // namespace sluice::http::testing
