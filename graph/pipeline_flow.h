// FlowGraph: the oneTBB side of a pipeline, made from its plan (graph/pipeline_plan.h): a
// broadcast entry per source, one flow-graph node per unit (a function_node running a chain of
// synchronous stages back to back, or an async_node for an asynchronous stage), a join in front
// of every fan-in (graph/flow_join.h), and the links between them. Leaves have no successors:
// their batches leave the graph where finish_at_leaf runs (graph/stage.h).
//
// The node bodies do, per hop, the stage-boundary work of graph/stage.h and call the node; they
// add no lock and no allocation for batches of up to four requests.
//
// Threads: the graph runs in an arena of its own, of `threads` slots (every core when 0), none
// of them reserved for an external thread, and the process's oneTBB parallelism is raised to
// that plus one. Why: batches enter from threads oneTBB does not own (the event loops, the
// serving engine's step thread, a connector's consumer), and the thread that built the graph
// then waits for a signal and never runs a task. In the default arena its slot is reserved
// and only threads - 1 workers run the graph; under a one-CPU affinity (a container with one
// core, `taskset -c 0`) that is none, and every request waited forever. The node bodies name
// the workers that run them "sluice-graph" (graph/thread_names.h).
//
// Lifetime: the stages, the clock and the lifecycle passed to build() must outlive the graph.
// The destructor waits for the graph to go idle before destroying its nodes.
#pragma once

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/thread_names.h"
#include "graph/clock.h"
#include "graph/flow_hop.h"
#include "graph/pipeline_lifecycle.h"
#include "graph/pipeline_plan.h"
#include "graph/stage.h"
#include "graph/tsan_annotations.h"

namespace sluice {

class FlowGraph {
 public:
  using Entry = tbb::flow::broadcast_node<Hop>;

  // `threads` (runtime.threads): the graph's worker threads; 0: oneTBB's default concurrency
  // (the cores this process may run on).
  explicit FlowGraph(int threads);
  ~FlowGraph();
  FlowGraph(const FlowGraph&) = delete;
  FlowGraph& operator=(const FlowGraph&) = delete;

  // Makes the oneTBB objects and edges of `plan`; `stages` are by node index. Called once.
  void build(const PipelinePlan& plan, const std::vector<std::unique_ptr<Stage>>& stages, Clock& clock,
             PipelineLifecycle& lifecycle);

  // Where batches from `source` enter (a source of the plan).
  Entry* entry(const std::string& source) const { return entries_.at(source); }
  // Returns when no task of the graph runs. Everything the tasks did then happens-before what
  // the caller does next (destroying the stages, the lifecycle, the metrics they wrote), which
  // TSan cannot see through oneTBB: each task body releases `quiescent_` as it ends and this
  // acquires it (graph/tsan_annotations.h; nothing outside TSan builds).
  void wait_for_all() {
    GraphVisit visit;  // this thread may run tasks while it waits: it keeps its name
    graph_->wait_for_all();
    SLUICE_HANDOFF_ACQUIRE(&quiescent_);
  }

 private:
  using Sender = tbb::flow::sender<Hop>;
  using Receiver = tbb::flow::receiver<Hop>;
  struct Ends {
    Receiver* input;
    Sender* output;
  };
  Ends add_chain(const std::vector<Stage*>& chain, Clock& clock, PipelineLifecycle& lifecycle);
  Ends add_async(Stage& stage, Clock& clock, PipelineLifecycle& lifecycle);

  std::unique_ptr<tbb::global_control> threads_;
  std::unique_ptr<tbb::task_arena> arena_;
  std::unique_ptr<tbb::flow::graph> graph_;  // made inside arena_, which it attaches to
  char quiescent_ = 0;  // an address for the end-of-task annotations only; never read
  std::vector<std::unique_ptr<tbb::flow::graph_node>> owned_;  // every oneTBB node, destroyed after the graph is idle
  std::map<std::string, Entry*> entries_;                      // by source name
};

}  // namespace sluice
