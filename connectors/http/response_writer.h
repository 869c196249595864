// ResponseWriter: the handle through which any thread answers one HTTP request.
//
// The event loop creates one per request and hands it to the handler. Whoever holds it
// (usually an engine thread, through a ResponseSink) either sends one complete response, or
// starts a chunked stream, writes chunks and ends it. Every call only serialises bytes and
// posts them to the connection's event loop (LoopMailbox): it never blocks and never touches
// the socket. Calls out of order (a chunk before start_stream, anything after the end) are
// ignored. After the client went away, or the connection was closed because the client read
// too slowly (max_stream_buffer_bytes), `closed()` turns true and writes are dropped.
//
// The handler may register `on_disconnect` (on the loop thread, before it returns); the loop
// calls it, on the loop thread, if the connection closes before the response finished, so
// the request behind it can be cancelled. It is never called after the response finished.
//
// Thread-safety: send/start_stream/write_chunk/end_stream/closed from any thread, but the
// calls for one response must not overlap (a ResponseSink's calls never do).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "connectors/http/http_response.h"
#include "connectors/http/loop_mailbox.h"

namespace sluice::http {

class ResponseWriter {
 public:
  ResponseWriter(std::shared_ptr<LoopMailbox> mailbox, std::uint64_t conn_id, std::uint64_t seq, bool close_after)
      : mailbox_(std::move(mailbox)), conn_id_(conn_id), seq_(seq), close_after_(close_after) {}

  // Headers every response through this writer carries (CORS), set by the handler before it
  // hands the writer on.
  void add_headers(std::vector<HttpHeader> headers) { extra_headers_ = std::move(headers); }

  void send(const HttpResponse& response);
  void send(HttpResponse&& response);  // the body's buffer becomes the bytes sent
  void start_stream(int status, std::string_view content_type, const std::vector<HttpHeader>& headers);
  void write_chunk(std::string_view data);
  void end_stream();

  bool closed() const { return closed_.load(std::memory_order_acquire); }
  bool streaming() const { return state_.load(std::memory_order_acquire) == kStreaming; }
  bool finished() const { return state_.load(std::memory_order_acquire) == kDone; }

  // Loop thread only.
  void on_disconnect(std::function<void()> fn) { on_disconnect_ = std::move(fn); }

 private:
  friend class EventLoop;
  enum State { kIdle, kStreaming, kDone };
  void post(LoopOp::Kind kind, std::string bytes);
  bool advance(State from, State to);

  std::shared_ptr<LoopMailbox> mailbox_;
  const std::uint64_t conn_id_;
  const std::uint64_t seq_;
  const bool close_after_;  // the client asked to close, or the server is draining
  std::atomic<int> state_{kIdle};
  std::atomic<bool> closed_{false};
  std::function<void()> on_disconnect_;  // loop thread only
  std::vector<HttpHeader> extra_headers_;  // written before the writer is handed on, then read-only
};

}  // namespace sluice::http
