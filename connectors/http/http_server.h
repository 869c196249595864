// HttpServer: an asynchronous HTTP/1.1 server on epoll, with `io_threads` event loops and no
// thread per connection.
//
// Each loop owns its connections: it reads, parses (HttpRequestParser), calls the handler on
// the loop thread, and writes whatever the request's ResponseWriter posts back, in order.
// Keep-alive and pipelining: a connection handles one request at a time; bytes of the next
// ones wait in its buffer (bounded) until the current response has finished, so responses
// leave in request order. All loops share one listening socket (EPOLLEXCLUSIVE).
//
// Limits: max_header_bytes (431) and max_body_bytes (413, before the body is read), chunked
// request bodies (411), idle_timeout (a connection with no request in progress is closed),
// max_connections and max_connections_per_ip (more are answered 503 and closed),
// max_stream_buffer_bytes (a client whose unsent streamed bytes exceed it is disconnected,
// which cancels its request). Read deadlines (read_deadlines.h): a head not complete within
// header_timeout, or a body arriving slower than body_min_rate after body_rate_grace, is
// answered 408 and the connection closed; a connection that has sent nothing of its first
// request by header_timeout is closed without an answer (it asked nothing, and a 408 it did
// not ask for would be read as the answer to the request it may be sending).
//
// The handler must not block: it runs on the loop thread. It answers through the writer
// now or later from any thread. Protocol errors are answered through `error_response`, so
// the embedding layer decides the body shape.
//
// Lifecycle: construct -> start() (binds; throws std::runtime_error naming the address) ->
// stop_accepting() (drain: no new connections, idle keep-alive connections closed, busy ones
// closed after their current response) -> stop() (closes everything, joins the loops; the
// disconnect callbacks of unfinished responses run). The destructor calls stop().
// Thread-safety: start/stop_accepting/stop from one controlling thread; getters from any.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "connectors/http/connections_per_ip.h"
#include "connectors/http/http_parser.h"
#include "connectors/http/http_response.h"
#include "connectors/http/response_writer.h"
#include "graph/clock.h"
#include "graph/metrics.h"

namespace sluice::http {

struct HttpServerOptions {
  std::string host = "127.0.0.1";   // IPv4 or IPv6 literal, "localhost", or "0.0.0.0"
  std::uint16_t port = 0;           // 0 picks a free port; see HttpServer::port()
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_body_bytes = 1024 * 1024;
  Nanos idle_timeout = 60 * kNanosPerSecond;  // 0 disables
  Nanos header_timeout = 10 * kNanosPerSecond;  // 0 disables
  std::uint64_t body_min_rate = 1024;           // bytes per second; 0 disables
  Nanos body_rate_grace = 10 * kNanosPerSecond;
  std::uint32_t max_connections = 10000;
  std::uint32_t max_connections_per_ip = 256;   // 0: unlimited
  std::uint32_t io_threads = 1;
  std::size_t max_stream_buffer_bytes = 1024 * 1024;
  // Optional metrics, updated when set (must outlive the server).
  Gauge* open_connections_gauge = nullptr;
  Gauge* active_streams_gauge = nullptr;
  Counter* refused_connections = nullptr;    // over max_connections
  Counter* slow_client_closes = nullptr;     // over max_stream_buffer_bytes
  Counter* idle_closes = nullptr;            // over idle_timeout
  Counter* header_timeouts = nullptr;        // over header_timeout
  Counter* body_rate_timeouts = nullptr;     // under body_min_rate
  Counter* refused_per_ip = nullptr;         // over max_connections_per_ip
};

using HttpHandler = std::function<void(HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer)>;
// Builds the answer to a protocol error (status, plain-sentence message).
using ErrorResponder = std::function<HttpResponse(int status, const std::string& message)>;

class EventLoop;

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandler handler, ErrorResponder error_response);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void start();
  // The bound port (after start).
  std::uint16_t port() const { return bound_port_; }
  void stop_accepting();
  void stop();

  bool accepting() const { return accepting_.load(std::memory_order_acquire); }
  std::size_t open_connections() const { return open_connections_.load(std::memory_order_relaxed); }
  std::size_t active_streams() const { return active_streams_.load(std::memory_order_relaxed); }

 private:
  friend class EventLoop;
  HttpServerOptions options_;
  HttpHandler handler_;
  ErrorResponder error_response_;
  int listen_fd_ = -1;
  std::uint16_t bound_port_ = 0;
  std::vector<std::unique_ptr<EventLoop>> loops_;
  std::vector<std::thread> threads_;
  std::atomic<bool> accepting_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<int> loops_holding_listener_{0};
  std::atomic<std::size_t> open_connections_{0};
  std::atomic<std::size_t> active_streams_{0};
  ConnectionsPerIp per_ip_;
};

// Splits "host:port" / "[v6]:port"; throws std::invalid_argument naming the problem.
void parse_listen_address(std::string_view listen, std::string* host, std::uint16_t* port);

}  // namespace sluice::http
