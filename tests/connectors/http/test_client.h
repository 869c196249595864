// A small blocking HTTP/1.1 client for loopback tests of the HTTP source.
//
// It reads exactly what the server wrote, so tests can check framing: a response head, a
// Content-Length body, or a chunked body one chunk at a time (the server writes each SSE
// event as one chunk), and SSE events parsed out of those chunks. Every read has a receive
// timeout (10 s): a server bug fails the test instead of hanging it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::http::testing {

struct ClientResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  bool chunked = false;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct SseEvent {
  std::string event;    // empty for plain data events
  std::string data;
  std::string comment;  // the text of a ": ..." comment line (heartbeats, progress)
  std::string id;       // the `id:` line (resumable streams)
};

class TestClient {
 public:
  explicit TestClient(std::uint16_t port, int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~TestClient() { close(); }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  void send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("test client: send failed");
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  static std::string post(std::string_view path, std::string_view body, std::string_view extra_headers = "") {
    std::string r = "POST " + std::string(path) + " HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n";
    r += extra_headers;
    r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    r += body;
    return r;
  }
  static std::string get(std::string_view path, std::string_view extra_headers = "") {
    return "GET " + std::string(path) + " HTTP/1.1\r\nHost: t\r\n" + std::string(extra_headers) + "\r\n";
  }

  // Reads a status line and headers. Throws on EOF or timeout.
  ClientResponse read_head() {
    ClientResponse r;
    std::size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) fill();
    std::string head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    std::size_t line_end = head.find("\r\n");
    std::string status_line = head.substr(0, line_end);
    r.status = std::stoi(status_line.substr(9, 3));
    std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      std::size_t e = head.find("\r\n", pos);
      if (e == std::string::npos) e = head.size();
      std::string line = head.substr(pos, e - pos);
      std::size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      r.headers[name] = value;
      pos = e + 2;
    }
    r.chunked = r.header("transfer-encoding") == "chunked";
    return r;
  }

  // A whole response: head and body (Content-Length or all chunks).
  ClientResponse read_response() {
    ClientResponse r = read_head();
    if (r.chunked) {
      while (auto chunk = next_chunk()) r.body += *chunk;
    } else {
      std::size_t n = r.headers.count("content-length") ? std::stoul(r.header("content-length")) : 0;
      while (buf_.size() < n) fill();
      r.body = buf_.substr(0, n);
      buf_.erase(0, n);
    }
    return r;
  }

  // The next chunk of a chunked body; nullopt at the last (empty) chunk.
  std::optional<std::string> next_chunk() {
    std::size_t e;
    while ((e = buf_.find("\r\n")) == std::string::npos) fill();
    std::size_t size = std::stoul(buf_.substr(0, e), nullptr, 16);
    while (buf_.size() < e + 2 + size + 2) fill();
    std::string data = buf_.substr(e + 2, size);
    if (buf_.substr(e + 2 + size, 2) != "\r\n") throw std::runtime_error("test client: chunk not followed by CRLF");
    buf_.erase(0, e + 2 + size + 2);
    if (size == 0) return std::nullopt;
    return data;
  }

  // The next SSE event of a chunked event stream; nullopt when the body ended. Events may
  // span or share chunks; they are separated by a blank line.
  // The next SSE event, as a client dispatches them: a block holding only comments (a heartbeat,
  // stage progress) is skipped unless `comments` asks for them.
  std::optional<SseEvent> next_event(bool comments = false) {
    while (true) {
      auto ev = next_block();
      if (!ev || comments || !ev->data.empty() || !ev->event.empty() || ev->comment.empty()) return ev;
    }
  }
  std::optional<SseEvent> next_block() {
    std::size_t e;
    while ((e = events_.find("\n\n")) == std::string::npos) {
      auto chunk = next_chunk();
      if (!chunk) return std::nullopt;
      events_ += *chunk;
    }
    std::string block = events_.substr(0, e);
    events_.erase(0, e + 2);
    SseEvent ev;
    std::size_t pos = 0;
    while (pos <= block.size()) {
      std::size_t nl = block.find('\n', pos);
      if (nl == std::string::npos) nl = block.size();
      std::string line = block.substr(pos, nl - pos);
      if (line.rfind("data: ", 0) == 0) {
        if (!ev.data.empty()) ev.data += '\n';
        ev.data += line.substr(6);
      } else if (line.rfind("event: ", 0) == 0) {
        ev.event = line.substr(7);
      } else if (line.rfind("id: ", 0) == 0) {
        ev.id = line.substr(4);
      } else if (line.rfind(": ", 0) == 0) {
        ev.comment = line.substr(2);
      }
      pos = nl + 1;
    }
    return ev;
  }
  // Bytes of SSE text received but not yet returned as events.
  bool events_pending() const { return !events_.empty(); }

  // True when the server closes the connection (EOF or reset) before the receive timeout;
  // any bytes that arrive first are kept.
  bool wait_closed() {
    char tmp[4096];
    while (true) {
      ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
      buf_.append(tmp, static_cast<std::size_t>(n));
    }
  }
  const std::string& buffered() const { return buf_; }

 private:
  void fill() {
    char tmp[16384];
    ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n == 0) throw std::runtime_error("test client: connection closed by server");
    if (n < 0) throw std::runtime_error(std::string("test client: recv: ") + std::strerror(errno));
    buf_.append(tmp, static_cast<std::size_t>(n));
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
  std::string events_;
};

}  // namespace sluice::http::testing
