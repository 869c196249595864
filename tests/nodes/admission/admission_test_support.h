// Shared pieces of the admission tests: a sink that records events, a request factory and a
// NodeContext on a ManualClock.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/clock.h"
#include "graph/metrics.h"
#include "graph/node.h"
#include "graph/request.h"
#include "graph/schema.h"

namespace sluice::testing {

class EventSink : public ResponseSink {
 public:
  void on_token(std::string_view piece) override {
    std::lock_guard lock(mu);
    tokens.emplace_back(piece);
  }
  void on_event(std::string_view type, std::string_view json) override {
    std::lock_guard lock(mu);
    events.emplace_back(type);
  }
  void on_complete(const Request& r) override {
    std::lock_guard lock(mu);
    status = r.status();
    ++completions;
  }
  std::mutex mu;
  std::vector<std::string> tokens, events;
  Status status;
  int completions = 0;
};

// The shedding ladder's schema defaults, which a config built in code does not get from the
// loader.
inline void set_schema_shedding(ShedLadderConfig& sh) {
  sh.set_enabled(true);
  sh.set_utilisation(0.9);
  sh.set_recover_utilisation(0.75);
  sh.set_growth(0.2);
  sh.mutable_sustain()->set_seconds(2);
  sh.mutable_cooldown()->set_seconds(5);
  sh.mutable_max_backlog()->set_seconds(10);
  sh.mutable_evaluate_every()->set_nanos(250'000'000);
}

struct AdmissionFixture {
  ManualClock clock{100 * kNanosPerSecond};
  MetricsRegistry metrics;
  std::uint64_t next_id = 1;
  std::uint64_t next_batch = 1;

  NodeContext context(const std::string& name = "n") {
    NodeContext ctx;
    ctx.name = name;
    ctx.pipeline_name = "test";
    ctx.clock = &clock;
    ctx.metrics = &metrics;
    ctx.class_names = {"P0", "P1", "P2"};
    ctx.make_batch = [this] {
      auto b = std::make_shared<Batch>();
      b->id = next_batch++;
      return b;
    };
    ctx.install_admission = [](AdmissionController*) {};
    return ctx;
  }
  std::pair<RequestPtr, std::shared_ptr<EventSink>> request(int priority, bool stream = false, Nanos deadline = kNoDeadline) {
    auto sink = std::make_shared<EventSink>();
    RequestInput in;
    in.kind = RequestInput::Kind::kCompletion;
    in.prompt = "q";
    in.stream = stream;
    auto r = std::make_shared<Request>(next_id++, in, sink);
    r->priority = static_cast<std::uint8_t>(priority);
    r->arrival = clock.now();
    r->deadline = deadline;
    return {r, sink};
  }
  // A request whose prompt is `prompt_bytes` bytes long (for the token budget's estimate).
  RequestPtr request_with_prompt(int priority, std::size_t prompt_bytes) {
    auto r = request(priority).first;
    RequestInput in = r->input();
    in.prompt.assign(prompt_bytes, 'x');
    auto out = std::make_shared<Request>(r->id(), in, std::make_shared<EventSink>());
    out->priority = r->priority;
    out->arrival = r->arrival;
    return out;
  }
  static BatchPtr batch_of(const RequestPtr& r) {
    auto b = std::make_shared<Batch>();
    b->requests.push_back(r);
    return b;
  }
};

}  // namespace sluice::testing
