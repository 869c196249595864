// IngestRunner: runs POST /v1/documents ingests off the event loops, one at a time.
//
// An ingest (chunking, embedding, index build, fsync) takes milliseconds to minutes, so it must
// never run on an event loop thread. try_run() hands the job to the runner's own thread and
// returns true, or returns false at once when an ingest is already running: the caller answers
// 429 with Retry-After: retry_after_seconds(). There is deliberately no waiting queue: the
// knowledge base serialises writes anyway, and a queued client would hold its connection with
// no feedback for as long as the ingests ahead of it take; a 429 lets it retry (or give up)
// on its own terms, and bounds the memory held by pending bodies to one.
//
// A job does the work and returns what to do once the runner is free again (answer the
// client): a client that sends its next ingest as soon as it has the answer to the previous
// one must never be refused. The thread starts with the first job. stop() waits for the running job (an ingest cannot be
// abandoned half-way without losing it), then joins; try_run() after stop() returns false.
// Optional metrics: `running` (0 or 1) and `seconds` (each job's duration).
// Thread-safety: try_run/busy/retry_after_seconds from any thread; stop from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <thread>

#include "graph/metrics.h"
#include "graph/mutex.h"
#include "graph/thread_annotations.h"

namespace sluice::http {

class IngestRunner {
 public:
  IngestRunner(Gauge* running = nullptr, Histogram* seconds = nullptr) : running_gauge_(running), seconds_(seconds) {}
  ~IngestRunner() { stop(); }
  IngestRunner(const IngestRunner&) = delete;
  IngestRunner& operator=(const IngestRunner&) = delete;

  // Returns the continuation run after the slot is released; may be empty. Must not throw.
  using Job = std::function<std::function<void()>()>;
  bool try_run(Job job) EXCLUDES(mu_);
  bool busy() const EXCLUDES(mu_);
  // Seconds a refused client should wait: the last ingest's duration rounded up, at least 1.
  std::uint32_t retry_after_seconds() const EXCLUDES(mu_);
  void stop() EXCLUDES(mu_);

 private:
  void loop() EXCLUDES(mu_);

  // Set at construction, read-only after (the metrics themselves are thread-safe).
  Gauge* running_gauge_;
  Histogram* seconds_;
  mutable Mutex mu_;
  CondVar cv_;
  Job job_ GUARDED_BY(mu_);  // the one accepted job (running or about to)
  bool stopping_ GUARDED_BY(mu_) = false;
  double last_seconds_ GUARDED_BY(mu_) = 0;
  std::thread thread_ GUARDED_BY(mu_);  // started by the first try_run; stop() moves it out to join
};

}  // namespace sluice::http
