// Test support for graph tests: a recording sink and node kinds that exist only in tests.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "graph/clock.h"
#include "graph/metrics.h"
#include "graph/node_registry.h"
#include "graph/pipeline.h"
#include "graph/spec_validator.h"
#include "graph/request.h"
#include "nodes/builtin_nodes.h"

namespace sluice::testing {

// Records what a request's answer looked like; counts completions to prove exactly-once.
class RecordingSink : public ResponseSink {
 public:
  void on_token(std::string_view piece) override {
    std::lock_guard lock(mu);
    tokens.emplace_back(piece);
  }
  void on_complete(const Request& r) override {
    std::lock_guard lock(mu);
    status = r.status();
    ++completions;
    cv.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, [&] { return completions > 0; });
  }
  std::string text() {
    std::lock_guard lock(mu);
    std::string out;
    for (auto& t : tokens) out += t;
    return out;
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> tokens;
  Status status;
  int completions = 0;
};

// "mark": attaches "mark.<node name>" to each request. "answer_marks": answers with the
// sorted names of the marks it finds. "fail": throws. "hold": an async node that keeps
// batches until stop().
class MarkNode : public SyncNode {
 public:
  explicit MarkNode(std::string name) : name_(std::move(name)) {}
  void process(Batch& b) override {
    for (auto& r : b.requests) r->attach("mark." + name_, std::make_shared<std::string>(name_));
  }
  std::string name_;
};

class AnswerMarksNode : public SyncNode {
 public:
  explicit AnswerMarksNode(Clock* clock) : clock_(clock) {}
  void process(Batch& b) override {
    for (auto& r : b.requests) {
      if (!r->active()) continue;
      for (const char* m : {"a", "b", "c", "left", "right"}) {
        if (auto v = r->attachment<std::string>(std::string("mark.") + m)) r->emit_token(*v + ";", clock_->now());
      }
      r->complete(Status::Ok(), clock_->now());
    }
  }
  Clock* clock_;
};

class FailNode : public SyncNode {
 public:
  void process(Batch&) override { throw std::runtime_error("boom"); }
};

class HoldNode : public AsyncNode {
 public:
  void start_batch(BatchPtr batch, Done done) override {
    std::lock_guard lock(mu_);
    held_.emplace_back(std::move(batch), std::move(done));
    ++count_;
  }
  void stop() override {
    std::vector<std::pair<BatchPtr, Done>> held;
    {
      std::lock_guard lock(mu_);
      held.swap(held_);
    }
    for (auto& [b, d] : held) d(b);
  }
  static inline std::atomic<int> count_{0};

 private:
  std::mutex mu_;
  std::vector<std::pair<BatchPtr, Done>> held_;
};

inline NodeRegistry test_registry() {
  NodeRegistry reg;
  register_builtin_nodes(reg);
  reg.add(NodeKind{"mark", "test", {"request"}, {"mark"}, false,
                   [](const NodeSpec& s, const NodeContext&) { return std::make_unique<MarkNode>(s.name()); }});
  reg.add(NodeKind{"answer_marks", "test", {"request"}, {"answer"}, false,
                   [](const NodeSpec&, const NodeContext& c) { return std::make_unique<AnswerMarksNode>(c.clock); }});
  reg.add(NodeKind{"fail", "test", {"request"}, {}, false,
                   [](const NodeSpec&, const NodeContext&) { return std::make_unique<FailNode>(); }});
  reg.add(NodeKind{"hold", "test", {"request"}, {}, true,
                   [](const NodeSpec&, const NodeContext&) { return std::make_unique<HoldNode>(); }});
  reg.add(NodeKind{"needs_hits", "test", {"hits"}, {"answer"}, false,
                   [](const NodeSpec&, const NodeContext&) { return std::make_unique<FailNode>(); }});
  return reg;
}

// A pipeline built from `yaml` with the test kinds (test_registry) and started; make() gives a
// completion request and its recording sink, not yet submitted.
struct PipelineHarness {
  explicit PipelineHarness(const std::string& yaml, Clock* clock = &SteadyClock::instance()) : reg(test_registry()) {
    spec = load_and_validate_text(yaml, "t.yaml", reg);
    pipeline = Pipeline::build(spec, reg, {clock, &metrics});
    pipeline->start();
  }
  std::pair<RequestPtr, std::shared_ptr<RecordingSink>> make(const std::string& query = "q") {
    auto sink = std::make_shared<RecordingSink>();
    RequestInput in;
    in.kind = RequestInput::Kind::kCompletion;
    in.prompt = query;
    auto r = std::make_shared<Request>(pipeline->next_request_id(), in, sink);
    return {r, sink};
  }
  NodeRegistry reg;
  LoadedSpec spec;
  MetricsRegistry metrics;
  std::unique_ptr<Pipeline> pipeline;
};

}  // namespace sluice::testing
