// Memory after an overload burst: ten times the admission window driven through a real
// Pipeline (priority_router -> dynamic_batcher -> service_curve), then idle. What the pipeline
// held for the burst must be released once it is over: the live lists' entries
// (sluice_live_list_entries) return to their idle value, and so does the process's resident
// memory, within a margin.
//
// The harness is slow enough that the window fills and sheds on any machine: 4 slots of 1 ms
// serve about 4,800 requests a second in this burst (batches stay near one request: the batcher
// sends what has queued whenever the harness has room), a fifth of what the four producers
// offer. With 4 slots of 200 us it kept up with the producers on a quick CI machine and the
// burst never overloaded anything.
//
// The requests carry 64 KiB prompts, so an envelope kept after its completion is visible in RSS:
// the 2,000 or so that the live lists used to keep after such a burst (graph/live_lists.h) held
// about 130 MiB, against a margin of 32 MiB.
#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "graph/metrics.h"
#include "graph/node_registry.h"
#include "graph/pipeline.h"
#include "graph/request.h"
#include "graph/spec_validator.h"

// Under AddressSanitizer freed memory sits in its quarantine and its allocator keeps the pages
// (malloc_trim does not reach them), so RSS after the burst says nothing about the pipeline; the
// live lists' entries still do, and LeakSanitizer checks the rest at exit.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRssIsTheAllocators = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kRssIsTheAllocators = true;
#else
constexpr bool kRssIsTheAllocators = false;
#endif
#else
constexpr bool kRssIsTheAllocators = false;
#endif

namespace sluice {

void register_admission_nodes(NodeRegistry& registry);

namespace {

constexpr std::size_t kWindow = 1024;  // runtime.max_in_flight below
constexpr std::size_t kRequests = 10 * kWindow;
constexpr std::size_t kPromptBytes = 64 << 10;
constexpr std::size_t kRssMarginBytes = 32u << 20;

// Counts completions; holds nothing of the request (the test must not keep envelopes alive).
class CountingSink : public ResponseSink {
 public:
  explicit CountingSink(std::atomic<std::size_t>* ok, std::atomic<std::size_t>* shed) : ok_(ok), shed_(shed) {}
  void on_token(std::string_view) override {}
  void on_complete(const Request& r) override {
    if (r.status().ok()) ok_->fetch_add(1);
    else if (r.status().code == StatusCode::kOverloaded) shed_->fetch_add(1);
  }

 private:
  std::atomic<std::size_t>* ok_;
  std::atomic<std::size_t>* shed_;
};

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// RSS once freed memory has gone back to the kernel. glibc keeps freed chunks in its arenas
// (one per thread that allocated: the producers, the flow graph's workers, the harness's
// slots) and returns only the top of each heap by itself; malloc_trim(0) gives back every
// whole free page of every arena. Without it the measurement would be of glibc's caching, not
// of what the pipeline still holds.
std::size_t trimmed_resident_bytes() {
  if (!std::getenv("NO_TRIM")) ::malloc_trim(0);
  return resident_bytes();
}

double gauge(const MetricsRegistry& metrics, const std::string& line_prefix) {
  const std::string text = metrics.exposition();
  const std::size_t at = text.find(line_prefix);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + line_prefix.size()));
}

TEST(BurstMemory, TenTimesTheAdmissionWindowThenIdleReleasesWhatTheBurstHeld) {
  NodeRegistry reg;
  register_admission_nodes(reg);
  const std::string yaml = R"(name: burst
runtime: {max_in_flight: )" + std::to_string(kWindow) +
                           R"(, threads: 2}
sources: [{name: api, kind: http}]
nodes:
  - name: router
    kind: priority_router
    config: {max_running: 512, classes: [{name: P0, max_queue: 2048}, {name: P1, max_queue: 2048}, {name: P2, max_queue: 2048}]}
  - name: batch
    kind: dynamic_batcher
    config: {window: 1ms, max_batch: [16, 64]}
  - name: harness
    kind: service_curve
    config: {base_time: 1ms, slots: 4}
edges:
  - {from: api, to: router}
  - {from: router, to: batch}
  - {from: batch, to: harness}
)";
  LoadedSpec spec = load_and_validate_text(yaml, "burst.yaml", reg);
  MetricsRegistry metrics;
  auto pipeline = Pipeline::build(spec, reg, {&SteadyClock::instance(), &metrics});
  pipeline->start();

  std::atomic<std::size_t> ok{0}, shed{0};
  auto sink = std::make_shared<CountingSink>(&ok, &shed);
  RequestInput input;
  input.kind = RequestInput::Kind::kCompletion;
  input.prompt.assign(kPromptBytes, 'x');
  auto submit = [&](int priority) {
    auto r = std::make_shared<Request>(pipeline->next_request_id(), input, sink);
    r->priority = static_cast<std::uint8_t>(priority);
    return pipeline->submit("api", r).ok();
  };
  auto wait_idle = [&](std::size_t expect_ok) {
    for (int i = 0; i < 30000 && (ok.load() < expect_ok || pipeline->in_flight() != 0); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(ok.load(), expect_ok);
    ASSERT_EQ(pipeline->in_flight(), 0u);
  };

  // Idle, after a little light traffic (thread pools, metric rows and arenas exist).
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(submit(i % 3));
    wait_idle(static_cast<std::size_t>(i) + 1);
  }
  const std::size_t idle_entries = pipeline->live_list_entries();
  const std::size_t idle_rss = trimmed_resident_bytes();
  auto t0 = std::chrono::steady_clock::now();

  // The burst: four producers keep the window full, retrying what is shed, until ten windows'
  // worth has been admitted.
  std::atomic<std::size_t> admitted{0};
  std::size_t peak_entries = 0;
  std::vector<std::thread> producers;
  for (int p = 0; p < 4; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; admitted.load() < kRequests; ++i) {
        if (admitted.fetch_add(1) >= kRequests) break;
        while (!submit((p + i) % 3)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  while (admitted.load() < kRequests) {
    peak_entries = std::max(peak_entries, pipeline->live_list_entries());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (auto& t : producers) t.join();
  std::printf("burst %.3f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  const std::size_t burst_rss = resident_bytes();
  wait_idle(64 + kRequests);
  EXPECT_GT(shed.load(), 0u) << "the burst never overloaded the window";
  std::printf("idle %.3f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  // Idle again. The release runs on the completion that empties the pipeline; allow it a
  // moment to finish on its thread.
  std::size_t entries = pipeline->live_list_entries();
  for (int i = 0; i < 1000 && entries > idle_entries + 32; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    entries = pipeline->live_list_entries();
  }
  const std::size_t after_rss = trimmed_resident_bytes();
  std::printf("live list entries: idle %zu, burst peak %zu, after %zu; RSS MiB: idle %.1f, burst %.1f, after %.1f; shed %zu\n",
              idle_entries, peak_entries, entries, idle_rss / 1048576.0, burst_rss / 1048576.0, after_rss / 1048576.0,
              shed.load());
  EXPECT_LE(entries, idle_entries + 32);
  EXPECT_LE(gauge(metrics, "sluice_live_list_entries{pipeline=\"burst\"} "), static_cast<double>(idle_entries + 32));
  if (kRssIsTheAllocators) {
    std::printf("RSS not compared: AddressSanitizer's allocator holds freed memory\n");
  } else {
    EXPECT_LE(after_rss, idle_rss + kRssMarginBytes);
  }
  pipeline->drain(kNanosPerSecond);
  EXPECT_EQ(pipeline->live_list_entries(), 0u);
}

}  // namespace
}  // namespace sluice
