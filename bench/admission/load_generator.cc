#include "bench/admission/load_generator.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <unordered_map>

namespace sluice::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

struct Call {
  int fd = -1;
  std::size_t cls = 0;
  std::string out;
  std::size_t out_off = 0;
  std::string in;
  std::size_t scanned = 0;  // SSE scan position in `in`
  Clock::time_point sent_at;
  Clock::time_point last_event_at;
  bool first_token_seen = false;
  std::vector<double> itl;
  double ttft = -1;
};

struct ClassAccumulator {
  ClassResult result;
  std::vector<double> e2e, ttft, itl, retry_after;
};

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Status code of an HTTP/1.1 response head, or 0 while incomplete.
int status_of(const std::string& in) {
  if (in.size() < 12 || in.compare(0, 5, "HTTP/") != 0) return 0;
  return std::atoi(in.c_str() + 9);
}

std::string header_value(const std::string& in, const char* lower_name) {
  std::size_t head_end = in.find("\r\n\r\n");
  std::string head = in.substr(0, head_end);
  std::string lower = head;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string key = std::string("\r\n") + lower_name + ":";
  std::size_t at = lower.find(key);
  if (at == std::string::npos) return {};
  std::size_t start = at + key.size();
  std::size_t end = head.find("\r\n", start);
  std::string v = head.substr(start, end - start);
  v.erase(0, v.find_first_not_of(' '));
  return v;
}

}  // namespace

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  p.n = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))]; };
  p.p50 = at(0.50);
  p.p95 = at(0.95);
  p.p99 = at(0.99);
  return p;
}

LoadResult run_open_loop(const LoadOptions& o) {
  if (o.classes.empty()) throw std::invalid_argument("no classes in the mix");
  if (o.rate <= 0) throw std::invalid_argument("--rate must be positive");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(o.port));
  if (inet_pton(AF_INET, o.host.c_str(), &addr.sin_addr) != 1) throw std::invalid_argument("--host must be an IPv4 address: " + o.host);

  std::vector<ClassAccumulator> acc(o.classes.size());
  for (std::size_t i = 0; i < o.classes.size(); ++i) {
    acc[i].result.name = o.classes[i].name;
    acc[i].result.slo_seconds = o.classes[i].slo_seconds;
  }
  std::mt19937_64 rng(o.seed);
  std::exponential_distribution<double> gap(o.rate);
  std::vector<double> weights;
  for (const auto& c : o.classes) weights.push_back(c.weight);
  std::discrete_distribution<std::size_t> pick(weights.begin(), weights.end());

  int ep = epoll_create1(0);
  if (ep < 0) throw std::runtime_error("epoll_create1 failed");
  std::unordered_map<int, std::unique_ptr<Call>> open;

  auto body_for = [&](const std::string&) {
    std::string body = "{\"model\":\"sluice\",\"max_tokens\":" + std::to_string(o.max_tokens) +
                       ",\"stream\":" + (o.stream ? "true" : "false") + ",\"messages\":[{\"role\":\"user\",\"content\":\"" +
                       json_escape(o.prompt) + "\"}]}";
    return body;
  };

  auto finish = [&](Call& c, bool eof) {
    ClassAccumulator& a = acc[c.cls];
    Clock::time_point now = Clock::now();
    int status = status_of(c.in);
    double e2e = seconds_between(c.sent_at, now);
    if (status == 0) {
      ++a.result.failed;
    } else if (status == 200) {
      bool stream_error = o.stream && c.in.find("\"error\"") != std::string::npos;
      if (stream_error) {
        // A stream that started (heartbeats) and then failed: a 504 or 429 in the body.
        if (c.in.find("timeout") != std::string::npos || c.in.find("deadline") != std::string::npos) ++a.result.timeout_504;
        else ++a.result.other_errors;
      } else {
        ++a.result.ok;
        a.e2e.push_back(e2e);
        if (c.ttft >= 0) a.ttft.push_back(c.ttft);
        else a.ttft.push_back(e2e);  // a JSON answer: the first token arrives with the last
        a.itl.insert(a.itl.end(), c.itl.begin(), c.itl.end());
        if (a.result.slo_seconds <= 0 || e2e <= a.result.slo_seconds) ++a.result.good;
      }
    } else if (status == 429) {
      ++a.result.rejected_429;
      std::string ra = header_value(c.in, "retry-after");
      if (!ra.empty()) a.retry_after.push_back(std::atof(ra.c_str()));
    } else if (status == 504) {
      ++a.result.timeout_504;
    } else {
      ++a.result.other_errors;
    }
    (void)eof;
    epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
  };

  // Looks for newly arrived SSE data events ("data: {...}" with content) to stamp TTFT/ITL.
  auto scan_events = [&](Call& c) {
    if (!o.stream) return;
    Clock::time_point now = Clock::now();
    while (true) {
      std::size_t at = c.in.find("data: {", c.scanned);
      if (at == std::string::npos) break;
      std::size_t end = c.in.find('\n', at);
      if (end == std::string::npos) break;
      c.scanned = end;
      if (c.in.substr(at, end - at).find("\"content\"") == std::string::npos) continue;
      if (!c.first_token_seen) {
        c.first_token_seen = true;
        c.ttft = seconds_between(c.sent_at, now);
      } else {
        c.itl.push_back(seconds_between(c.last_event_at, now));
      }
      c.last_event_at = now;
    }
  };

  auto launch = [&](std::size_t cls) {
    ClassAccumulator& a = acc[cls];
    ++a.result.sent;
    if (static_cast<int>(open.size()) >= o.max_open) {
      ++a.result.dropped;
      return;
    }
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      ++a.result.failed;
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    if (rc < 0 && errno != EINPROGRESS) {
      ::close(fd);
      ++a.result.failed;
      return;
    }
    auto c = std::make_unique<Call>();
    c->fd = fd;
    c->cls = cls;
    std::string body = body_for(o.classes[cls].name);
    c->out = "POST " + o.path + " HTTP/1.1\r\nHost: " + o.host + "\r\nContent-Type: application/json\r\nConnection: close\r\nX-Priority: " +
             o.classes[cls].name + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    c->sent_at = Clock::now();
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    open[fd] = std::move(c);
  };

  Clock::time_point start = Clock::now();
  Clock::time_point stop_arrivals = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.duration_seconds));
  Clock::time_point give_up = stop_arrivals + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.drain_seconds));
  Clock::time_point next_arrival = start;
  std::vector<epoll_event> events(1024);
  char buf[65536];
  while (true) {
    Clock::time_point now = Clock::now();
    while (next_arrival <= now && next_arrival < stop_arrivals) {
      launch(pick(rng));
      next_arrival += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap(rng)));
    }
    if (now >= stop_arrivals && open.empty()) break;
    if (now >= give_up) break;
    Clock::time_point wake = next_arrival < stop_arrivals ? next_arrival : give_up;
    int timeout_ms = static_cast<int>(std::clamp<double>(std::ceil(seconds_between(now, wake) * 1000), 0, 50));
    int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), timeout_ms);
    for (int i = 0; i < n; ++i) {
      auto it = open.find(events[i].data.fd);
      if (it == open.end()) continue;
      Call& c = *it->second;
      bool done = false;
      if ((events[i].events & EPOLLOUT) && c.out_off < c.out.size()) {
        ssize_t w = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
        if (w > 0) c.out_off += static_cast<std::size_t>(w);
        else if (w < 0 && errno != EAGAIN) done = true;
        if (c.out_off == c.out.size()) {
          epoll_event ev{};
          ev.events = EPOLLIN | EPOLLRDHUP;
          ev.data.fd = c.fd;
          epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
        }
      }
      if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        while (true) {
          ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
          if (r > 0) {
            c.in.append(buf, static_cast<std::size_t>(r));
            continue;
          }
          if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) done = true;
          break;
        }
        scan_events(c);
      }
      if (done) {
        finish(c, true);
        open.erase(it);
      }
    }
  }
  Clock::time_point end = Clock::now();
  for (auto& [fd, c] : open) {
    ++acc[c->cls].result.unfinished;
    ::close(fd);
  }
  ::close(ep);

  LoadResult out;
  out.offered_rate = o.rate;
  out.elapsed_seconds = seconds_between(start, end);
  for (auto& a : acc) {
    ClassResult r = a.result;
    r.e2e = percentiles(a.e2e);
    r.ttft = percentiles(a.ttft);
    r.itl = percentiles(a.itl);
    r.retry_after = percentiles(a.retry_after);
    // Rates over the arrival period: what the server sustained while load was offered.
    r.throughput = static_cast<double>(r.ok) / o.duration_seconds;
    r.goodput = static_cast<double>(r.good) / o.duration_seconds;
    out.classes.push_back(r);
  }
  return out;
}

std::string to_json(const LoadResult& r) {
  auto pct = [](const Percentiles& p) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "{\"n\":%zu,\"p50\":%.6f,\"p95\":%.6f,\"p99\":%.6f}", p.n, p.p50, p.p95, p.p99);
    return std::string(buf);
  };
  char head[128];
  std::snprintf(head, sizeof head, "{\"offered_rate\":%.3f,\"elapsed_seconds\":%.3f,\"classes\":[", r.offered_rate, r.elapsed_seconds);
  std::string out = head;
  for (std::size_t i = 0; i < r.classes.size(); ++i) {
    const ClassResult& c = r.classes[i];
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s{\"class\":\"%s\",\"sent\":%zu,\"ok\":%zu,\"rejected_429\":%zu,\"timeout_504\":%zu,\"other_errors\":%zu,"
                  "\"failed\":%zu,\"unfinished\":%zu,\"dropped\":%zu,\"good\":%zu,\"slo_seconds\":%.3f,\"throughput\":%.3f,"
                  "\"goodput\":%.3f,",
                  i ? "," : "", json_escape(c.name).c_str(), c.sent, c.ok, c.rejected_429, c.timeout_504, c.other_errors, c.failed,
                  c.unfinished, c.dropped, c.good, c.slo_seconds, c.throughput, c.goodput);
    out += buf;
    out += "\"e2e\":" + pct(c.e2e) + ",\"ttft\":" + pct(c.ttft) + ",\"itl\":" + pct(c.itl) + ",\"retry_after\":" + pct(c.retry_after) + "}";
  }
  return out + "]}";
}

}  // namespace sluice::bench
