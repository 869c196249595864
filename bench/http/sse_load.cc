// sse_load: opens N concurrent SSE streams against an OpenAI-compatible endpoint from one
// epoll thread and reports how many completed (head 200, every chunk well framed, `data:
// [DONE]` last, the chunked body ended), how many were open at once, time to first event,
// and the server's resident memory (from /proc/<pid>/status) when --pid is given.
//
//   sse_load --port 8080 --streams 1000 [--host 127.0.0.1] [--pid PID] [--timeout 120]
//            [--path /v1/chat/completions] [--body JSON]
//
// Exit code 0 only when every stream completed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Stream {
  int fd = -1;
  std::string out;
  std::size_t out_off = 0;
  std::string in;
  std::size_t pos = 0;       // parse position in `in`
  bool head_done = false;
  bool ended = false;        // saw the last chunk
  bool failed = false;
  bool saw_done = false;
  bool first_event = false;
  int events = 0;
  std::string last_event;
  std::string sse;           // SSE text not yet split into events
  Clock::time_point started, first_at, ended_at;
};

long rss_kib(int pid, const char* field) {
  if (pid <= 0) return -1;
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field));
  }
  return -1;
}

// Parses what arrived; returns false on a framing error.
bool parse(Stream& s) {
  if (!s.head_done) {
    std::size_t e = s.in.find("\r\n\r\n");
    if (e == std::string::npos) return true;
    if (s.in.compare(0, 12, "HTTP/1.1 200") != 0) return false;
    if (s.in.find("Transfer-Encoding: chunked") == std::string::npos) return false;
    s.head_done = true;
    s.pos = e + 4;
  }
  while (!s.ended) {
    std::size_t e = s.in.find("\r\n", s.pos);
    if (e == std::string::npos) return true;
    std::size_t size = std::strtoul(s.in.c_str() + s.pos, nullptr, 16);
    if (s.in.size() < e + 2 + size + 2) return true;
    if (s.in.compare(e + 2 + size, 2, "\r\n") != 0) return false;
    if (size == 0) {
      s.ended = true;
      break;
    }
    s.sse.append(s.in, e + 2, size);
    s.pos = e + 2 + size + 2;
    std::size_t b;
    while ((b = s.sse.find("\n\n")) != std::string::npos) {
      s.last_event = s.sse.substr(0, b);
      s.sse.erase(0, b + 2);
      ++s.events;
      if (!s.first_event) {
        s.first_event = true;
        s.first_at = Clock::now();
      }
      if (s.last_event == "data: [DONE]") s.saw_done = true;
    }
  }
  if (s.pos > 65536) {
    s.in.erase(0, s.pos);
    s.pos = 0;
  }
  return true;
}

double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * (v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::string path = "/v1/chat/completions";
  std::string body = R"({"model":"sluice","messages":[{"role":"user","content":"load"}],"stream":true})";
  int port = 8080, streams = 1000, pid = 0, timeout_s = 120;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    std::string v = argv[i + 1];
    if (a == "--host") host = v;
    else if (a == "--port") port = std::atoi(v.c_str());
    else if (a == "--streams") streams = std::atoi(v.c_str());
    else if (a == "--pid") pid = std::atoi(v.c_str());
    else if (a == "--timeout") timeout_s = std::atoi(v.c_str());
    else if (a == "--path") path = v;
    else if (a == "--body") body = v;
    else {
      std::fprintf(stderr, "sse_load: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);

  std::string request = "POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n" +
                        "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  long rss_before = rss_kib(pid, "VmRSS:");
  int ep = epoll_create1(0);
  std::vector<Stream> all(static_cast<std::size_t>(streams));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  auto t0 = Clock::now();
  for (int i = 0; i < streams; ++i) {
    Stream& s = all[static_cast<std::size_t>(i)];
    s.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    s.out = request;
    s.started = Clock::now();
    epoll_event ev{};
    ev.events = EPOLLOUT | EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    epoll_ctl(ep, EPOLL_CTL_ADD, s.fd, &ev);
  }
  int open_now = 0, max_open = 0, finished = 0;
  long rss_peak_seen = rss_before;
  std::vector<epoll_event> evs(1024);
  std::vector<char> buf(65536);
  auto deadline = t0 + std::chrono::seconds(timeout_s);
  auto next_rss = Clock::now();
  while (finished < streams && Clock::now() < deadline) {
    int n = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 100);
    for (int k = 0; k < n; ++k) {
      Stream& s = all[evs[k].data.u32];
      if (s.ended || s.failed) continue;
      if ((evs[k].events & EPOLLOUT) && s.out_off < s.out.size()) {
        ssize_t w = send(s.fd, s.out.data() + s.out_off, s.out.size() - s.out_off, MSG_NOSIGNAL);
        if (w > 0) s.out_off += static_cast<std::size_t>(w);
        if (s.out_off == s.out.size()) {
          epoll_event ev{};
          ev.events = EPOLLIN;
          ev.data.u32 = evs[k].data.u32;
          epoll_ctl(ep, EPOLL_CTL_MOD, s.fd, &ev);
        }
      }
      if (evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        bool was_open = s.first_event;
        ssize_t r = recv(s.fd, buf.data(), buf.size(), 0);
        if (r > 0) {
          s.in.append(buf.data(), static_cast<std::size_t>(r));
          if (!parse(s)) s.failed = true;
        } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
          s.failed = !s.ended;
        }
        if (!was_open && s.first_event) max_open = std::max(max_open, ++open_now);
        if (s.ended || s.failed) {
          if (s.first_event) --open_now;
          s.ended_at = Clock::now();
          ++finished;
          close(s.fd);
        }
      }
    }
    if (pid > 0 && Clock::now() >= next_rss) {
      rss_peak_seen = std::max(rss_peak_seen, rss_kib(pid, "VmRSS:"));
      next_rss = Clock::now() + std::chrono::milliseconds(50);
    }
  }
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  int completed = 0, failed = 0, unfinished = 0;
  std::vector<double> ttft_ms, total_ms;
  long events = 0;
  for (auto& s : all) {
    bool ok = s.ended && s.saw_done && s.last_event == "data: [DONE]" && !s.failed;
    if (ok) {
      ++completed;
      ttft_ms.push_back(std::chrono::duration<double, std::milli>(s.first_at - s.started).count());
      total_ms.push_back(std::chrono::duration<double, std::milli>(s.ended_at - s.started).count());
    } else if (s.failed || s.ended) {
      ++failed;
    } else {
      ++unfinished;
      close(s.fd);
    }
    events += s.events;
  }
  std::printf("streams %d completed %d failed %d unfinished %d\n", streams, completed, failed, unfinished);
  std::printf("max_open_at_once %d events %ld wall_s %.2f\n", max_open, events, wall);
  std::printf("first_event_ms p50 %.1f p99 %.1f  stream_ms p50 %.1f p99 %.1f\n", pct(ttft_ms, 0.5), pct(ttft_ms, 0.99),
              pct(total_ms, 0.5), pct(total_ms, 0.99));
  if (pid > 0) {
    std::printf("server_rss_mib before %.1f peak_sampled %.1f hwm %.1f\n", rss_before / 1024.0, rss_peak_seen / 1024.0,
                rss_kib(pid, "VmHWM:") / 1024.0);
  }
  return completed == streams ? 0 : 1;
}
