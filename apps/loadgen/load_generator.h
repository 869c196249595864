// The load generator behind `sluice bench`, for OpenAI-compatible endpoints over HTTP.
//
// Two ways to offer load, sharing one epoll HTTP client, SSE scanner and result shape:
// - open loop (run_open_loop): arrivals are Poisson (exponential gaps from a seeded generator)
//   at a fixed offered rate, whatever the server does: a slow server does not slow the
//   generator down, which is what makes overload visible;
// - closed loop (run_closed_loop): `concurrency` clients, each sending its next request as soon
//   as its previous answer ended, for `duration_seconds`; then the answers in flight are
//   awaited (up to `drain_seconds`). It measures what N concurrent users see: TTFT,
//   inter-token latency and the aggregate tokens/s the server sustains at that concurrency.
// Each request picks a priority class by the mix weights and is sent with an X-Priority header
// on its own connection (Connection: close). Per class it records: 200s, 429s (and their
// Retry-After), 504s, other errors, connection failures, end-to-end time, and for streams TTFT,
// inter-token latency (the gap between consecutive SSE content chunks) and output tokens (the
// usage chunk's completion_tokens, asked for with stream_options.include_usage; the count of
// content chunks when a server sends no usage) and prompt tokens. Goodput counts 200s whose end-to-end time is
// within the class's SLO.
//
// Not thread-safe: run either from one thread. Bounded: at most `max_open` connections;
// arrivals past it count as client-side drops (reported) rather than growing without limit.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "apps/loadgen/workload.h"

namespace sluice::loadgen {

struct ClassLoad {
  std::string name;  // X-Priority value
  double weight = 1;
  double slo_seconds = 0;  // goodput threshold on end-to-end time; 0 = every 200 counts
};

struct LoadOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string path = "/v1/chat/completions";
  double rate = 10;            // open loop: offered requests per second, all classes together
  int concurrency = 0;         // closed loop: clients, each with one request in flight
  double duration_seconds = 10;
  double drain_seconds = 30;   // after the last arrival, how long to wait for answers
  std::vector<ClassLoad> classes;
  bool stream = false;
  int max_tokens = 16;
  std::string prompt = "hello";
  std::optional<double> temperature;  // sent as "temperature" when set (0: greedy)
  // Put a number unique to the run and request in front of each prompt, so no two requests
  // share a prompt prefix (a server's prefix cache cannot skip the prefill); off sends the
  // same prompt every time, which a prefix cache serves from its second request on.
  bool distinct_prompts = false;
  // A replayed workload (workload.h) instead of `prompt`: request n asks line n, and arrivals
  // stop after the last line (or at duration_seconds). Requests ask for their stage timings,
  // and each answer is tallied: which stage completed it, hits of `cache_stages`, false hits.
  std::vector<WorkloadItem> workload;
  std::vector<std::string> cache_stages;
  std::uint64_t seed = 1;
  int max_open = 20000;
};

struct Percentiles {
  double mean = 0, p50 = 0, p95 = 0, p99 = 0;
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
  std::size_t output_tokens = 0;   // streams: summed over ok answers (usage, else content chunks)
  std::size_t content_chunks = 0;  // streams: SSE content chunks of ok answers
  std::size_t prompt_tokens = 0;   // streams: the usage chunks' prompt_tokens of ok answers
  double output_tokens_per_second = 0;
  Percentiles e2e, ttft, itl, retry_after;
};

// Rates (throughput, goodput, output tokens/s) are over the arrival period for the open loop
// (what the server sustained while load was offered) and over the whole run, drain included,
// for the closed loop (every answer counted was produced within it).
struct LoadResult {
  double offered_rate = 0;  // open loop
  int concurrency = 0;      // closed loop; 0 for the open loop
  double elapsed_seconds = 0;
  std::vector<ClassResult> classes;
  WorkloadResult workload;  // with LoadOptions::workload; all classes together
};

// Connects once to options.host:port (blocking, up to 2 s): "" when the server accepts, else why
// not ("connection refused"), so a bench against no server fails at once instead of reporting
// every request as an error.
std::string probe_target(const LoadOptions& options);

LoadResult run_open_loop(const LoadOptions& options);
// Needs options.concurrency >= 1 and options.stream (TTFT and inter-token latency are the point).
LoadResult run_closed_loop(const LoadOptions& options);

// JSON text of one result (an object) for the bench's output file.
std::string to_json(const LoadResult& r);

}  // namespace sluice::loadgen
