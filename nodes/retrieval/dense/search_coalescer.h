// SearchCoalescer: concurrent searches of one index merged into one batched call, for an index
// that answers a batch far more cheaply than its queries one by one (the GPU index: one launch
// reads the whole matrix whether it scores one query or sixty-four; facebookresearch/faiss#375).
//
// Contract:
// - search() returns exactly what the batch function returns for the caller's own queries,
//   truncated to the caller's k (results are best first, so the first k of a deeper search
//   are the k best).
// - One batch call runs at a time. A caller that finds no open group opens one and leads it:
//   it waits up to `window` for others to join (less when the group fills up to
//   `max_queries`), then for the previous call to end, and the group stays open to joiners
//   until the call starts. So under load a group gathers while the device is busy even with
//   `window` 0; `window` adds gathering when the device is idle, at that much latency.
// - Bounded: a group holds at most `max_queries` queries; a caller with more than that runs
//   alone, in batches of `max_queries`. Every caller blocks until its group's call ends, so
//   the waiting queries are at most the calling threads' own.
// - An exception from the batch function reaches every caller of that group.
// - Thread-safe; the batch function is never called concurrently with itself.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "graph/clock.h"
#include "graph/mutex.h"
#include "nodes/retrieval/scored.h"

namespace sluice::retrieval {

// Told of every batch call: its queries, its callers and its seconds (the dense node's
// metrics). A knowledge base keeps one for all its snapshots; a node attaches its function and
// detaches it when it goes, since the snapshots, and the coalescers in them, outlive the node
// and its metrics. Called on the calling thread, outside the coalescer's lock; the function
// must not throw.
class BatchObserver {
 public:
  using Fn = std::function<void(std::size_t queries, std::size_t callers, double seconds)>;
  BatchObserver() = default;
  void operator()(std::size_t queries, std::size_t callers, double seconds) const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (fn_) fn_(queries, callers, seconds);
  }
  // Replaces the function; returns its ticket for detach.
  std::uint64_t attach(Fn fn) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    fn_ = std::move(fn);
    return ++ticket_;
  }
  // Removes the function attached with `ticket`, unless another has been attached since.
  void detach(std::uint64_t ticket) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (ticket == ticket_) fn_ = nullptr;
  }

 private:
  mutable Mutex mu_;
  Fn fn_ GUARDED_BY(mu_);
  std::uint64_t ticket_ GUARDED_BY(mu_) = 0;
};

struct CoalescerOptions {
  CoalescerOptions() = default;
  CoalescerOptions(Nanos window_, std::size_t max_queries_) : window(window_), max_queries(max_queries_) {}
  Nanos window = 100 * kNanosPerMicro;  // docs/retrieval.md, "Exact search on the GPU"
  std::size_t max_queries = 64;
  std::shared_ptr<BatchObserver> observer;  // optional
};

class SearchCoalescer {
 public:
  using BatchSearch =
      std::function<std::vector<std::vector<ScoredDoc>>(const float* queries, std::size_t nq, std::size_t k)>;

  struct Stats {
    std::uint64_t calls = 0;     // search() calls
    std::uint64_t batches = 0;   // batch function calls
    std::uint64_t queries = 0;   // queries searched
    std::uint64_t largest = 0;   // most queries in one batch call
  };

  SearchCoalescer(std::size_t dimension, BatchSearch search, CoalescerOptions options);
  ~SearchCoalescer();

  std::vector<std::vector<ScoredDoc>> search(const float* queries, std::size_t nq, std::size_t k) EXCLUDES(mu_);
  Stats stats() const EXCLUDES(mu_);

 private:
  struct Group;
  std::vector<std::vector<ScoredDoc>> run_alone(const float* queries, std::size_t nq, std::size_t k) EXCLUDES(mu_);
  void report(std::size_t queries, std::size_t callers, std::chrono::steady_clock::time_point t0) const;

  const std::size_t dim_;
  const BatchSearch search_;
  const CoalescerOptions options_;
  mutable Mutex mu_;
  CondVar changed_;
  std::shared_ptr<Group> open_ GUARDED_BY(mu_);  // the group taking joiners, if any
  bool running_ GUARDED_BY(mu_) = false;         // a batch call is in progress
  Stats stats_ GUARDED_BY(mu_);
};

}  // namespace sluice::retrieval
