// OpenLoopLoad: an open-loop HTTP load generator for OpenAI-compatible endpoints (the engine
// of `sluice bench`).
//
// Arrivals are Poisson (exponential gaps from a seeded generator) at a fixed offered rate,
// whatever the server does: a slow server does not slow the generator down, which is what
// makes overload visible. Each request picks a priority class by the mix weights and is sent
// with an X-Priority header on its own connection (Connection: close) from one epoll thread.
// Per class it records: 200s, 429s (and their Retry-After), 504s, other errors, connection
// failures, end-to-end time, and for streams TTFT and inter-token latency from SSE events.
// Goodput counts 200s whose end-to-end time is within the class's SLO.
//
// Not thread-safe: run() from one thread. Bounded: at most `max_open` connections; arrivals
// past it count as client-side drops (reported) rather than growing without limit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sluice::bench {

struct ClassLoad {
  std::string name;  // X-Priority value
  double weight = 1;
  double slo_seconds = 0;  // goodput threshold on end-to-end time; 0 = every 200 counts
};

struct LoadOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string path = "/v1/chat/completions";
  double rate = 10;            // offered requests per second, all classes together
  double duration_seconds = 10;
  double drain_seconds = 30;   // after the last arrival, how long to wait for answers
  std::vector<ClassLoad> classes;
  bool stream = false;
  int max_tokens = 16;
  std::string prompt = "hello";
  std::uint64_t seed = 1;
  int max_open = 20000;
};

struct Percentiles {
  double p50 = 0, p95 = 0, p99 = 0;
  std::size_t n = 0;
};
Percentiles percentiles(std::vector<double> v);

struct ClassResult {
  std::string name;
  std::size_t sent = 0, ok = 0, rejected_429 = 0, timeout_504 = 0, other_errors = 0, failed = 0, unfinished = 0, dropped = 0;
  std::size_t good = 0;  // ok within SLO
  double slo_seconds = 0;
  double throughput = 0;  // ok per second of the measurement
  double goodput = 0;     // good per second
  Percentiles e2e, ttft, itl, retry_after;
};

struct LoadResult {
  double offered_rate = 0;
  double elapsed_seconds = 0;
  std::vector<ClassResult> classes;
};

LoadResult run_open_loop(const LoadOptions& options);

// JSON text of one result (an object) for the bench's output file.
std::string to_json(const LoadResult& r);

}  // namespace sluice::bench
