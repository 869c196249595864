// Thread names, so that per-thread tools (top -H, perf, /proc/PID/task/*/comm, the benches' CPU
// split by thread) tell Sluice's threads apart. Names are at most 15 bytes (the kernel's limit).
// What is called what: docs/operations.md, "Threads".
//
// ArenaThreadNames names oneTBB's worker threads after the arena they join. Without it a worker
// keeps the name of the thread that made it: oneTBB starts its workers on first use and the
// kernel copies the creating thread's name, so in `sluice worker` the graph's workers were all
// called "sluice-kafka-c" and their time read as the Kafka consumer's (docs/kafka.md, "What a
// job costs").
//
// Contract: while it exists, every worker that joins `arena` carries `name`; a thread that is not
// a oneTBB worker is never renamed by it. A worker that later runs in another arena keeps the
// name. Renaming is a system call, so a thread is renamed only when the name differs from the
// one this class last gave it.
#pragma once

#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_scheduler_observer.h>

namespace sluice {

// Names the calling thread.
void name_this_thread(const char* name);

class ArenaThreadNames : public tbb::task_scheduler_observer {
 public:
  // Starts observing; `name` must outlive this object (a string literal).
  ArenaThreadNames(tbb::task_arena& arena, const char* name);
  ~ArenaThreadNames() override;

  void on_scheduler_entry(bool is_worker) override;

 private:
  const char* name_;
};

}  // namespace sluice
