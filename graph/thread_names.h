// Thread names, so that per-thread tools (top -H, perf, /proc/PID/task/*/comm, the benches' CPU
// split by thread) tell Sluice's threads apart. Names are at most 15 bytes (the kernel's limit).
// What is called what: docs/operations.md, "Threads".
//
// The graph's workers are oneTBB's threads, which Sluice does not create: oneTBB starts them on
// first use and the kernel copies the creating thread's name, so in `sluice worker` they were
// all called "sluice-kafka-c" and their time read as the Kafka consumer's (docs/kafka.md, "What
// a job costs"). So the graph's node bodies name the thread that runs them (name_graph_worker).
// Not a oneTBB task_scheduler_observer: oneTBB 2021.8 can leave a deactivated observer's record
// behind when its arena goes (LeakSanitizer found 40 bytes a pipeline).
#pragma once

namespace sluice {

// Names the calling thread.
void name_this_thread(const char* name);

// Called first by every node body of the graph (graph/pipeline_flow.cc): the first time a thread
// runs one it is named "sluice-graph"; later calls cost a thread-local read. A thread inside a
// GraphVisit keeps its name.
void name_graph_worker();

// While it exists, the calling thread runs the graph's tasks only as a visitor: the thread that
// owns a pipeline waiting for its graph (FlowGraph::wait_for_all) may run some, and keeps its name.
class GraphVisit {
 public:
  GraphVisit();
  ~GraphVisit();
  GraphVisit(const GraphVisit&) = delete;
  GraphVisit& operator=(const GraphVisit&) = delete;
};

}  // namespace sluice
