// Stage: one node of a pipeline as the runtime runs it (its node, shape, concurrency and
// metrics), and the work the runtime does at every stage boundary:
//  - before a stage's work, retire the requests that must not get more (cancelled: kCancelled;
//    past their deadline: kDeadlineExceeded, 504), stamp the rest into their traces and record
//    their queue wait (begin_stage);
//  - a stage with a latency budget (graph/stage_budget.h) decides per request whether to
//    degrade it (begin_stage records the choice in the trace; skipped requests are left out of
//    the batch the node sees, see without_skipped);
//  - after it, stamp the finish and record the service time (end_stage);
//  - an exception escaping a node fails the still-active requests of its batch (fail_active);
//  - where a batch leaves the graph, once it has reached all its leaves, answer with an error
//    every request the pipeline forgot (finish_at_leaf; on the leaf's thread, no extra hop).
// These run on every hop: the common case is inline and allocates nothing; completing a request
// is out of line. Internal to the runtime (graph/pipeline_flow.cc, graph/pipeline_build.cc).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/batch.h"
#include "graph/clock.h"
#include "graph/metrics.h"
#include "graph/node.h"
#include "graph/pipeline_lifecycle.h"
#include "graph/request.h"
#include "graph/stage_budget.h"

namespace sluice {

struct Stage {
  std::string name;
  std::uint16_t index = 0;      // the node's index in the spec, and its slot in the trace
  std::unique_ptr<Node> node;
  SyncNode* sync = nullptr;     // exactly one of sync and async is set
  AsyncNode* async = nullptr;
  std::size_t concurrency = 0;  // tbb::flow::unlimited (0) when the spec says 0
  bool leaf = false;            // no successors: its batches leave the graph after it
  std::string pipeline;         // the pipeline's name, for errors raised where batches leave
  std::string progress;         // {"stage": name}: the "progress" event streams get after it
  Histogram* queue_time = nullptr;
  Histogram* service_time = nullptr;
  Counter* failures = nullptr;
  std::unique_ptr<StageBudget> budget;  // null: the node declares no budget and no degradation
};

// The requests a stage works on; inline for small batches so a hop does not allocate.
class Serviced {
 public:
  void push_back(Request* r) {
    if (size_ < kInline) inline_[size_] = r;
    else overflow_.push_back(r);
    ++size_;
  }
  bool empty() const { return size_ == 0; }
  // Of them, how many the stage's budget degraded, and how many of those it skips.
  std::size_t degraded = 0;
  std::size_t skipped = 0;
  // Every serviced request skips the stage: the node has nothing to do.
  bool all_skipped() const { return skipped == size_; }
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < size_ && i < kInline; ++i) f(inline_[i]);
    for (Request* r : overflow_) f(r);
  }

 private:
  static constexpr std::size_t kInline = 4;
  std::size_t size_ = 0;
  std::array<Request*, kInline> inline_;
  std::vector<Request*> overflow_;
};

// Completes a cancelled or expired request with the matching error before `stage` (or "end").
void retire(Request& r, Nanos now, const std::string& stage);

// Completes a request that must not get more work: cancelled, or past its deadline. Returns
// whether it did.
inline bool retire_if_inactive(Request& r, Nanos now, const std::string& stage) {
  if (!r.cancelled() && !r.expired(now)) return false;
  retire(r, now, stage);
  return true;
}

// Fails every request of the batch not done yet: node `stage` threw `what`.
void fail_active(Batch& b, Nanos now, const std::string& stage, const std::string& what);

// Runs before a stage's work, in one pass over the batch: retires the requests that must not
// get more work, stamps the rest (the finish time follows in end_stage) and, when `count` (the
// first stage of a flow-graph node), counts them as in service. Returns them; empty means the
// stage has nothing to do.
inline Serviced begin_stage(PipelineLifecycle& lc, const Stage& st, Batch& b, Nanos ready_at, Nanos start, bool count) {
  Serviced serviced;
  for (auto& r : b.requests) {
    if (r->done() || retire_if_inactive(*r, start, st.name)) continue;
    st.queue_time->observe(nanos_to_seconds(start - ready_at));
    if (count) lc.of(*r).in_service.add(1);
    r->trace().start(st.index, ready_at, start, b.requests.size());
    serviced.push_back(r.get());
    if (st.budget) {
      if (const Degradation d = st.budget->decide(r->arrival, r->deadline, start); d != Degradation::kNone) {
        r->trace().degrade(st.index, d);
        st.budget->count_degraded();
        ++serviced.degraded;
        if (d == Degradation::kSkip) ++serviced.skipped;
      }
    }
  }
  return serviced;
}

// The batch the node works on when some requests skip it (serviced.skipped > 0 and not all):
// a batch of its own with the others (parallel branches may share `b`, so it is not edited)
// and b's id. The runtime hands `b` itself on afterwards.
BatchPtr without_skipped(const Batch& b, std::uint16_t stage);

inline void end_stage(const Stage& st, const Serviced& serviced, Nanos start, Nanos finish) {
  double service = nanos_to_seconds(finish - start);
  // The expected cost is that of full work: a batch with degraded requests would understate it.
  if (st.budget && serviced.degraded == 0 && !serviced.empty()) st.budget->observe(finish - start);
  serviced.for_each([&](Request* r) {
    r->trace().finish(st.index, finish);
    st.service_time->observe(service);
    // A stream hears which stages it has passed, so a client never faces a silent stream before
    // its first token (the HTTP sink writes an SSE comment, which clients ignore).
    if (r->input().stream && r->active()) r->emit_event("progress", st.progress);
  });
}

// A request is in service from the first stage of a flow-graph node to the end of its last.
inline void leave_service(PipelineLifecycle& lc, const Serviced& serviced) {
  serviced.for_each([&](Request* r) { lc.of(*r).in_service.add(-1); });
}

// Answers, with an internal error, each request of `b` not done yet (see finish_at_leaf).
void answer_forgotten(Batch& b, Clock& clock, const std::string& pipeline);

// Runs where a batch leaves the graph (after a leaf stage, on its thread). Once the batch has
// reached all its leaves every request must have been answered; anything else is a pipeline
// that forgot a request, answered here with an error.
inline void finish_at_leaf(Batch& b, Clock& clock, const std::string& pipeline) {
  if (b.pending_leaves.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  bool forgotten = false;
  for (const auto& r : b.requests) forgotten |= !r->done();
  if (forgotten) answer_forgotten(b, clock, pipeline);
}

}  // namespace sluice
