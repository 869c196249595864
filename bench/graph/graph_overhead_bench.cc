// Graph overhead: a 10-node linear pipeline of no-op nodes through the Sluice runtime
// (envelope, trace stamps, stage metrics, exactly-once completion) against a bare oneTBB
// graph of 10 no-op function_nodes passing shared pointers, side by side in one process.
//
//   graph_overhead_bench [--requests N] [--reps R] [--latency-samples M] [--only bare|sluice] [--chain 0|1]
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

std::string pipeline_yaml() {
  std::string y = std::string("name: overhead\nruntime: {max_in_flight: 8192, chain_stages: ") + (g_chain ? "true" : "false") +
                  "}\nsources: [{name: in, kind: http}]\nnodes:\n";
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
  Ours() {
    sluice::register_builtin_nodes(reg);
    reg.add(sluice::NodeKind{"bench_answer", "bench", {"request"}, {"answer"}, false,
                             [](const sluice::NodeSpec&, const sluice::NodeContext& c) { return std::make_unique<AnswerNode>(c.clock); }});
    auto spec = sluice::load_and_validate_text(pipeline_yaml(), "overhead.yaml", reg);
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

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t requests = 200000;
  int reps = 5, samples = 20000;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
    if (!std::strcmp(argv[i], "--chain")) g_chain = std::strcmp(argv[i + 1], "0") != 0;
    if (!std::strcmp(argv[i], "--requests")) requests = std::stoull(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--latency-samples")) samples = std::stoi(argv[i + 1]);
  }
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
