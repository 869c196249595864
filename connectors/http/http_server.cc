#include "connectors/http/http_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include "connectors/http/listen_socket.h"
#include "connectors/http/read_deadlines.h"
#include "graph/units.h"

namespace sluice::http {
namespace {

constexpr std::uint64_t kListenTag = 1;
constexpr std::uint64_t kWakeTag = 2;
constexpr std::uint64_t kFirstConnId = 16;
constexpr std::size_t kReadChunk = 64 * 1024;
// An output buffer larger than this is released once sent rather than kept for the next answer.
constexpr std::size_t kKeptOutputCapacity = 64 * 1024;
constexpr Nanos kLinger = 2 * kNanosPerSecond;

std::string errno_text() { return std::strerror(errno); }

}  // namespace

void parse_listen_address(std::string_view listen, std::string* host, std::uint16_t* port) {
  std::string error;  // the validator's rule (graph/units.h), so `sluice validate` refuses the same
  if (!parse_host_port(listen, host, port, &error)) throw std::invalid_argument("listen " + error);
}

// One event loop: its epoll set, its connections, its mailbox. Everything here runs on the
// loop's thread except construction and the wake-ups through the mailbox.
class EventLoop {
 public:
  EventLoop(HttpServer& server, const HttpServerOptions& options)
      : server_(server),
        options_(options),
        mailbox_(std::make_shared<LoopMailbox>()),
        deadlines_({options.header_timeout, options.body_min_rate, options.body_rate_grace}) {
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) throw std::runtime_error("http: epoll_create1 failed: " + errno_text());
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeTag;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, mailbox_->fd(), &ev);
    read_buf_.resize(kReadChunk);
    Nanos idle = options_.idle_timeout;
    // Idle connections are found by a sweep; its period bounds how late a close can be.
    sweep_period_ms_ = idle <= 0 ? 1000 : static_cast<int>(std::clamp<Nanos>(idle / 4 / kNanosPerMilli, 5, 1000));
  }
  ~EventLoop() {
    mailbox_->close();
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
  }

  void add_listener(int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLEXCLUSIVE;
    ev.data.u64 = kListenTag;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      throw std::runtime_error("http: epoll_ctl(listen) failed: " + errno_text());
    }
    holds_listener_ = true;
  }

  LoopMailbox& mailbox() { return *mailbox_; }

  void run() {
    mailbox_->bind_to_current_thread();
    std::vector<epoll_event> events(256);
    std::vector<LoopOp> ops;
    Nanos next_sweep = now() + sweep_period_ms_ * kNanosPerMilli;
    while (!server_.stopping_.load(std::memory_order_acquire)) {
      int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), wait_ms(now()));
      if (n < 0 && errno != EINTR) break;
      for (int i = 0; i < n; ++i) {
        std::uint64_t tag = events[i].data.u64;
        if (tag == kListenTag) {
          accept_all();
        } else if (tag == kWakeTag) {
          ops.clear();
          mailbox_->take(ops);
          for (auto& op : ops) apply(op);
        } else {
          on_connection_event(tag, events[i].events);
        }
        drain_local();
      }
      if (!server_.accepting() && holds_listener_) release_listener();
      Nanos t = now();
      expire_reads(t);
      if (t >= next_sweep) {
        sweep(t);
        next_sweep = t + sweep_period_ms_ * kNanosPerMilli;
      }
      graveyard_.clear();
    }
    // Shutdown: close every connection; unfinished responses learn that their client is gone.
    mailbox_->close();
    std::vector<Connection*> all;
    for (auto& [id, c] : conns_) all.push_back(c.get());
    for (Connection* c : all) close(c);
    if (holds_listener_) release_listener();
    graveyard_.clear();
  }

 private:
  struct Connection {
    explicit Connection(ParseLimits limits) : parser(limits) {}
    int fd = -1;
    std::uint64_t id = 0;
    std::string in;
    std::size_t in_off = 0;
    std::string out;
    std::size_t out_off = 0;
    HttpRequestParser parser;
    bool in_request = false;       // dispatched; its response has not finished
    bool streaming = false;
    bool continue_sent = false;
    bool close_after_flush = false;
    bool closed = false;
    bool lingering = false;        // answered and half-closed; discarding input until EOF
    Nanos linger_until = 0;
    std::size_t discarded = 0;
    std::uint64_t seq = 0;
    std::shared_ptr<ResponseWriter> writer;
    std::uint32_t interest = 0;
    Nanos last_active = 0;
    ReadClock read;                // header_timeout / body_min_rate (read_deadlines.h)
    std::string peer;              // its ConnectionsPerIp key; empty when not counted
  };

  static Nanos now() { return SteadyClock::instance().now(); }

  std::size_t read_bound() const { return options_.max_header_bytes + options_.max_body_bytes; }
  static std::size_t unsent(const Connection* c) { return c->out.size() - c->out_off; }
  // A client that pipelines requests but does not read the answers: stop answering (and,
  // once its input backlog is full, reading) until it catches up.
  bool output_backlogged(const Connection* c) const { return unsent(c) > options_.max_stream_buffer_bytes; }

  void accept_all() {
    for (int i = 0; i < 64; ++i) {
      sockaddr_storage peer_addr{};
      socklen_t peer_len = sizeof peer_addr;
      int fd = ::accept4(server_.listen_fd_, reinterpret_cast<sockaddr*>(&peer_addr), &peer_len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a transient error: epoll will tell us again
      if (server_.open_connections_.load(std::memory_order_relaxed) >= options_.max_connections) {
        refuse(fd, options_.refused_connections,
               "too many open connections (max_connections " + std::to_string(options_.max_connections) + ")");
        continue;
      }
      ConnectionsPerIp& per_ip = server_.per_ip_;
      std::string peer = per_ip.enabled() ? ConnectionsPerIp::key_of(peer_addr) : std::string();
      if (!per_ip.try_add(peer)) {
        refuse(fd, options_.refused_per_ip,
               "too many open connections from this address (max_connections_per_ip " +
                   std::to_string(per_ip.limit()) + ")");
        continue;
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Connection>(ParseLimits{options_.max_header_bytes, options_.max_body_bytes});
      c->fd = fd;
      c->id = next_id_++;
      c->last_active = now();
      c->peer = std::move(peer);
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.u64 = c->id;
      if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        per_ip.remove(c->peer);
        ::close(fd);
        continue;
      }
      c->interest = ev.events;
      deadlines_.start_head(c->id, c->read, c->last_active);  // the first request's clock runs from here
      server_.open_connections_.fetch_add(1, std::memory_order_relaxed);
      if (options_.open_connections_gauge) options_.open_connections_gauge->add(1);
      conns_.emplace(c->id, std::move(c));
    }
  }

  // Answers 503 on a connection not taken (best effort: one non-blocking send) and closes it.
  void refuse(int fd, Counter* counter, const std::string& message) {
    if (counter) counter->inc();
    std::string bytes = serialize_response(server_.error_response_(503, message), true);
    [[maybe_unused]] ssize_t w = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
  }

  void release_listener() {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, server_.listen_fd_, nullptr);
    holds_listener_ = false;
    draining_ = true;
    if (server_.loops_holding_listener_.fetch_sub(1) == 1) {
      ::close(server_.listen_fd_);
      server_.listen_fd_ = -1;
    }
    // Idle keep-alive connections close now; busy ones after their current response.
    std::vector<Connection*> idle;
    for (auto& [id, c] : conns_) {
      if (!c->in_request && c->out_off == c->out.size()) idle.push_back(c.get());
    }
    for (Connection* c : idle) close(c);
  }

  Connection* find(std::uint64_t id) {
    auto it = conns_.find(id);
    return it == conns_.end() || it->second->closed ? nullptr : it->second.get();
  }

  void on_connection_event(std::uint64_t id, std::uint32_t events) {
    Connection* c = find(id);
    if (!c) return;
    if (events & EPOLLERR) return close(c);
    if (events & EPOLLOUT) {
      flush(c);
      if (c->closed) return;
      if (!c->in_request) process_input(c);
      if (c->closed) return;
    }
    if (events & EPOLLIN) {
      on_readable(c);
    } else if (events & (EPOLLRDHUP | EPOLLHUP)) {
      close(c);  // the peer went away while we were not reading
    }
  }

  void on_readable(Connection* c) {
    ssize_t n = ::recv(c->fd, read_buf_.data(), read_buf_.size(), 0);
    if (n == 0) return close(c);
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) close(c);
      return;
    }
    c->last_active = now();
    if (c->lingering) {
      c->discarded += static_cast<std::size_t>(n);
      if (c->discarded > read_bound()) close(c);
      return;
    }
    // Drop consumed bytes before appending, so a client that always leaves a partial
    // pipelined request behind cannot grow the buffer without bound.
    if (c->in_off > 0 && (c->in_off == c->in.size() || c->in_off >= kReadChunk)) {
      c->in.erase(0, c->in_off);
      c->in_off = 0;
    }
    c->in.append(read_buf_.data(), static_cast<std::size_t>(n));
    if (!c->in_request) process_input(c);
    if (!c->closed) update_interest(c);
  }

  // Parses and dispatches requests until one is in progress or the buffer runs dry.
  void process_input(Connection* c) {
    while (!c->in_request && !c->close_after_flush && !c->closed && !output_backlogged(c)) {
      std::string_view pending(c->in.data() + c->in_off, c->in.size() - c->in_off);
      if (pending.empty()) break;
      auto state = c->parser.parse(pending);
      if (state == HttpRequestParser::State::kNeedMore) {
        if (!c->parser.head_parsed()) {
          deadlines_.start_head(c->id, c->read, now());
          break;
        }
        deadlines_.start_body(c->id, c->read, now());
        c->read.body_bytes = pending.size() - c->parser.head_bytes();
        if (c->parser.expects_continue() && !c->continue_sent) {
          c->continue_sent = true;
          c->out += "HTTP/1.1 100 Continue\r\n\r\n";
          flush(c);
        }
        break;
      }
      if (state == HttpRequestParser::State::kError) {
        // The framing is lost: answer and close.
        deadlines_.stop(c->id, c->read);
        HttpResponse r = server_.error_response_(c->parser.error_status(), c->parser.error_message());
        c->out += serialize_response(r, true);
        c->close_after_flush = true;
        flush(c);
        break;
      }
      deadlines_.stop(c->id, c->read);  // read in time; the response may take as long as it needs
      HttpRequest request = c->parser.take();
      c->in_off += c->parser.consumed();
      c->parser.reset();
      c->continue_sent = false;
      c->in_request = true;
      ++c->seq;
      bool close_after = !request.keep_alive || draining_;
      c->writer = std::make_shared<ResponseWriter>(mailbox_, c->id, c->seq, close_after);
      auto writer = c->writer;  // the handler may outlive nothing: keep our own reference
      server_.handler_(request, writer);
      // An answer given at once is in mailbox_->local; the caller drains it, which continues
      // with the next pipelined request.
      break;
    }
    if (c->in_off == c->in.size() && !c->in.empty()) {
      c->in.clear();
      c->in_off = 0;
    }
  }

  void drain_local() {
    while (!mailbox_->local.empty()) {
      std::vector<LoopOp> ops;
      ops.swap(mailbox_->local);
      for (auto& op : ops) apply(op);
    }
  }

  void apply(LoopOp& op) {
    Connection* c = find(op.conn_id);
    if (!c || c->seq != op.seq || !c->in_request) return;
    if (c->out_off == c->out.size()) {
      c->out.swap(op.bytes);  // nothing unsent: take the buffer (a large answer is not copied)
      c->out_off = 0;
    } else {
      c->out += op.bytes;
    }
    bool finished = false;
    switch (op.kind) {
      case LoopOp::Kind::kStreamHead:
        c->streaming = true;
        server_.active_streams_.fetch_add(1, std::memory_order_relaxed);
        if (options_.active_streams_gauge) options_.active_streams_gauge->add(1);
        break;
      case LoopOp::Kind::kChunk:
        break;
      case LoopOp::Kind::kResponse:
      case LoopOp::Kind::kStreamEnd:
        finished = true;
        break;
    }
    if (finished) {
      bool close_after = c->writer->close_after_ || draining_;
      end_exchange(c);
      c->last_active = now();
      if (close_after) c->close_after_flush = true;
    } else if (output_backlogged(c)) {
      if (options_.slow_client_closes) options_.slow_client_closes->inc();
      return close(c);
    }
    flush(c);
    if (finished && !c->closed && !c->close_after_flush) {
      process_input(c);
      if (!c->closed) update_interest(c);
    }
  }

  void end_exchange(Connection* c) {
    if (c->streaming) {
      server_.active_streams_.fetch_sub(1, std::memory_order_relaxed);
      if (options_.active_streams_gauge) options_.active_streams_gauge->add(-1);
    }
    c->streaming = false;
    c->in_request = false;
    c->writer.reset();
  }

  void flush(Connection* c) {
    while (c->out_off < c->out.size()) {
      ssize_t n = ::send(c->fd, c->out.data() + c->out_off, c->out.size() - c->out_off, MSG_NOSIGNAL);
      if (n > 0) {
        c->out_off += static_cast<std::size_t>(n);
        c->last_active = now();
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      return close(c);
    }
    if (c->out_off == c->out.size()) {
      // All sent. An idle keep-alive connection keeps a small buffer, not its largest answer's.
      if (c->out.capacity() > kKeptOutputCapacity) {
        std::string().swap(c->out);
      } else {
        c->out.clear();
      }
      c->out_off = 0;
      if (c->close_after_flush) return linger(c);
    } else if (c->out_off > (1u << 20) && c->out_off > c->out.size() / 2) {
      c->out.erase(0, c->out_off);
      c->out_off = 0;
    }
    update_interest(c);
  }

  // Closing a socket with unread input makes the kernel send a reset, which can destroy the
  // answer we just wrote (a 413 while the client is still sending its body). So: half-close,
  // read and discard until the client closes, bounded by kLinger and read_bound() bytes.
  void linger(Connection* c) {
    if (c->lingering) return;
    c->lingering = true;
    c->linger_until = now() + kLinger;
    ::shutdown(c->fd, SHUT_WR);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = c->id;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
    c->interest = ev.events;
  }

  void update_interest(Connection* c) {
    if (c->lingering) return;
    std::uint32_t want = EPOLLRDHUP;
    bool backlog = (c->in_request || output_backlogged(c)) && c->in.size() - c->in_off > read_bound();
    if (!backlog && !c->close_after_flush) want |= EPOLLIN;
    if (c->out_off < c->out.size()) want |= EPOLLOUT;
    if (want == c->interest) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = c->id;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
    c->interest = want;
  }

  void close(Connection* c) {
    if (c->closed) return;
    c->closed = true;
    deadlines_.stop(c->id, c->read);
    server_.per_ip_.remove(c->peer);
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    server_.open_connections_.fetch_sub(1, std::memory_order_relaxed);
    if (options_.open_connections_gauge) options_.open_connections_gauge->add(-1);
    std::function<void()> on_disconnect;
    if (c->in_request && c->writer) {
      c->writer->closed_.store(true, std::memory_order_release);
      on_disconnect = std::move(c->writer->on_disconnect_);
    }
    if (c->in_request) end_exchange(c);
    auto it = conns_.find(c->id);
    graveyard_.push_back(std::move(it->second));
    conns_.erase(it);
    if (on_disconnect) on_disconnect();
  }

  // How long epoll may sleep: until the next idle sweep, or the first read deadline if sooner.
  int wait_ms(Nanos t) const {
    auto due = deadlines_.next_due();
    if (!due) return sweep_period_ms_;
    if (*due <= t) return 0;
    Nanos left_ms = (*due - t) / kNanosPerMilli + 1;  // rounded up (without overflow): never wake before it
    return static_cast<int>(std::min<Nanos>(sweep_period_ms_, left_ms));
  }

  void expire_reads(Nanos t) {
    deadlines_.expire_due(
        t,
        [this](std::uint64_t id) -> ReadClock* {
          Connection* c = find(id);
          return c ? &c->read : nullptr;
        },
        [this](std::uint64_t id, ReadTimeout which) {
          if (Connection* c = find(id)) on_read_timeout(c, which);
        });
  }

  // A read deadline ran out: 408 and close (half-closed and lingering like any protocol
  // error, so the answer survives the client's unread bytes). A connection that has sent
  // nothing of its first request is closed without an answer: it asked nothing, and a 408 it
  // did not ask for would be read as the answer to a request it may be sending right now.
  void on_read_timeout(Connection* c, ReadTimeout which) {
    const ReadDeadlines::Policy& p = deadlines_.policy();
    std::string message;
    if (which == ReadTimeout::kHeader) {
      if (options_.header_timeouts) options_.header_timeouts->inc();
      if (c->in_off == c->in.size()) return close(c);
      message = "the request line and headers were not complete within header_timeout (" +
                format_duration(p.header_timeout) + ")";
    } else {
      if (options_.body_rate_timeouts) options_.body_rate_timeouts->inc();
      std::size_t body = c->in.size() - c->in_off - c->parser.head_bytes();
      message = "the request body arrived slower than body_min_rate (" + std::to_string(p.body_min_rate) +
                " bytes/s after a body_rate_grace of " + format_duration(p.body_rate_grace) + "): " +
                std::to_string(body) + " of its bytes had arrived";
    }
    c->out += serialize_response(server_.error_response_(408, message), true);
    c->close_after_flush = true;
    flush(c);
  }

  void sweep(Nanos t) {
    std::vector<Connection*> expired;
    for (auto& [id, c] : conns_) {
      if (c->lingering) {
        if (t >= c->linger_until) expired.push_back(c.get());
        continue;
      }
      if (c->in_request) continue;  // a response in progress is never idle
      // Idle: no request in progress and neither bytes in nor bytes out for idle_timeout
      // (this also ends a client that pipelines requests but never reads the answers).
      bool timed_out = options_.idle_timeout > 0 && t - c->last_active >= options_.idle_timeout;
      if (timed_out || (draining_ && c->out_off == c->out.size())) expired.push_back(c.get());
    }
    for (Connection* c : expired) {
      if (!draining_ && !c->lingering && options_.idle_closes) options_.idle_closes->inc();
      close(c);
    }
  }

  HttpServer& server_;
  const HttpServerOptions& options_;
  std::shared_ptr<LoopMailbox> mailbox_;
  ReadDeadlines deadlines_;
  int epoll_fd_ = -1;
  int sweep_period_ms_ = 1000;
  bool holds_listener_ = false;
  bool draining_ = false;
  std::uint64_t next_id_ = kFirstConnId;
  std::vector<char> read_buf_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Connection>> conns_;
  std::vector<std::unique_ptr<Connection>> graveyard_;  // closed this iteration; freed at its end
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler, ErrorResponder error_response)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      error_response_(std::move(error_response)),
      per_ip_(options_.max_connections_per_ip) {
  if (options_.io_threads == 0) options_.io_threads = 1;
  if (!error_response_) {
    error_response_ = [](int status, const std::string& message) {
      return HttpResponse{status, "text/plain; charset=utf-8", {}, message + "\n"};
    };
  }
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  listen_fd_ = open_listen_socket(options_.host, options_.port, &bound_port_);
  accepting_.store(true, std::memory_order_release);
  for (std::uint32_t i = 0; i < options_.io_threads; ++i) {
    loops_.push_back(std::make_unique<EventLoop>(*this, options_));
    loops_.back()->add_listener(listen_fd_);
  }
  loops_holding_listener_.store(static_cast<int>(loops_.size()));
  for (auto& loop : loops_) threads_.emplace_back([l = loop.get()] { l->run(); });
}

void HttpServer::stop_accepting() {
  if (!accepting_.exchange(false)) return;
  for (auto& loop : loops_) loop->mailbox().wake();
}

void HttpServer::stop() {
  if (stopping_.exchange(true)) return;
  accepting_.store(false, std::memory_order_release);
  for (auto& loop : loops_) loop->mailbox().wake();
  for (auto& t : threads_) t.join();
  threads_.clear();
  loops_.clear();
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
}

}  // namespace sluice::http
