// ServiceCurveHarness (`service_curve`): a BENCHMARK HARNESS, not a model.
//
// Serves each batch for time(b) = base_time * (1 + batch_cost * log2 b), where b is the
// number of still-active requests in it, then answers each of them with `text` (one token)
// and completes them. With the defaults eight requests in one batch cost 1.9x one request
// (the rule of thumb that batching on an accelerator is nearly free), so admission and
// batching can be measured against a known capacity without a model: capacity at batch b is
// slots * b / time(b) requests per second.
//
// Under a latency budget (`degrade: shrink`, graph/stage_budget.h) a shrunk request is answered
// after factor x time(b), the way a shorter generation leaves a continuous batch early; a batch
// of only shrunk requests takes factor x time(b), so shrinking frees the harness sooner.
//
// `slots` worker threads each serve one batch at a time; other batches wait in a FIFO inside
// the harness (like kernels queued on one accelerator stream). Time is real (the workers
// sleep); answers are stamped with the pipeline clock.
//
// Thread-safety: start_batch from any thread; stop() once, at shutdown, answers what is left
// with 503.
#pragma once

#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "graph/mutex.h"
#include "graph/node.h"
#include "graph/schema.h"
#include "graph/thread_annotations.h"

namespace sluice {

class ServiceCurveHarness final : public AsyncNode {
 public:
  ServiceCurveHarness(const ServiceCurveConfig& config, const NodeContext& ctx);
  ~ServiceCurveHarness() override;

  void start_batch(BatchPtr batch, Done done) override;
  void start() override;
  void stop() override;

  // time(b) of the curve.
  Nanos service_time(std::size_t batch_size) const;

 private:
  void serve();

  Clock* clock_;
  Nanos base_time_;
  double batch_cost_;
  std::uint32_t slots_;
  std::string text_;
  std::uint16_t stage_index_;  // where the trace says whether a request was shrunk
  double shrink_factor_;

  Mutex mu_;
  CondVar wake_;
  std::deque<std::pair<BatchPtr, Done>> fifo_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  // Started under mu_, joined by stop() outside it (the workers take mu_), so not annotated.
  std::vector<std::thread> workers_;
};

}  // namespace sluice
