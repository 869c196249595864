// Graph overhead: a 10-node linear pipeline of no-op nodes through the Sluice runtime
// (envelope, trace stamps, stage metrics, exactly-once completion) against a bare oneTBB
// graph of 10 no-op function_nodes passing shared pointers, side by side in one process.
//
//   graph_overhead_bench [--requests N] [--reps R] [--latency-samples M] [--only bare|sluice] [--chain 0|1]
//   graph_overhead_bench --tracing 1 [--requests N] [--reps R]
//
// --only runs one side alone (for profiling it; no ratio is printed). --chain 0 turns the
// runtime's stage chaining off (runtime.chain_stages: false), so each of the 10 nodes is its
// own tbb node as in the bare graph; the default (1) is what a pipeline file gets.
//
// Throughput: one producer thread puts N messages as fast as it can (Sluice's producer stays
// within an admission window of 8,000 requests, as a client honouring 429s would; the bare
// graph has no admission); the rate is N over the time until all have left the last node. Latency: one message at a time (closed loop), the
// median end-to-end time; the runtime's added latency per hop is (ours - bare) / 10.
// Prints medians of R alternating repetitions.
//
// --tracing 1 measures what tracing costs instead: the same Sluice pipeline four times, tracing
// off and tracing on (TracingSpec) with sample_ratio 0, 0.01 and 1, exporting to an OTLP/HTTP
// receiver on loopback in the process (it answers 200 and counts), throughput side by side in
// repetitions that run each variant once (in an order that rotates), each variant's rate as a
// ratio of tracing off's in the same repetition; medians, and the spans each variant exported
// and dropped.
#include <oneapi/tbb/flow_graph.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "graph/monotonic_time.h"
#include "graph/pipeline.h"
#include "graph/spec_validator.h"
#include "nodes/builtin_nodes.h"
#include "tests/support/loopback_receiver.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kNodes = 10;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Payload {
  std::uint64_t id;
};

// ---- bare oneTBB: 10 function_nodes, unlimited concurrency, shared_ptr messages.
struct Bare {
  tbb::flow::graph g;
  std::vector<std::unique_ptr<tbb::flow::function_node<std::shared_ptr<Payload>, std::shared_ptr<Payload>>>> nodes;
  std::unique_ptr<tbb::flow::function_node<std::shared_ptr<Payload>, tbb::flow::continue_msg>> last;
  // On a cache line of its own: the worker bumps it per request while the producer reads the
  // members around it on every put.
  alignas(64) std::atomic<std::uint64_t> done{0};
  char done_pad[64 - sizeof(std::atomic<std::uint64_t>)];
  Bare() {
    for (int i = 0; i < kNodes - 1; ++i) {
      nodes.push_back(std::make_unique<tbb::flow::function_node<std::shared_ptr<Payload>, std::shared_ptr<Payload>>>(
          g, tbb::flow::unlimited, [](std::shared_ptr<Payload> p) { return p; }));
      if (i > 0) tbb::flow::make_edge(*nodes[i - 1], *nodes[i]);
    }
    last = std::make_unique<tbb::flow::function_node<std::shared_ptr<Payload>, tbb::flow::continue_msg>>(
        g, tbb::flow::unlimited, [this](std::shared_ptr<Payload>) {
          done.fetch_add(1, std::memory_order_release);
          return tbb::flow::continue_msg();
        });
    tbb::flow::make_edge(*nodes.back(), *last);
  }
  void put(std::uint64_t id) { nodes.front()->try_put(std::make_shared<Payload>(Payload{id})); }
};

// ---- Sluice: 9 passthrough nodes and one that answers.
class CountingSink : public sluice::ResponseSink {
 public:
  explicit CountingSink(std::atomic<std::uint64_t>* done) : done_(done) {}
  void on_token(std::string_view) override {}
  void on_complete(const sluice::Request& r) override {
    if (!r.status().ok()) std::fprintf(stderr, "request failed: %s\n", r.status().message.c_str());
    done_->fetch_add(1, std::memory_order_release);
  }
  std::atomic<std::uint64_t>* done_;
};

class AnswerNode : public sluice::SyncNode {
 public:
  explicit AnswerNode(sluice::Clock* c) : clock_(c) {}
  void process(sluice::Batch& b) override {
    for (auto& r : b.requests) r->complete(sluice::Status::Ok(), clock_->now());
  }
  sluice::Clock* clock_;
};

bool g_chain = true;  // --chain 0: every node its own tbb node (runtime.chain_stages: false)

// `tracing`: a TracingSpec in flow style, or empty for none.
std::string pipeline_yaml(const std::string& tracing) {
  std::string y = std::string("name: overhead\nruntime: {max_in_flight: 8192, chain_stages: ") + (g_chain ? "true" : "false") +
                  "}\n" + (tracing.empty() ? "" : "tracing: " + tracing + "\n") +
                  "sources: [{name: in, kind: http}]\nnodes:\n";
  for (int i = 0; i < kNodes - 1; ++i) y += "  - {name: n" + std::to_string(i) + ", kind: passthrough}\n";
  y += "  - {name: answer, kind: bench_answer}\nedges:\n  - {from: in, to: n0}\n";
  for (int i = 1; i < kNodes - 1; ++i) y += "  - {from: n" + std::to_string(i - 1) + ", to: n" + std::to_string(i) + "}\n";
  y += "  - {from: n" + std::to_string(kNodes - 2) + ", to: answer}\n";
  return y;
}

struct Ours {
  sluice::NodeRegistry reg;
  sluice::MetricsRegistry metrics;
  std::unique_ptr<sluice::Pipeline> pipeline;
  // On a cache line of its own: the worker bumps it per request while the producer reads the
  // members around it on every put.
  alignas(64) std::atomic<std::uint64_t> done{0};
  char done_pad[64 - sizeof(std::atomic<std::uint64_t>)];
  std::shared_ptr<CountingSink> sink;
  explicit Ours(const std::string& tracing = "") {
    sluice::register_builtin_nodes(reg);
    reg.add(sluice::NodeKind{"bench_answer", "bench", {"request"}, {"answer"}, false,
                             [](const sluice::NodeSpec&, const sluice::NodeContext& c) { return std::make_unique<AnswerNode>(c.clock); }});
    auto spec = sluice::load_and_validate_text(pipeline_yaml(tracing), "overhead.yaml", reg);
    pipeline = sluice::Pipeline::build(spec, reg, {&sluice::SteadyClock::instance(), &metrics});
    pipeline->start();
    sink = std::make_shared<CountingSink>(&done);
  }
  ~Ours() { pipeline->drain(sluice::kNanosPerSecond); }
  void put(std::uint64_t) {
    // A well-behaved producer stays within the admission window instead of being refused.
    while (pipeline->in_flight() >= 8000) std::this_thread::yield();
    sluice::RequestInput in;
    // Each request gets a non-owning handle to the bench's one sink: a server's requests each
    // have their own sink, so one reference count shared by every request (a cache line
    // bouncing between the producer and the worker) would measure the bench, not the runtime.
    auto r = std::make_shared<sluice::Request>(pipeline->next_request_id(), std::move(in),
                                               std::shared_ptr<sluice::ResponseSink>(std::shared_ptr<void>(), sink.get()));
    pipeline->submit("in", r);
  }
};

template <class G>
double throughput(G& g, std::uint64_t n) {
  std::uint64_t before = g.done.load();
  auto t0 = Clock::now();
  for (std::uint64_t i = 0; i < n; ++i) g.put(i);
  while (g.done.load(std::memory_order_acquire) < before + n) std::this_thread::sleep_for(std::chrono::microseconds(50));
  return n / std::chrono::duration<double>(Clock::now() - t0).count();
}

template <class G>
double latency_us(G& g, int samples) {
  std::vector<double> lat;
  for (int i = 0; i < samples; ++i) {
    std::uint64_t before = g.done.load();
    auto t0 = Clock::now();
    g.put(i);
    while (g.done.load(std::memory_order_acquire) == before) {
    }
    lat.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return median(lat);
}

// Which malloc the process runs on (both graphs share it): the sluice command's, unless the
// build turned SLUICE_SCALABLE_MALLOC off.
const char* allocator() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libtbbmalloc_proxy") != std::string::npos) return "tbbmalloc_proxy";
  }
  return "glibc";
}

// --tracing 1: tracing off against sample ratios 0, 0.01 and 1.
int tracing_sweep(std::uint64_t requests, int reps) {
  sluice::testing::LoopbackReceiver collector({}, /*keep=*/false);
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"off", ""},
      {"ratio 0", "{endpoint: '" + collector.url("/v1/traces") + "', sample_ratio: 0}"},
      {"ratio 0.01", "{endpoint: '" + collector.url("/v1/traces") + "', sample_ratio: 0.01}"},
      {"ratio 1", "{endpoint: '" + collector.url("/v1/traces") + "', sample_ratio: 1}"}};
  std::vector<std::unique_ptr<Ours>> graphs;
  for (const auto& [name, tracing] : variants) graphs.push_back(std::make_unique<Ours>(tracing));
  for (auto& g : graphs) throughput(*g, requests / 10);  // warm
  std::vector<std::vector<double>> rate(variants.size()), ratio(variants.size());
  for (int r = 0; r < reps; ++r) {
    // The order rotates each repetition: whatever running later in a repetition does to a
    // variant (a warmer allocator, a neighbour's burst) falls on each in turn.
    std::vector<double> this_rep(variants.size());
    for (std::size_t k = 0; k < variants.size(); ++k) {
      const std::size_t v = (k + static_cast<std::size_t>(r)) % variants.size();
      this_rep[v] = throughput(*graphs[v], requests);
    }
    for (std::size_t v = 0; v < variants.size(); ++v) rate[v].push_back(this_rep[v]);
    std::fprintf(stderr, "rep %d:", r + 1);
    for (std::size_t v = 0; v < variants.size(); ++v) {
      ratio[v].push_back(rate[v].back() / rate[0].back());
      std::fprintf(stderr, " %s %.0f/s (%.3f)", variants[v].first.c_str(), rate[v].back(), ratio[v].back());
    }
    std::fprintf(stderr, "\n");
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the last flush (flush_interval 1s)
  std::printf("malloc: %s; runtime clock: %s; stage chaining: %s; %d repetitions of %llu requests\n\n", allocator(),
              sluice::monotonic_time_source(), g_chain ? "on" : "off", reps, static_cast<unsigned long long>(requests));
  std::printf("| tracing | requests/s (median) | ratio to off (median) | spans exported | spans dropped (queue full) |\n");
  std::printf("| --- | --- | --- | --- | --- |\n");
  for (std::size_t v = 0; v < variants.size(); ++v) {
    sluice::MetricsRegistry& m = graphs[v]->metrics;
    std::printf("| %s | %.0f | %.3f | %.0f | %.0f |\n", variants[v].first.c_str(), median(rate[v]), median(ratio[v]),
                m.counter("sluice_tracing_spans_exported_total", "").value(),
                m.counter("sluice_tracing_spans_dropped_total", "", {{"reason", "queue_full"}}).value());
  }
  std::printf("\nexport requests the receiver took: %zu\n", collector.received());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t requests = 200000;
  int reps = 5, samples = 20000;
  std::string only;
  bool tracing = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
    if (!std::strcmp(argv[i], "--tracing")) tracing = std::strcmp(argv[i + 1], "0") != 0;
    if (!std::strcmp(argv[i], "--chain")) g_chain = std::strcmp(argv[i + 1], "0") != 0;
    if (!std::strcmp(argv[i], "--requests")) requests = std::stoull(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--latency-samples")) samples = std::stoi(argv[i + 1]);
  }
  if (tracing) return tracing_sweep(requests, reps);
  if (!only.empty()) {
    if (only != "bare" && only != "sluice") {
      std::fprintf(stderr, "--only takes bare or sluice, not '%s'\n", only.c_str());
      return 2;
    }
    auto run = [&](auto& g) {
      throughput(g, requests / 10);
      for (int r = 0; r < reps; ++r) std::printf("%s rep %d: %.0f requests/s\n", only.c_str(), r + 1, throughput(g, requests));
    };
    if (only == "bare") {
      Bare bare;
      run(bare);
    } else {
      Ours ours;
      run(ours);
    }
    return 0;
  }
  Bare bare;
  Ours ours;
  throughput(bare, requests / 10);  // warm both
  throughput(ours, requests / 10);
  std::vector<double> bare_rate, ours_rate, ratio, bare_lat, ours_lat;
  for (int r = 0; r < reps; ++r) {
    double b = throughput(bare, requests);
    double o = throughput(ours, requests);
    bare_rate.push_back(b);
    ours_rate.push_back(o);
    ratio.push_back(o / b);
    bare_lat.push_back(latency_us(bare, samples));
    ours_lat.push_back(latency_us(ours, samples));
    std::fprintf(stderr, "rep %d: bare %.0f/s, sluice %.0f/s (%.0f%%); latency bare %.2f us, sluice %.2f us\n", r + 1, b, o,
                 100 * o / b, bare_lat.back(), ours_lat.back());
  }
  double bl = median(bare_lat), ol = median(ours_lat);
  std::printf("malloc: %s; runtime clock: %s; stage chaining: %s\n\n", allocator(), sluice::monotonic_time_source(),
              g_chain ? "on" : "off");
  std::printf("| measure | bare oneTBB | Sluice runtime | ratio |\n| --- | --- | --- | --- |\n");
  std::printf("| throughput, 10 nodes, requests/s (median of %d) | %.0f | %.0f | %.2f |\n", reps, median(bare_rate),
              median(ours_rate), median(ratio));
  std::printf("| end-to-end latency, 10 nodes, one at a time, median us | %.2f | %.2f | |\n", bl, ol);
  std::printf("| added latency per hop, us | | %.2f | |\n", (ol - bl) / kNodes);
  return 0;
}
