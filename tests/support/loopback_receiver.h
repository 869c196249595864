// LoopbackReceiver: a tiny HTTP/1.1 server on 127.0.0.1 for tests of what Sluice posts out
// (the alert webhook, OTLP spans): it accepts one request per connection, keeps each request's
// body (unless `keep` is false: benchmarks only count them), and answers with the next status
// from `statuses` (200 once they run out), then closes.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sluice::testing {

class LoopbackReceiver {
 public:
  explicit LoopbackReceiver(std::deque<int> statuses = {}, bool keep = true) : statuses_(std::move(statuses)), keep_(keep) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      std::abort();
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~LoopbackReceiver() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string url(const std::string& path = "/hook") const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

  // Waits up to `timeout` for at least `n` requests; returns the bodies received so far.
  std::vector<std::string> wait_for(std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return bodies_.size() >= n; });
    return bodies_;
  }
  std::vector<std::string> bodies() {
    std::lock_guard lock(mu_);
    return bodies_;
  }
  std::size_t received() const { return received_.load(); }
  std::vector<std::string> heads() {
    std::lock_guard lock(mu_);
    return heads_;
  }

 private:
  void serve() {
    while (!stop_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string in;
      char buf[4096];
      std::size_t head_end = std::string::npos, need = 0;
      while (true) {
        if (head_end == std::string::npos && (head_end = in.find("\r\n\r\n")) != std::string::npos) {
          const auto at = in.find("Content-Length: ");
          need = head_end + 4 + (at == std::string::npos ? 0 : std::stoul(in.substr(at + 16)));
        }
        if (head_end != std::string::npos && in.size() >= need) break;
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        in.append(buf, static_cast<std::size_t>(n));
      }
      int status = 200;
      {
        std::lock_guard lock(mu_);
        if (!statuses_.empty()) {
          status = statuses_.front();
          statuses_.pop_front();
        }
      }
      const std::string reply = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      (void)::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(c);
      if (head_end == std::string::npos) continue;
      received_.fetch_add(1);
      std::lock_guard lock(mu_);
      if (keep_ && status >= 200 && status < 300) {
        heads_.push_back(in.substr(0, head_end));
        bodies_.push_back(in.substr(head_end + 4));
      }
      cv_.notify_all();
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int> statuses_;
  const bool keep_;
  std::atomic<std::size_t> received_{0};
  std::vector<std::string> bodies_;  // of the requests answered 2xx
  std::vector<std::string> heads_;
  std::thread thread_;
};

}  // namespace sluice::testing
