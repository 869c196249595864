#include "apps/loadgen/load_generator.h"

#include "apps/loadgen/http_response.h"

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
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace sluice::loadgen {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

struct Call {
  int fd = -1;
  std::size_t cls = 0;
  int client = -1;  // closed loop: which client sent it; -1 in the open loop
  std::size_t item = 0;  // the workload line it asks (with a workload)
  std::string out;
  std::size_t out_off = 0;
  std::string in;
  std::size_t scanned = 0;  // SSE scan position in `in`
  Clock::time_point sent_at;
  Clock::time_point last_event_at;
  bool first_token_seen = false;
  std::vector<double> itl;
  double ttft = -1;
  std::size_t chunks = 0;       // SSE content chunks
  long usage_tokens = -1;       // completion_tokens of the usage chunk, when one came
  long prompt_tokens = 0;       // prompt_tokens of the usage chunk
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

Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// splitmix64's finaliser: consecutive inputs give unrelated outputs.
std::uint64_t scrambled(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The HTTP side shared by both loops: one epoll set of non-blocking connections, one request
// each, with the SSE scan and the per-class accounting. The loops decide when to launch.
class HttpLoad {
 public:
  explicit HttpLoad(const LoadOptions& o) : o_(o), acc_(o.classes.size()), tally_(o.workload, o.cache_stages) {
    if (o.classes.empty()) throw std::invalid_argument("no classes in the mix");
    addr_.sin_family = AF_INET;
    addr_.sin_port = htons(static_cast<std::uint16_t>(o.port));
    if (inet_pton(AF_INET, o.host.c_str(), &addr_.sin_addr) != 1) {
      throw std::invalid_argument("--target: the host must be an IPv4 address, got '" + o.host + "'");
    }
    for (std::size_t i = 0; i < o.classes.size(); ++i) {
      acc_[i].result.name = o.classes[i].name;
      acc_[i].result.slo_seconds = o.classes[i].slo_seconds;
    }
    ep_ = epoll_create1(0);
    if (ep_ < 0) throw std::runtime_error("sluice bench: epoll_create1 failed: " + std::string(std::strerror(errno)));
  }
  ~HttpLoad() {
    for (auto& [fd, c] : open_) ::close(fd);
    ::close(ep_);
  }
  HttpLoad(const HttpLoad&) = delete;
  HttpLoad& operator=(const HttpLoad&) = delete;

  std::size_t open_count() const { return open_.size(); }
  // Whether there is a next request to send: always, unless a workload's lines are all sent.
  bool more() const { return o_.workload.empty() || requests_ < o_.workload.size(); }
  const WorkloadResult& workload() const { return tally_.result(); }

  // Sends one request of class `cls`; false when it failed before reaching the wire (counted).
  bool launch(std::size_t cls, int client) {
    ClassAccumulator& a = acc_[cls];
    ++a.result.sent;
    if (static_cast<int>(open_.size()) >= o_.max_open) {
      ++a.result.dropped;
      return false;
    }
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      ++a.result.failed;
      return false;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr_), sizeof addr_);
    if (rc < 0 && errno != EINPROGRESS) {
      ::close(fd);
      ++a.result.failed;
      return false;
    }
    auto c = std::make_unique<Call>();
    c->fd = fd;
    c->cls = cls;
    c->client = client;
    c->item = static_cast<std::size_t>(requests_);
    std::string body = body_for(++requests_);
    c->out = "POST " + o_.path + " HTTP/1.1\r\nHost: " + o_.host +
             "\r\nContent-Type: application/json\r\nConnection: close\r\nX-Priority: " + o_.classes[cls].name +
             (o_.workload.empty() ? "" : "\r\nX-Sluice-Timings: 1") + "\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\n\r\n" + body;
    c->sent_at = Clock::now();
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
    ev.data.fd = fd;
    epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
    open_[fd] = std::move(c);
    return true;
  }

  // Waits up to timeout_ms for socket events; each answer that ends is accounted, then handed
  // to on_done (with whether it reached an HTTP status) before its connection is forgotten.
  template <class OnDone>
  void poll(int timeout_ms, OnDone&& on_done) {
    int n = epoll_wait(ep_, events_.data(), static_cast<int>(events_.size()), timeout_ms);
    for (int i = 0; i < n; ++i) {
      auto it = open_.find(events_[i].data.fd);
      if (it == open_.end()) continue;
      Call& c = *it->second;
      bool done = false;
      if ((events_[i].events & EPOLLOUT) && c.out_off < c.out.size()) {
        ssize_t w = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
        if (w > 0) c.out_off += static_cast<std::size_t>(w);
        else if (w < 0 && errno != EAGAIN) done = true;
        if (c.out_off == c.out.size()) {
          epoll_event ev{};
          ev.events = EPOLLIN | EPOLLRDHUP;
          ev.data.fd = c.fd;
          epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &ev);
        }
      }
      if (events_[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        while (true) {
          ssize_t r = ::recv(c.fd, buf_, sizeof buf_, 0);
          if (r > 0) {
            c.in.append(buf_, static_cast<std::size_t>(r));
            continue;
          }
          if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) done = true;
          break;
        }
        scan_events(c);
      }
      if (done) {
        bool answered = finish(c);
        std::unique_ptr<Call> call = std::move(it->second);
        open_.erase(it);
        on_done(*call, answered);
      }
    }
  }

  // Per-class results; `rate_seconds` is what the rates are per.
  std::vector<ClassResult> results(double rate_seconds) {
    for (auto& [fd, c] : open_) ++acc_[c->cls].result.unfinished;
    std::vector<ClassResult> out;
    for (auto& a : acc_) {
      ClassResult r = a.result;
      r.e2e = percentiles(a.e2e);
      r.ttft = percentiles(a.ttft);
      r.itl = percentiles(a.itl);
      r.retry_after = percentiles(a.retry_after);
      r.throughput = static_cast<double>(r.ok) / rate_seconds;
      r.goodput = static_cast<double>(r.good) / rate_seconds;
      r.output_tokens_per_second = static_cast<double>(r.output_tokens) / rate_seconds;
      out.push_back(r);
    }
    return out;
  }

 private:
  std::string body_for(std::uint64_t n) const {
    std::string body = "{\"model\":\"sluice\",\"max_tokens\":" + std::to_string(o_.max_tokens);
    if (o_.temperature) {
      char t[48];
      std::snprintf(t, sizeof t, ",\"temperature\":%g", *o_.temperature);
      body += t;
    }
    body += o_.stream ? ",\"stream\":true,\"stream_options\":{\"include_usage\":true}" : ",\"stream\":false";
    std::string distinct;
    if (o_.distinct_prompts) {
      char tag[24];
      std::snprintf(tag, sizeof tag, "%08llx: ", static_cast<unsigned long long>(scrambled(run_id_ + n) & 0xffffffffu));
      distinct = tag;
    }
    const std::string& prompt = o_.workload.empty() ? o_.prompt : o_.workload[(n - 1) % o_.workload.size()].prompt;
    return body + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + distinct + json_escape(prompt) + "\"}]}";
  }

  // Accounts the ended call; true when the server answered with an HTTP status.
  bool finish(Call& c) {
    ClassAccumulator& a = acc_[c.cls];
    Clock::time_point now = Clock::now();
    int status = status_of(c.in);
    double e2e = seconds_between(c.sent_at, now);
    if (status == 0) {
      ++a.result.failed;
    } else if (status == 200) {
      bool stream_error = o_.stream && c.in.find("\"error\"") != std::string::npos;
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
        a.result.content_chunks += c.chunks;
        a.result.prompt_tokens += static_cast<std::size_t>(c.prompt_tokens);
        a.result.output_tokens += c.usage_tokens >= 0 ? static_cast<std::size_t>(c.usage_tokens) : c.chunks;
        if (a.result.slo_seconds <= 0 || e2e <= a.result.slo_seconds) ++a.result.good;
        if (!o_.workload.empty()) tally_.add(c.item, read_answer(c.in, o_.stream));
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
    epoll_ctl(ep_, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    return status != 0;
  }

  // Looks for newly arrived SSE data events to stamp TTFT/ITL. A content chunk (chat "delta"
  // or completion "text") is the one whose finish_reason is still null; the usage chunk
  // carries completion_tokens.
  void scan_events(Call& c) {
    if (!o_.stream) return;
    Clock::time_point now = Clock::now();
    while (true) {
      std::size_t at = c.in.find("data: {", c.scanned);
      if (at == std::string::npos) break;
      std::size_t end = c.in.find('\n', at);
      if (end == std::string::npos) break;
      c.scanned = end;
      std::string_view line(c.in.data() + at, end - at);
      if (auto u = line.find("\"completion_tokens\":"); u != std::string_view::npos) {
        c.usage_tokens = std::atol(c.in.c_str() + at + u + 20);
        if (auto pt = line.find("\"prompt_tokens\":"); pt != std::string_view::npos) c.prompt_tokens = std::atol(c.in.c_str() + at + pt + 16);
        continue;
      }
      if (line.find("\"finish_reason\":null") == std::string_view::npos) continue;
      ++c.chunks;
      if (!c.first_token_seen) {
        c.first_token_seen = true;
        c.ttft = seconds_between(c.sent_at, now);
      } else {
        c.itl.push_back(seconds_between(c.last_event_at, now));
      }
      c.last_event_at = now;
    }
  }

  const LoadOptions& o_;
  // Numbers the distinct prompts: a run starts from its clock reading (in ms), so runs and
  // levels one after another against the same server do not repeat each other's prompts;
  // the number is scrambled so that consecutive requests differ from their first character
  // (a counter's shared leading digits would be a shared prefix).
  const std::uint64_t run_id_ = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count() % 100000000 * 1000);
  std::uint64_t requests_ = 0;
  sockaddr_in addr_{};
  int ep_ = -1;
  std::vector<ClassAccumulator> acc_;
  WorkloadTally tally_;
  std::unordered_map<int, std::unique_ptr<Call>> open_;
  std::vector<epoll_event> events_ = std::vector<epoll_event>(1024);
  char buf_[65536];
};

// Milliseconds to wait for socket events before `wake`, at most 50 so the clock is re-read.
int wait_ms(Clock::time_point now, Clock::time_point wake) {
  return static_cast<int>(std::clamp<double>(std::ceil(seconds_between(now, wake) * 1000), 0, 50));
}

std::discrete_distribution<std::size_t> class_picker(const LoadOptions& o) {
  std::vector<double> weights;
  for (const auto& c : o.classes) weights.push_back(c.weight);
  return std::discrete_distribution<std::size_t>(weights.begin(), weights.end());
}

}  // namespace

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  p.n = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))]; };
  p.p50 = at(0.50);
  p.p95 = at(0.95);
  p.p99 = at(0.99);
  return p;
}

LoadResult run_open_loop(const LoadOptions& o) {
  if (o.rate <= 0) throw std::invalid_argument("--rate must be positive");
  HttpLoad load(o);
  std::mt19937_64 rng(o.seed);
  std::exponential_distribution<double> gap(o.rate);
  auto pick = class_picker(o);

  Clock::time_point start = Clock::now();
  Clock::time_point stop_arrivals = start + to_duration(o.duration_seconds);
  Clock::time_point give_up = stop_arrivals + to_duration(o.drain_seconds);
  Clock::time_point next_arrival = start;
  while (true) {
    Clock::time_point now = Clock::now();
    while (next_arrival <= now && next_arrival < stop_arrivals && load.more()) {
      load.launch(pick(rng), -1);
      next_arrival += to_duration(gap(rng));
    }
    if (!load.more() && now < stop_arrivals) {
      stop_arrivals = now;  // a workload's last line is sent: the drain starts
      give_up = now + to_duration(o.drain_seconds);
    }
    if (now >= stop_arrivals && load.open_count() == 0) break;
    if (now >= give_up) break;
    load.poll(wait_ms(now, next_arrival < stop_arrivals ? next_arrival : give_up), [](const Call&, bool) {});
  }
  LoadResult out;
  out.offered_rate = o.rate;
  out.elapsed_seconds = seconds_between(start, Clock::now());
  out.classes = load.results(std::max(1e-3, seconds_between(start, stop_arrivals)));
  out.workload = load.workload();
  return out;
}

LoadResult run_closed_loop(const LoadOptions& o) {
  if (o.concurrency < 1) throw std::invalid_argument("--concurrency: each level must be at least 1, got " + std::to_string(o.concurrency));
  if (!o.stream) throw std::invalid_argument("--concurrency: the closed loop measures streams; it needs stream on");
  HttpLoad load(o);
  std::mt19937_64 rng(o.seed);
  auto pick = class_picker(o);

  // A client whose request never reached a server (refused connection) waits a little before
  // its next one, so a server that is down yields a count of failures, not a busy loop.
  constexpr double kFailedPauseSeconds = 0.1;
  Clock::time_point start = Clock::now();
  Clock::time_point stop = start + to_duration(o.duration_seconds);
  Clock::time_point give_up = stop + to_duration(o.drain_seconds);
  std::vector<Clock::time_point> next_send(static_cast<std::size_t>(o.concurrency), start);
  std::vector<bool> in_flight(next_send.size(), false);
  while (true) {
    Clock::time_point now = Clock::now();
    Clock::time_point wake = give_up;
    if (!load.more() && now < stop) {
      stop = now;  // a workload's last line is sent: the answers in flight finish
      give_up = now + to_duration(o.drain_seconds);
    }
    for (std::size_t i = 0; i < next_send.size(); ++i) {
      if (in_flight[i] || now >= stop || !load.more()) continue;
      if (next_send[i] <= now) {
        if (load.launch(pick(rng), static_cast<int>(i))) in_flight[i] = true;
        else next_send[i] = now + to_duration(kFailedPauseSeconds);
      }
      if (!in_flight[i]) wake = std::min(wake, next_send[i]);
    }
    if (now >= stop && load.open_count() == 0) break;
    if (now >= give_up) break;
    load.poll(wait_ms(now, wake), [&](const Call& c, bool answered) {
      auto i = static_cast<std::size_t>(c.client);
      in_flight[i] = false;
      next_send[i] = answered ? Clock::now() : Clock::now() + to_duration(kFailedPauseSeconds);
    });
  }
  LoadResult out;
  out.concurrency = o.concurrency;
  out.elapsed_seconds = seconds_between(start, Clock::now());
  out.classes = load.results(out.elapsed_seconds);
  out.workload = load.workload();
  return out;
}

std::string probe_target(const LoadOptions& o) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(o.port));
  if (inet_pton(AF_INET, o.host.c_str(), &addr.sin_addr) != 1) return "the host must be an IPv4 address, got '" + o.host + "'";
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::strerror(errno);
  timeval timeout{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);  // bounds connect()
  const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int err = errno;
  ::close(fd);
  if (rc == 0) return "";
  return err == EINPROGRESS || err == EAGAIN ? "no answer within 2 s" : std::strerror(err);
}

std::string to_json(const LoadResult& r) {
  auto pct = [](const Percentiles& p) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "{\"n\":%zu,\"mean\":%.6f,\"p50\":%.6f,\"p95\":%.6f,\"p99\":%.6f}", p.n, p.mean, p.p50, p.p95, p.p99);
    return std::string(buf);
  };
  char head[160];
  std::snprintf(head, sizeof head, "{\"offered_rate\":%.3f,\"concurrency\":%d,\"elapsed_seconds\":%.3f,\"classes\":[", r.offered_rate,
                r.concurrency, r.elapsed_seconds);
  std::string out = head;
  for (std::size_t i = 0; i < r.classes.size(); ++i) {
    const ClassResult& c = r.classes[i];
    char buf[1024];
    std::snprintf(buf, sizeof buf,
                  "%s{\"class\":\"%s\",\"sent\":%zu,\"ok\":%zu,\"rejected_429\":%zu,\"timeout_504\":%zu,\"other_errors\":%zu,"
                  "\"failed\":%zu,\"unfinished\":%zu,\"dropped\":%zu,\"good\":%zu,\"slo_seconds\":%.3f,\"throughput\":%.3f,"
                  "\"goodput\":%.3f,\"output_tokens\":%zu,\"content_chunks\":%zu,\"prompt_tokens\":%zu,\"output_tokens_per_second\":%.3f,",
                  i ? "," : "", json_escape(c.name).c_str(), c.sent, c.ok, c.rejected_429, c.timeout_504, c.other_errors, c.failed,
                  c.unfinished, c.dropped, c.good, c.slo_seconds, c.throughput, c.goodput, c.output_tokens, c.content_chunks,
                  c.prompt_tokens, c.output_tokens_per_second);
    out += buf;
    out += "\"e2e\":" + pct(c.e2e) + ",\"ttft\":" + pct(c.ttft) + ",\"itl\":" + pct(c.itl) + ",\"retry_after\":" + pct(c.retry_after) + "}";
  }
  out += "]";
  if (r.workload.answers > 0) out += ",\"workload\":" + to_json(r.workload);
  return out + "}";
}

}  // namespace sluice::loadgen
